package otelqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

const rootName = "process " + queueName

var (
	linkEnqueue  = []attribute.KeyValue{semconv.AttrLinkKind.String("enqueue")}
	linkPrevious = []attribute.KeyValue{semconv.AttrLinkKind.String("previous_attempt")}
)

// assertAttrs checks that kvs holds exactly want, in any order.
func assertAttrs(t testing.TB, what string, kvs []attribute.KeyValue, want ...attribute.KeyValue) {
	t.Helper()
	got, exp := attribute.NewSet(kvs...), attribute.NewSet(want...)
	if !got.Equals(&exp) {
		t.Errorf("%s attributes = %v\nwant %v", what, got.Encoded(attribute.DefaultEncoder()), exp.Encoded(attribute.DefaultEncoder()))
	}
}

// assertTimes checks a span's start and end times.
func assertTimes(t testing.TB, s sdktrace.ReadOnlySpan, start, end time.Time) {
	t.Helper()
	if !s.StartTime().Equal(start) || !s.EndTime().Equal(end) {
		t.Errorf("span %q runs [%v, %v], want [%v, %v]", s.Name(),
			s.StartTime().Sub(t0), s.EndTime().Sub(t0), start.Sub(t0), end.Sub(t0))
	}
}

// assertLinks checks a span's links: span contexts and attributes, in order.
func assertLinks(t testing.TB, s sdktrace.ReadOnlySpan, want ...sdktrace.Link) {
	t.Helper()
	got := s.Links()
	if len(got) != len(want) {
		t.Fatalf("span %q has %d links, want %d: %+v", s.Name(), len(got), len(want), got)
	}
	for i := range want {
		if !got[i].SpanContext.Equal(want[i].SpanContext) {
			t.Errorf("span %q link %d points to %v/%v, want %v/%v", s.Name(), i,
				got[i].SpanContext.TraceID(), got[i].SpanContext.SpanID(), want[i].SpanContext.TraceID(), want[i].SpanContext.SpanID())
		}
		assertAttrs(t, fmt.Sprintf("span %q link %d", s.Name(), i), got[i].Attributes, want[i].Attributes...)
	}
	if d := s.DroppedLinks(); d != 0 {
		t.Errorf("the SDK dropped %d links of %q", d, s.Name())
	}
}

// assertTree checks that every recorded span whose parent was recorded too
// is in its parent's trace and starts no earlier than its parent (Jaeger
// reports that as clock skew). Ends are not checked: a root parented by its
// enqueuer (WithEnqueuerAsParent) rightly ends after it; the exact times of
// the attempt's own spans are checked by assertTimes.
func assertTree(t testing.TB, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	byID := make(map[trace.SpanID]sdktrace.ReadOnlySpan, len(spans))
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	for _, s := range spans {
		p, ok := byID[s.Parent().SpanID()]
		if !ok || !s.Parent().IsValid() {
			continue
		}
		if s.SpanContext().TraceID() != p.SpanContext().TraceID() {
			t.Errorf("span %q is not in the trace of its parent %q", s.Name(), p.Name())
		}
		if s.StartTime().Before(p.StartTime()) {
			t.Errorf("span %q starts %v before its parent %q", s.Name(), p.StartTime().Sub(s.StartTime()), p.Name())
		}
	}
}

