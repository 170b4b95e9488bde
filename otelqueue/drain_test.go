package otelqueue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// assertAllEnded fails the test if a span the recorder saw start has not
// ended.
func assertAllEnded(t testing.TB, sr *tracetest.SpanRecorder) {
	t.Helper()
	ended := map[string]bool{}
	for _, s := range sr.Ended() {
		ended[s.SpanContext().SpanID().String()] = true
	}
	for _, s := range sr.Started() {
		if !ended[s.SpanContext().SpanID().String()] {
			t.Errorf("span %q (%s) was never ended", s.Name(), s.SpanContext().SpanID())
		}
	}
}

// TestStopWithKeyInFlight checks that Stop with a key in flight leaves no
// span unended: its Done after Stop ends the attempt's spans at Done's time;
// keys taken after Stop get no spans; and the Observer is uninstalled once
// nothing taken before Stop is in flight.
func TestStopWithKeyInFlight(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.q.Add("a")
	e.q.Add("b")
	e.getKey(t, "a")
	e.step(2 * time.Second)
	if err := e.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	e.getKey(t, "b") // after Stop: no spans
	e.step(time.Second)
	e.q.Done("a")
	assertAllEnded(t, e.sr)
	root, _, rec := attemptSpans(t, e.sr.Ended(), "a", 1)
	want := t0.Add(3 * time.Second)
	if !root.EndTime().Equal(want) || !rec.EndTime().Equal(want) {
		t.Errorf("root and reconcile end at %v and %v, want %v (a's Done)", root.EndTime(), rec.EndTime(), want)
	}
	if n := len(e.sr.Started()); n != 3 {
		t.Errorf("%d spans started, want 3 (a's; none for b, taken after Stop)", n)
	}
	if e.q.Observer() == nil {
		t.Error("the Observer was uninstalled while b, taken after Stop, is in flight")
	}
	e.q.Done("b")
	if e.q.Observer() != nil {
		t.Error("the Observer is still installed with nothing in flight")
	}
}

// TestStopRacingDone runs Stop and Done of keys in flight concurrently,
// many times: whichever comes first, every span ends.
func TestStopRacingDone(t *testing.T) {
	for range 50 {
		e := newEnv(t, envConfig{})
		keys := []string{"a", "b", "c"}
		for _, k := range keys {
			e.q.Add(k)
			e.getKey(t, k)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = e.inst.Stop() })
		for _, k := range keys {
			wg.Go(func() { e.q.Done(k) })
		}
		wg.Wait()
		assertAllEnded(t, e.sr)
		if n := len(e.sr.Ended()); n != 9 {
			t.Fatalf("%d spans ended, want 9", n)
		}
		if e.q.Observer() != nil {
			t.Fatal("the Observer is still installed after Stop with nothing in flight")
		}
	}
}

// endedAttempt waits until the root span of attempt n of key has ended (it
// ends last: the scheduler publishes a Done before its Observer ends the
// spans), then returns the attempt's spans as attemptSpans does.
func (e *env) endedAttempt(t testing.TB, key string, n int) (root, queued, reconcile sdktrace.ReadOnlySpan) {
	t.Helper()
	testutil.WaitFor(t, fmt.Sprintf("the end of attempt %d of %q", n, key), func() bool {
		for _, s := range testutil.SpansNamed(e.sr.Ended(), "process "+queueName) {
			a := attrMap(s.Attributes())
			if a[semconv.AttrKey].AsString() == key && a[semconv.AttrAttempt].AsInt64() == int64(n) {
				return true
			}
		}
		return false
	})
	return attemptSpans(t, e.sr.Ended(), key, n)
}

// TestStopThenInstrumentWithoutTracing: a key in flight at Stop, then the
// queue instrumented again with tracing off (metrics only) before its Done:
// the attempt's spans, started by the first instrumentation, still end at
// its Done, as Stop promises (they were left open forever before), and its
// work is measured once, by the instrumentation installed at its Done.
func TestStopThenInstrumentWithoutTracing(t *testing.T) {
	for _, sampled := range []bool{true, false} {
		t.Run(fmt.Sprintf("sampled=%v", sampled), func(t *testing.T) {
			cfg := envConfig{}
			if !sampled {
				cfg.sampler = sdktrace.NeverSample()
			}
			e := newEnv(t, cfg)
			e.q.Add("a")
			e.getKey(t, "a")
			if err := e.inst.Stop(); err != nil {
				t.Fatal(err)
			}
			second, err := otelqueue.Instrument(e.q, otelqueue.WithMeterProvider(e.mp), otelqueue.WithTracerProvider(tracenoop.NewTracerProvider()))
			if err != nil {
				t.Fatal(err)
			}
			defer second.Stop()
			e.step(time.Second)
			e.q.Done("a")
			assertAllEnded(t, e.sr)
			if sampled {
				root, _, rec := attemptSpans(t, e.sr.Ended(), "a", 1)
				if want := t0.Add(time.Second); !root.EndTime().Equal(want) || !rec.EndTime().Equal(want) {
					t.Errorf("root and reconcile end at %v and %v, want %v (a's Done)", root.EndTime(), rec.EndTime(), want)
				}
			}
			m := testutil.FindMetric(t, e.collect(t), semconv.ScopeOtelqueue, semconv.MetricWorkDuration)
			if p := histogramPoint(t, m); p.Count != 1 {
				t.Errorf("the work duration counted %d attempts, want 1", p.Count)
			}
		})
	}
}
