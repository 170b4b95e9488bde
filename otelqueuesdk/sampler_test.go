package otelqueuesdk_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
)

// spanContext returns testutil.RemoteSpanContext(n, sampled) with trace
// state ts ("" for none).
func spanContext(t testing.TB, n byte, sampled bool, ts string) trace.SpanContext {
	t.Helper()
	sc := testutil.RemoteSpanContext(n, sampled)
	if ts != "" {
		state, err := trace.ParseTraceState(ts)
		if err != nil {
			t.Fatal(err)
		}
		sc = sc.WithTraceState(state)
	}
	return sc
}

func links(scs ...trace.SpanContext) []trace.Link {
	var ls []trace.Link
	for _, sc := range scs {
		ls = append(ls, trace.Link{SpanContext: sc})
	}
	return ls
}

func TestLinkSampledDescription(t *testing.T) {
	if got, want := otelqueuesdk.LinkSampled(nil).Description(),
		"LinkSampled{"+sdktrace.ParentBased(sdktrace.AlwaysSample()).Description()+"}"; got != want {
		t.Errorf("LinkSampled(nil).Description() = %q, want %q", got, want)
	}
	if got := otelqueuesdk.LinkSampled(sdktrace.NeverSample()).Description(); got != "LinkSampled{AlwaysOffSampler}" {
		t.Errorf("Description() = %q", got)
	}
}

// TestLinkSampledShouldSample checks the decisions: a root with any sampled
// link is sampled (with that link's trace state); a root without one, and
// every span with a parent, is decided by the base sampler.
func TestLinkSampledShouldSample(t *testing.T) {
	sampled := spanContext(t, 1, true, "vendor=x")
	unsampled := spanContext(t, 2, false, "")
	withParent := func(sc trace.SpanContext) context.Context {
		return trace.ContextWithRemoteSpanContext(context.Background(), sc)
	}
	never, always := sdktrace.NeverSample(), sdktrace.AlwaysSample()
	for _, tc := range []struct {
		name      string
		base      sdktrace.Sampler
		parent    context.Context
		links     []trace.Link
		want      sdktrace.SamplingDecision
		wantState string
	}{
		{"root without links: base drops", never, context.Background(), nil, sdktrace.Drop, ""},
		{"root without links: base samples", always, context.Background(), nil, sdktrace.RecordAndSample, ""},
		{"root with an unsampled link: base", never, context.Background(), links(unsampled), sdktrace.Drop, ""},
		{"root with a sampled link", never, context.Background(), links(sampled), sdktrace.RecordAndSample, "vendor=x"},
		{"root with a sampled link among others", never, context.Background(), links(unsampled, sampled, unsampled), sdktrace.RecordAndSample, "vendor=x"},
		{"unsampled parent, sampled link: base", never, withParent(unsampled), links(sampled), sdktrace.Drop, ""},
		{"unsampled parent, sampled link: parent-based base", sdktrace.ParentBased(always), withParent(unsampled), links(sampled), sdktrace.Drop, ""},
		{"sampled parent: base", never, withParent(sampled), nil, sdktrace.Drop, "vendor=x"},
		{"sampled parent: parent-based base", sdktrace.ParentBased(never), withParent(sampled), nil, sdktrace.RecordAndSample, "vendor=x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := otelqueuesdk.LinkSampled(tc.base).ShouldSample(sdktrace.SamplingParameters{
				ParentContext: tc.parent,
				TraceID:       trace.TraceID{0xcc},
				Name:          "process orders",
				Kind:          trace.SpanKindConsumer,
				Links:         tc.links,
			})
			if res.Decision != tc.want {
				t.Errorf("decision %v, want %v", res.Decision, tc.want)
			}
			if got := res.Tracestate.String(); got != tc.wantState {
				t.Errorf("trace state %q, want %q", got, tc.wantState)
			}
		})
	}
}

// TestLinkSampledDefaultBase checks that LinkSampled(nil) behaves as
// ParentBased(AlwaysSample): roots and children of sampled parents are
// sampled, children of unsampled parents are not.
func TestLinkSampledDefaultBase(t *testing.T) {
	s := otelqueuesdk.LinkSampled(nil)
	for _, tc := range []struct {
		parent context.Context
		want   sdktrace.SamplingDecision
	}{
		{context.Background(), sdktrace.RecordAndSample},
		{trace.ContextWithRemoteSpanContext(context.Background(), spanContext(t, 1, true, "")), sdktrace.RecordAndSample},
		{trace.ContextWithRemoteSpanContext(context.Background(), spanContext(t, 2, false, "")), sdktrace.Drop},
	} {
		if got := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: tc.parent}).Decision; got != tc.want {
			t.Errorf("decision %v, want %v", got, tc.want)
		}
	}
}

// TestLinkSampledQueue runs LinkSampled in a TracerProvider that samples
// nothing by itself (base ParentBased(NeverSample)) under an instrumented
// scheduler: the attempt of a key enqueued from a sampled trace is kept whole
// (root, queued, reconcile), the others are dropped.
func TestLinkSampledQueue(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(otelqueuesdk.LinkSampled(sdktrace.ParentBased(sdktrace.NeverSample()))),
		sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	q := scheduler.New(scheduler.Config[string]{Name: "orders", Clock: testingclock.NewFakeClock(time.Unix(1e9, 0))})
	t.Cleanup(q.ShutDown)
	if _, err := otelqueue.Instrument(q, otelqueue.WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}

	sampled := spanContext(t, 1, true, "")
	q.AddContext(trace.ContextWithRemoteSpanContext(context.Background(), sampled), "kept")
	q.AddContext(trace.ContextWithRemoteSpanContext(context.Background(), spanContext(t, 2, false, "")), "unsampled enqueuer")
	q.Add("no enqueuer")
	for range 3 {
		k, _ := q.Get()
		q.Done(k)
	}

	spans := sr.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans recorded, want the 3 of the kept attempt", len(spans))
	}
	var root trace.SpanContext
	for _, s := range spans {
		if s.Name() == "process orders" {
			root = s.SpanContext()
			if len(s.Links()) != 1 || !s.Links()[0].SpanContext.Equal(sampled) {
				t.Errorf("kept root links %+v, want the sampled enqueuer", s.Links())
			}
		}
	}
	for _, s := range spans {
		if s.SpanContext().TraceID() != root.TraceID() || !s.SpanContext().IsSampled() {
			t.Errorf("span %q is not a sampled span of the kept attempt", s.Name())
		}
	}
}