// TestTraceShape checks the trace of one attempt: a root "process orders"
// that links to the enqueuer, with the children "queued" [enqueue, dequeue]
// and "reconcile" [dequeue, Done], the user's span a child of "reconcile",
// every timestamp from the fake clock.
func TestTraceShape(t *testing.T) {
	e := newEnv(t, envConfig{})
	enq, enqSC := e.enqueuer(t, "handler")
	e.q.AddContext(enq, "a") // t=0
	e.step(3 * time.Second)
	it := e.getKey(t, "a")
	if !it.EnqueuedAt.Equal(t0) || !it.ReadyAt.Equal(t0) || !it.DequeuedAt.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("item times %v %v %v", it.EnqueuedAt, it.ReadyAt, it.DequeuedAt)
	}
	_, user := e.tp.Tracer("test/reconciler").Start(it.Context(), "user work", trace.WithTimestamp(e.clock.Now()))
	e.step(time.Second)
	user.End(trace.WithTimestamp(e.clock.Now()))
	e.step(time.Second)
	e.q.Done("a")

	spans := e.sr.Ended()
	if len(spans) != 5 {
		t.Fatalf("spans %v, want handler, queued, user work, reconcile, process orders", testutil.SpanNames(spans))
	}
	root, queued, reconcile := attemptSpans(t, spans, "a", 1)
	userSpan := testutil.OneSpan(t, spans, "user work")
	assertTree(t, spans)

	// The root: a new trace, linked to the enqueuer.
	if root.Name() != rootName || root.Parent().IsValid() {
		t.Errorf("root %q has parent %v; want %q, a new root", root.Name(), root.Parent(), rootName)
	}
	if root.SpanContext().TraceID() == enqSC.TraceID() {
		t.Error("the attempt is in the enqueuer's trace")
	}
	if root.SpanKind() != trace.SpanKindConsumer || queued.SpanKind() != trace.SpanKindInternal || reconcile.SpanKind() != trace.SpanKindInternal {
		t.Errorf("kinds: root %v, queued %v, reconcile %v", root.SpanKind(), queued.SpanKind(), reconcile.SpanKind())
	}
	if sc := root.InstrumentationScope(); sc.Name != semconv.ScopeOtelqueue || sc.Version != otelqueue.Version {
		t.Errorf("scope %+v", sc)
	}
	assertLinks(t, root, sdktrace.Link{SpanContext: enqSC, Attributes: linkEnqueue})
	assertAttrs(t, "root", root.Attributes(),
		semconv.AttrQueueName.String(queueName),
		semconv.AttrKey.String("a"),
		semconv.AttrAttempt.Int(1),
		semconv.AttrTrigger.String("add"),
		semconv.AttrWaitReason.String("immediate"),
		semconv.AttrCoalesced.Int(0),
	)
	assertAttrs(t, "queued", queued.Attributes(), semconv.AttrWaitReason.String("immediate"))
	assertAttrs(t, "reconcile", reconcile.Attributes(),
		semconv.AttrQueueName.String(queueName), semconv.AttrKey.String("a"), semconv.AttrAttempt.Int(1),
		semconv.AttrTrigger.String("add"))
	if ev := queued.Events(); len(ev) != 0 {
		t.Errorf("queued events %v: an immediate add has no ready event", ev)
	}

	// All in one trace, with the fake clock's times.
	for _, s := range []sdktrace.ReadOnlySpan{queued, reconcile, userSpan} {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %q is not in the attempt's trace", s.Name())
		}
	}
	if userSpan.Parent().SpanID() != reconcile.SpanContext().SpanID() {
		t.Errorf("the user's span is a child of %v, want the reconcile span %v", userSpan.Parent().SpanID(), reconcile.SpanContext().SpanID())
	}
	assertTimes(t, root, t0, t0.Add(5*time.Second))
	assertTimes(t, queued, t0, t0.Add(3*time.Second))
	assertTimes(t, reconcile, t0.Add(3*time.Second), t0.Add(5*time.Second))
	for _, s := range []sdktrace.ReadOnlySpan{root, queued, reconcile} {
		if s.Status().Code != codes.Unset {
			t.Errorf("span %q status %v, want Unset", s.Name(), s.Status())
		}
	}
}

// TestTraceWaitReasons checks, for every way a key can wait, the queued
// span's extent [EnqueuedAt, DequeuedAt], its "ready" event at ReadyAt, the
// wait_reason and attempt attributes, and that the queue-wait histogram
// records DequeuedAt - ReadyAt.
func TestTraceWaitReasons(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		attempt int
		// run adds "a" at t=0 and brings the clock to the dequeue.
		run                       func(t *testing.T, e *env)
		enqueued, ready, dequeued time.Duration
		debounce                  time.Duration
		crOrder                   bool // scheduler.Config.OrderByAdd
		// wantWait is the sum of the queue-wait histogram: DequeuedAt -
		// ReadyAt, client-go's meaning, not the queued span's length.
		wantWait float64
	}{
		{reason: "immediate", attempt: 1, run: func(t *testing.T, e *env) {
			e.q.Add("a")
			e.step(2 * time.Second)
		}, enqueued: 0, ready: 0, dequeued: 2 * time.Second, wantWait: 2},
		{reason: "delayed", attempt: 1, run: func(t *testing.T, e *env) {
			e.q.AddAfter("a", 2*time.Second)
			e.step(3 * time.Second)
		}, enqueued: 0, ready: 2 * time.Second, dequeued: 3 * time.Second, wantWait: 1},
		{reason: "rate_limited", attempt: 2, run: func(t *testing.T, e *env) {
			e.q.AddRateLimited("a") // first failure: 1s backoff; Requeues 1, so attempt 2
			e.step(1500 * time.Millisecond)
		}, enqueued: 0, ready: time.Second, dequeued: 1500 * time.Millisecond, wantWait: 0.5},
		{reason: "debounced", attempt: 1, debounce: time.Second, run: func(t *testing.T, e *env) {
			e.q.Add("a")
			e.step(500 * time.Millisecond)
			e.q.Add("a") // pushes the run to t=1.5s
			e.step(2 * time.Second)
		}, enqueued: 0, ready: 1500 * time.Millisecond, dequeued: 2500 * time.Millisecond, wantWait: 1},
		{reason: "held", attempt: 1, run: func(t *testing.T, e *env) {
			e.q.Add("a")
			e.getKey(t, "a") // a first run, at t=0 (waited 0s)
			e.step(time.Second)
			e.q.Add("a") // t=1s: held while the first run is in flight
			e.step(time.Second)
			e.q.Done("a") // t=2s: the held run becomes ready
			e.sr.Reset()
			e.step(time.Second)
		}, enqueued: time.Second, ready: 2 * time.Second, dequeued: 3 * time.Second, wantWait: 1},
		// controller-runtime's order: in line (and counted) from its add,
		// the same span.
		{reason: "held", attempt: 1, crOrder: true, run: func(t *testing.T, e *env) {
			e.q.Add("a")
			e.getKey(t, "a")
			e.step(time.Second)
			e.q.Add("a") // t=1s: in line, not handed out while the first run is in flight
			if n := e.q.Len(); n != 1 {
				t.Errorf("Len() = %d with a in line, want 1", n)
			}
			e.step(time.Second)
			e.q.Done("a") // t=2s: it can be handed out
			e.sr.Reset()
			e.step(time.Second)
		}, enqueued: time.Second, ready: 2 * time.Second, dequeued: 3 * time.Second, wantWait: 1},
	} {
		t.Run(fmt.Sprint(tc.reason, map[bool]string{true: " (controller-runtime order)"}[tc.crOrder]), func(t *testing.T) {
			e := newEnv(t, envConfig{sched: scheduler.Config[string]{Debounce: tc.debounce, OrderByAdd: tc.crOrder}})
			tc.run(t, e)
			e.getKey(t, "a")
			e.q.Done("a")
			spans := e.sr.Ended()
			root, queued, _ := attemptSpans(t, spans, "a", tc.attempt)
			assertTree(t, spans)
			assertTimes(t, queued, t0.Add(tc.enqueued), t0.Add(tc.dequeued))
			if got := attrMap(root.Attributes())[semconv.AttrWaitReason].AsString(); got != tc.reason {
				t.Errorf("root wait_reason %q, want %q", got, tc.reason)
			}
			// The add that set the ready time: a requeue's, a backoff's, or
			// a plain add's.
			trigger := map[string]string{"delayed": "requeue_after", "rate_limited": "backoff"}[tc.reason]
			if trigger == "" {
				trigger = "add"
			}
			if got := attrMap(root.Attributes())[semconv.AttrTrigger].AsString(); got != trigger {
				t.Errorf("root trigger %q, want %q", got, trigger)
			}
			assertAttrs(t, "queued", queued.Attributes(), semconv.AttrWaitReason.String(tc.reason))
			ev := queued.Events()
			if tc.ready == tc.enqueued {
				if len(ev) != 0 {
					t.Errorf("queued events %v, want none", ev)
				}
			} else if len(ev) != 1 || ev[0].Name != "ready" || !ev[0].Time.Equal(t0.Add(tc.ready)) {
				t.Errorf("queued events %+v, want one \"ready\" at %v", ev, tc.ready)
			}
			if got := histogramPoint(t, findMetric(t, e.collect(t), semconv.MetricQueueDuration)).Sum; got != tc.wantWait {
				t.Errorf("queue wait recorded %v s, want %v s", got, tc.wantWait)
			}
		})
	}
}

// TestTraceCoalescedLinks checks the links of a key added many times before
// it ran: the first enqueue context and the next ones up to MaxLinks, in
// order, each marked workqueue.link=enqueue; the others counted in
// workqueue.links.dropped; duplicates and adds without a span context not
// linked but counted as coalesced. MaxLinks 2, the default and 12 (more
// links than the pooled buffer holds); a second key with one link after
// each, so that links never leak from one attempt to the next.
func TestTraceCoalescedLinks(t *testing.T) {
	for _, maxLinks := range []int{2, 0, 12} {
		t.Run(fmt.Sprint("MaxLinks=", maxLinks), func(t *testing.T) {
			e := newEnv(t, envConfig{sched: scheduler.Config[string]{MaxLinks: maxLinks}})
			keep := maxLinks
			if keep == 0 {
				keep = schedhooks.DefaultMaxLinks
			}
			var enq []trace.SpanContext
			for i := range keep + 3 {
				ctx, sc := e.enqueuer(t, fmt.Sprintf("handler %d", i))
				enq = append(enq, sc)
				e.q.AddContext(ctx, "a")
			}
			e.q.Add("a")
			e.q.AddContext(trace.ContextWithSpanContext(context.Background(), enq[0]), "a") // the same enqueuer again
			e.getKey(t, "a")
			e.q.Done("a")
			ctx, single := e.enqueuer(t, "single")
			e.q.AddContext(ctx, "b")
			e.getKey(t, "b")
			e.q.Done("b")

			root, _, _ := attemptSpans(t, e.sr.Ended(), "a", 1)
			var want []sdktrace.Link
			for _, sc := range enq[:keep] {
				want = append(want, sdktrace.Link{SpanContext: sc, Attributes: linkEnqueue})
			}
			assertLinks(t, root, want...)
			a := attrMap(root.Attributes())
			if got := a[semconv.AttrDroppedLinks].AsInt64(); got != 3 {
				t.Errorf("workqueue.links.dropped = %d, want 3", got)
			}
			if got, want := a[semconv.AttrCoalesced].AsInt64(), int64(keep+4); got != want {
				t.Errorf("workqueue.coalesced = %d, want %d", got, want)
			}
			rootB, _, _ := attemptSpans(t, e.sr.Ended(), "b", 1)
			assertLinks(t, rootB, sdktrace.Link{SpanContext: single, Attributes: linkEnqueue})
		})
	}
}

// TestTraceRetryLinksPreviousAttempt runs a reconcile that fails once: the
// first attempt's reconcile span has status Error, an exception event and
// result=error; the retry is a new trace that links to the failed attempt
// with workqueue.link=previous_attempt, has attempt 2 and waited rate_limited.
func TestTraceRetryLinksPreviousAttempt(t *testing.T) {
	e := newEnv(t, envConfig{})
	var calls atomic.Int32
	r, err := newRunner(e.q, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
		if calls.Add(1) == 1 {
			return otelqueue.Result{}, errors.New("boom")
		}
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	enq, enqSC := e.enqueuer(t, "handler")
	e.q.AddContext(enq, "a")
	stop := runRunner(t, r)
	testutil.WaitFor(t, "the failed attempt's Done", func() bool { return r.Stats().Count(otelqueue.OutcomeError) == 1 && e.q.Stats().InFlight == 0 })
	e.step(time.Second) // the backoff
	testutil.WaitFor(t, "the retry's Done", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 1 && e.q.Stats().InFlight == 0 })
	stop()

	spans := e.sr.Ended()
	assertTree(t, spans)
	root1, _, reconcile1 := attemptSpans(t, spans, "a", 1)
	root2, queued2, reconcile2 := attemptSpans(t, spans, "a", 2)

	assertLinks(t, root1, sdktrace.Link{SpanContext: enqSC, Attributes: linkEnqueue})
	if st := reconcile1.Status(); st.Code != codes.Error || st.Description != "boom" {
		t.Errorf("failed reconcile status %+v, want Error \"boom\"", st)
	}
	assertException(t, reconcile1, "boom", false)
	if got := attrMap(reconcile1.Attributes())[semconv.AttrResult].AsString(); got != otelqueue.OutcomeError.String() {
		t.Errorf("failed reconcile result %q", got)
	}

	if root2.SpanContext().TraceID() == root1.SpanContext().TraceID() {
		t.Error("the retry is in the failed attempt's trace; want a new trace that links to it")
	}
	// The retry links to the attempt that asked for it: its reconcile span,
	// in whose context AddRateLimited was called.
	assertLinks(t, root2, sdktrace.Link{SpanContext: reconcile1.SpanContext(), Attributes: linkPrevious})
	a := attrMap(root2.Attributes())
	if a[semconv.AttrAttempt].AsInt64() != 2 || a[semconv.AttrWaitReason].AsString() != "rate_limited" {
		t.Errorf("retry root attributes %v", root2.Attributes())
	}
	assertTimes(t, queued2, t0, t0.Add(time.Second))
	if st := reconcile2.Status(); st.Code != codes.Unset {
		t.Errorf("successful reconcile status %+v", st)
	}
	if got := attrMap(reconcile2.Attributes())[semconv.AttrResult].AsString(); got != otelqueue.OutcomeSuccess.String() {
		t.Errorf("successful reconcile result %q", got)
	}
}

// assertException checks that span s recorded exactly one exception event
// whose message contains msg, with a stack trace when stack is set.
func assertException(t testing.TB, s sdktrace.ReadOnlySpan, msg string, stack bool) {
	t.Helper()
	var ex []sdktrace.Event
	for _, ev := range s.Events() {
		if ev.Name == "exception" {
			ex = append(ex, ev)
		}
	}
	if len(ex) != 1 {
		t.Fatalf("span %q has %d exception events, want 1: %+v", s.Name(), len(ex), s.Events())
	}
	a := attrMap(ex[0].Attributes)
	if got := a["exception.message"].AsString(); !strings.Contains(got, msg) {
		t.Errorf("exception.message %q does not contain %q", got, msg)
	}
	if st := a["exception.stacktrace"].AsString(); stack != (st != "") {
		t.Errorf("exception.stacktrace %q; want one: %v", st, stack)
	} else if stack && !strings.Contains(st, "TestTracePanic") {
		t.Errorf("exception.stacktrace does not show the panicking reconcile:\n%s", st)
	}
}

// runRunner runs r until the returned stop function is called; stop waits
// for Run to return nil.
func runRunner[K comparable](t testing.TB, r *otelqueue.Runner[K]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once atomic.Bool
	stop = func() {
		t.Helper()
		if once.Swap(true) {
			return
		}
		cancel()
		if err := testutil.Receive(t, done, "Run to return"); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestTracePanic checks a reconcile that panics: the reconcile span has
// status Error, one exception event with the panic and its stack, and
// result=panic.
func TestTracePanic(t *testing.T) {
	e := newEnv(t, envConfig{})
	var calls atomic.Int32
	r, err := newRunner(e.q, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
		if calls.Add(1) == 1 {
			panic("kaboom")
		}
		return otelqueue.Result{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.q.Add("a")
	stop := runRunner(t, r)
	testutil.WaitFor(t, "the panicking attempt's Done", func() bool { return r.Stats().Count(otelqueue.OutcomePanic) == 1 && e.q.Stats().InFlight == 0 })
	e.step(time.Second)
	testutil.WaitFor(t, "the retry's Done", func() bool { return r.Stats().Count(otelqueue.OutcomeSuccess) == 1 && e.q.Stats().InFlight == 0 })
	stop()

	spans := e.sr.Ended()
	_, _, reconcile1 := attemptSpans(t, spans, "a", 1)
	root2, _, _ := attemptSpans(t, spans, "a", 2)
	st := reconcile1.Status()
	if st.Code != codes.Error || !strings.Contains(st.Description, "panicked: kaboom") {
		t.Errorf("panicked reconcile status %+v, want Error with the panic", st)
	}
	assertException(t, reconcile1, "kaboom", true)
	if got := attrMap(reconcile1.Attributes())[semconv.AttrResult].AsString(); got != otelqueue.OutcomePanic.String() {
		t.Errorf("panicked reconcile result %q", got)
	}
	assertLinks(t, root2, sdktrace.Link{SpanContext: reconcile1.SpanContext(), Attributes: linkPrevious})
}

// TestTraceEnqueuerAsParent checks WithEnqueuerAsParent: the attempt's root is
// a child of the first enqueuer, in its trace, and links only to the other
// enqueuers; a key enqueued without a span context still starts a new root.
func TestTraceEnqueuerAsParent(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithEnqueuerAsParent()}})
	enq1, sc1 := e.enqueuer(t, "handler 1")
	enq2, sc2 := e.enqueuer(t, "handler 2")
	e.q.AddContext(enq1, "a")
	e.q.AddContext(enq2, "a")
	e.q.Add("b")
	e.step(time.Second)
	e.getKey(t, "a")
	e.getKey(t, "b")
	e.step(time.Second)
	e.q.Done("a")
	e.q.Done("b")

	spans := e.sr.Ended()
	assertTree(t, spans)
	rootA, queuedA, reconcileA := attemptSpans(t, spans, "a", 1)
	if p := rootA.Parent(); p.TraceID() != sc1.TraceID() || p.SpanID() != sc1.SpanID() {
		t.Errorf("root of a has parent %v/%v, want the first enqueuer %v/%v", p.TraceID(), p.SpanID(), sc1.TraceID(), sc1.SpanID())
	}
	for _, s := range []sdktrace.ReadOnlySpan{rootA, queuedA, reconcileA} {
		if s.SpanContext().TraceID() != sc1.TraceID() {
			t.Errorf("span %q is not in the first enqueuer's trace", s.Name())
		}
	}
	assertLinks(t, rootA, sdktrace.Link{SpanContext: sc2, Attributes: linkEnqueue})

	rootB, _, _ := attemptSpans(t, spans, "b", 1)
	if rootB.Parent().IsValid() {
		t.Errorf("root of b (no enqueuer) has parent %v, want a new root", rootB.Parent())
	}
}

// TestTraceWorkerContextIsNotParent checks that the context a worker passes
// to GetContext does not parent the attempt: a worker's long-lived span must
// not swallow every item's trace.
func TestTraceWorkerContextIsNotParent(t *testing.T) {
	e := newEnv(t, envConfig{})
	worker, workerSC := e.enqueuer(t, "worker")
	e.q.Add("a")
	it, err := e.q.GetContext(worker)
	if err != nil {
		t.Fatal(err)
	}
	e.q.Done(it.Key)
	root, _, _ := attemptSpans(t, e.sr.Ended(), "a", 1)
	if root.Parent().IsValid() || root.SpanContext().TraceID() == workerSC.TraceID() {
		t.Errorf("the attempt's root has parent %v in trace %v; want a new root", root.Parent(), root.SpanContext().TraceID())
	}
}

// TestTraceClientGoLoop drives the scheduler only through client-go's
// workqueue interface (Add, Get, Done, AddRateLimited, no context), as an
// unmodified client-go controller does: the spans and the histograms, with
// exemplars, are there all the same.
func TestTraceClientGoLoop(t *testing.T) {
	e := newEnv(t, envConfig{})
	var wq workqueue.TypedRateLimitingInterface[string] = e.q

	wq.Add("a")
	e.step(2 * time.Second)
	key, shutdown := wq.Get()
	if key != "a" || shutdown {
		t.Fatalf("Get = %q, %v", key, shutdown)
	}
	e.step(time.Second)
	wq.AddRateLimited(key) // as a controller does on error
	wq.Done(key)
	e.step(time.Second)
	key, _ = wq.Get()
	wq.Forget(key)
	wq.Done(key)

	spans := e.sr.Ended()
	assertTree(t, spans)
	root1, queued1, reconcile1 := attemptSpans(t, spans, "a", 1)
	root2, _, _ := attemptSpans(t, spans, "a", 2)
	assertTimes(t, root1, t0, t0.Add(3*time.Second))
	assertTimes(t, queued1, t0, t0.Add(2*time.Second))
	assertTimes(t, reconcile1, t0.Add(2*time.Second), t0.Add(3*time.Second))
	assertLinks(t, root1)
	assertLinks(t, root2, sdktrace.Link{SpanContext: reconcile1.SpanContext(), Attributes: linkPrevious})
	if len(spans) != 6 {
		t.Errorf("spans %v, want two attempts of three", testutil.SpanNames(spans))
	}

	rm := e.collect(t)
	qd := histogramPoint(t, findMetric(t, rm, semconv.MetricQueueDuration))
	wd := histogramPoint(t, findMetric(t, rm, semconv.MetricWorkDuration))
	if qd.Count != 2 || qd.Sum != 2 || wd.Count != 2 || wd.Sum != 1 {
		t.Errorf("queue wait count %d sum %v, work count %d sum %v; want 2, 2, 2, 1", qd.Count, qd.Sum, wd.Count, wd.Sum)
	}
	i := slices.IndexFunc(qd.Exemplars, func(ex metricdata.Exemplar[float64]) bool { return ex.Value == 2 })
	if i < 0 {
		t.Fatalf("no exemplar for the 2s wait: %+v", qd.Exemplars)
	}
	if tid := queued1.SpanContext().TraceID(); string(qd.Exemplars[i].TraceID) != string(tid[:]) {
		t.Errorf("the 2s wait's exemplar is in trace %x, want %v", qd.Exemplars[i].TraceID, tid)
	}
}

// countingSampler counts the sampling decisions it is asked for.
type countingSampler struct {
	sdktrace.Sampler
	n atomic.Int64
}

func (s *countingSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.n.Add(1)
	return s.Sampler.ShouldSample(p)
}

// TestTraceUnsampledAttemptStartsOneSpan checks that the root decides
// sampling once per attempt and that an unsampled attempt starts no other
// span: the sampler is consulted once per attempt.
func TestTraceUnsampledAttemptStartsOneSpan(t *testing.T) {
	never := &countingSampler{Sampler: sdktrace.NeverSample()}
	e := newEnv(t, envConfig{sampler: never})
	for _, k := range []string{"a", "b", "c"} {
		e.q.Add(k)
		e.getKey(t, k)
		e.q.Done(k)
	}
	if n := never.n.Load(); n != 3 {
		t.Errorf("sampler consulted %d times for 3 unsampled attempts, want 3", n)
	}
	if n := len(e.sr.Started()); n != 0 {
		t.Errorf("%d spans recorded", n)
	}

	always := &countingSampler{Sampler: sdktrace.AlwaysSample()}
	e = newEnv(t, envConfig{sampler: always})
	e.q.Add("a")
	e.getKey(t, "a")
	e.q.Done("a")
	if n := always.n.Load(); n != 3 {
		t.Errorf("sampler consulted %d times for a sampled attempt, want 3 (root, queued, reconcile)", n)
	}
}

// namespacedName is a key type with a String method, like
// types.NamespacedName.
type namespacedName struct{ Namespace, Name string }

func (n namespacedName) String() string { return n.Namespace + "/" + n.Name }

// TestTraceKeyAttribute checks how keys of other types become the
// workqueue.key attribute: String when they have one, fmt otherwise.
func TestTraceKeyAttribute(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	fc := testingclock.NewFakeClock(t0)

	sn := scheduler.New(scheduler.Config[namespacedName]{Name: queueName, Clock: fc})
	t.Cleanup(sn.ShutDown)
	if _, err := otelqueue.Instrument(sn, otelqueue.WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	sn.Add(namespacedName{"default", "web"})
	k, _ := sn.Get()
	sn.Done(k)

	si := scheduler.New(scheduler.Config[int]{Name: queueName, Clock: fc})
	t.Cleanup(si.ShutDown)
	if _, err := otelqueue.Instrument(si, otelqueue.WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	si.Add(42)
	n, _ := si.Get()
	si.Done(n)

	attemptSpans(t, sr.Ended(), "default/web", 1)
	attemptSpans(t, sr.Ended(), "42", 1)
}

// TestTraceTrigger: an event handler's trigger (scheduler.AddOptions.Trigger)
// is the attempt's workqueue.trigger, on the root and "reconcile" spans,
// not on "queued".
func TestTraceTrigger(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Trigger: scheduler.TriggerResync}, "a")
	e.getKey(t, "a")
	e.q.Done("a")
	root, queued, reconcile := attemptSpans(t, e.sr.Ended(), "a", 1)
	for _, s := range []sdktrace.ReadOnlySpan{root, reconcile} {
		if got := attrMap(s.Attributes())[semconv.AttrTrigger].AsString(); got != "resync" {
			t.Errorf("%s trigger %q, want resync", s.Name(), got)
		}
	}
	if _, ok := attrMap(queued.Attributes())[semconv.AttrTrigger]; ok {
		t.Error("the queued span carries the trigger")
	}
}

// TestTraceTriggerSource: the add's source (scheduler.AddOptions.Source)
// is the attempt's workqueue.trigger.source, on the root and "reconcile"
// spans, not on "queued", beside the trigger and before the wait reason;
// an attempt whose add gave none carries no such attribute.
func TestTraceTriggerSource(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Trigger: scheduler.TriggerUpdate, Source: "Secret"}, "a")
	e.getKey(t, "a")
	e.q.Done("a")
	e.q.Add("b")
	e.getKey(t, "b")
	e.q.Done("b")
	root, queued, reconcile := attemptSpans(t, e.sr.Ended(), "a", 1)
	for _, s := range []sdktrace.ReadOnlySpan{root, reconcile} {
		m := attrMap(s.Attributes())
		if got := m[semconv.AttrTriggerSource].AsString(); got != "Secret" {
			t.Errorf("%s trigger source %q, want Secret", s.Name(), got)
		}
		if got := m[semconv.AttrTrigger].AsString(); got != "update" {
			t.Errorf("%s trigger %q, want update", s.Name(), got)
		}
	}
	if got := attrMap(root.Attributes())[semconv.AttrWaitReason].AsString(); got != "immediate" {
		t.Errorf("root wait reason %q, want immediate (the source must not displace it)", got)
	}
	if _, ok := attrMap(reconcile.Attributes())[semconv.AttrWaitReason]; ok {
		t.Error("the reconcile span carries the wait reason")
	}
	if _, ok := attrMap(queued.Attributes())[semconv.AttrTriggerSource]; ok {
		t.Error("the queued span carries the trigger source")
	}
	rootB, _, reconcileB := attemptSpans(t, e.sr.Ended(), "b", 1)
	for _, s := range []sdktrace.ReadOnlySpan{rootB, reconcileB} {
		if v, ok := attrMap(s.Attributes())[semconv.AttrTriggerSource]; ok {
			t.Errorf("%s of a plain add carries trigger source %q", s.Name(), v.AsString())
		}
	}
}

// TestTraceNextRun: an attempt whose key runs again says on its
// "reconcile" span for what and how soon after its end: a backoff's delay
// after a failure, a requeue's, an event added while it ran (at once); an
// attempt whose key is done says nothing.
func TestTraceNextRun(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, trigger string
		during        func(q *scheduler.Scheduler[string])
		delay         float64
		none          bool
	}{
		{name: "failed", during: func(q *scheduler.Scheduler[string]) { q.AddRateLimited("a") }, trigger: "backoff", delay: 1},
		{name: "requeued", during: func(q *scheduler.Scheduler[string]) { q.AddAfter("a", 30*time.Second) }, trigger: "requeue_after", delay: 30},
		{name: "changed while it ran", during: func(q *scheduler.Scheduler[string]) {
			q.AddWithOptions(ctx, scheduler.AddOptions{Trigger: scheduler.TriggerUpdate}, "a")
		}, trigger: "update", delay: 0},
		{name: "done", none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{})
			e.q.Add("a")
			e.getKey(t, "a")
			e.step(time.Second)
			if tc.during != nil {
				tc.during(e.q)
			}
			e.q.Done("a")
			_, _, reconcile := attemptSpans(t, e.sr.Ended(), "a", 1)
			a := attrMap(reconcile.Attributes())
			trigger, ok := a[semconv.AttrNextTrigger]
			if tc.none {
				if ok {
					t.Errorf("next trigger %v on an attempt whose key is done", trigger)
				}
				return
			}
			if trigger.AsString() != tc.trigger || a[semconv.AttrNextDelay].AsFloat64() != tc.delay {
				t.Errorf("next %q in %v s, want %q in %v s", trigger.AsString(), a[semconv.AttrNextDelay].AsFloat64(), tc.trigger, tc.delay)
			}
		})
	}
}
