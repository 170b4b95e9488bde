package kubeclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// allocsBeforeInstrument is what one Add, Get and Done of a queue
// instrumented without WithClientTime, tracing off, allocates in a process
// where no client has been instrumented yet: TestMain measures it before
// any test runs.
var allocsBeforeInstrument float64

// cycleQueue returns a queue instrumented with opts, tracing off and
// metrics to a no-op provider, and the function that stops it.
func cycleQueue(opts ...otelqueue.Option) (*scheduler.Scheduler[string], func(), error) {
	q := scheduler.New(scheduler.Config[string]{Name: "cycle"})
	opts = append([]otelqueue.Option{otelqueue.WithMeterProvider(metricnoop.NewMeterProvider()), otelqueue.WithTracerProvider(tracenoop.NewTracerProvider())}, opts...)
	inst, err := otelqueue.Instrument(q, opts...)
	if err != nil {
		q.ShutDown()
		return nil, nil, err
	}
	return q, func() { _ = inst.Stop(); q.ShutDown() }, nil
}

// cycleAllocs returns the allocations of one Add, Get and Done of q.
func cycleAllocs(q *scheduler.Scheduler[string]) float64 {
	return testing.AllocsPerRun(1000, func() {
		q.Add("a")
		k, _ := q.Get()
		q.Done(k)
	})
}

// attemptWork returns the Work the context of an attempt of q carries, or
// nil: what a client instrumented by kubeclient adds the attempt's
// requests to.
func attemptWork(t *testing.T, q *scheduler.Scheduler[string]) *clientwork.Work {
	t.Helper()
	q.Add("work")
	it, err := q.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Done(it.Key)
	return clientwork.FromContext(it.Context())
}

// TestClientTimeIsPerQueue: instrumenting a client changes no queue. A
// queue instrumented without WithClientTime, in a process where
// kubeclient.Instrument has been called, allocates per attempt what a
// queue did before any client was instrumented, and its attempts carry no
// Work; a queue WithClientTime carries one, for one allocation more.
func TestClientTimeIsPerQueue(t *testing.T) {
	if _, err := kubeclient.Instrument(&rest.Config{Host: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}

	without, stop, err := cycleQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := cycleAllocs(without); got != allocsBeforeInstrument {
		t.Errorf("an attempt of a queue without WithClientTime allocates %v after kubeclient.Instrument, %v before it: instrumenting a client changed the queue", got, allocsBeforeInstrument)
	}
	if w := attemptWork(t, without); w != nil {
		t.Errorf("an attempt of a queue without WithClientTime carries a Work (%p)", w)
	}

	with, stop, err := cycleQueue(otelqueue.WithClientTime())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := cycleAllocs(with); got != allocsBeforeInstrument+1 {
		t.Errorf("an attempt of a queue WithClientTime allocates %v, want %v: one more than without (as documented)", got, allocsBeforeInstrument+1)
	}
	if attemptWork(t, with) == nil {
		t.Error("an attempt of a queue WithClientTime carries no Work")
	}

	// An adaptive pool reads the client time only with the option: without
	// it, its queue's attempts cost what they cost without a pool.
	adaptive, stop, err := cycleQueue(otelqueue.AdaptiveWorkers{Min: 1, Max: 4, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := cycleAllocs(adaptive); got != allocsBeforeInstrument {
		t.Errorf("an attempt of a queue with an adaptive pool, without WithClientTime, allocates %v, want %v", got, allocsBeforeInstrument)
	}
	if attemptWork(t, adaptive) != nil {
		t.Error("an attempt of a queue with an adaptive pool, without WithClientTime, carries a Work")
	}
	adaptiveWith, stop2, err := cycleQueue(otelqueue.AdaptiveWorkers{Min: 1, Max: 4, Interval: time.Hour}, otelqueue.WithClientTime())
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	if attemptWork(t, adaptiveWith) == nil {
		t.Error("an attempt of a queue with an adaptive pool WithClientTime carries no Work")
	}
}

// TestClientStatsOnlyWithClientTime: the reconciles of two queues use one
// instrumented client with their attempt's context; the queue
// WithClientTime counts its attempt's request in ClientStats and the
// workqueue.client.* metrics, the queue without it counts nothing, sampled
// or not.
func TestClientStatsOnlyWithClientTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: tracing off
	}{
		{"tracing off", nil},
		{"unsampled", sdktrace.NeverSample()},
		{"sampled", sdktrace.AlwaysSample()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newAPIServer(t)
			tel := newTelemetry(t)
			cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: -1})
			var tp trace.TracerProvider = tracenoop.NewTracerProvider()
			if tc.sampler != nil {
				tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(tc.sampler), sdktrace.WithSpanProcessor(tel.spans))
				t.Cleanup(func() { _ = tp.(*sdktrace.TracerProvider).Shutdown(context.Background()) })
			}
			for _, clientTime := range []bool{true, false} {
				name := "without"
				opts := []otelqueue.Option{otelqueue.WithMeterProvider(tel.mp), otelqueue.WithTracerProvider(tp)}
				if clientTime {
					name = "with"
					opts = append(opts, otelqueue.WithClientTime())
				}
				q := scheduler.New(scheduler.Config[string]{Name: name})
				defer q.ShutDown()
				inst, err := otelqueue.Instrument(q, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer inst.Stop()

				q.Add("cm")
				it, err := q.GetContext(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				// The reconcile: a request with the attempt's context.
				if _, err := cs.CoreV1().ConfigMaps("demo").Get(it.Context(), it.Key, metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
				q.Done(it.Key)

				st := inst.ClientStats()
				switch {
				case clientTime && (st.Attempts != 1 || st.Requests != 1 || st.RequestTime <= 0 || st.Work < st.RequestTime):
					t.Errorf("ClientStats of the queue WithClientTime = %+v, want the one request of its attempt", st)
				case !clientTime && st != (otelqueue.ClientStats{}):
					t.Errorf("ClientStats of the queue without WithClientTime = %+v, want nothing", st)
				}
			}

			rm := testutil.Collect(t, tel.reader)
			for _, m := range []string{semconv.MetricClientRateLimiter, semconv.MetricClientRequest, semconv.MetricClientRetryAfter, semconv.MetricClientRequests} {
				var names []string
				switch d := testutil.FindMetric(t, rm, semconv.ScopeOtelqueue, m).Data.(type) {
				case metricdata.Histogram[float64]:
					for _, p := range d.DataPoints {
						v, _ := p.Attributes.Value(semconv.AttrName)
						names = append(names, v.AsString())
					}
				case metricdata.Sum[int64]:
					for _, p := range d.DataPoints {
						v, _ := p.Attributes.Value(semconv.AttrName)
						names = append(names, v.AsString())
					}
				}
				if len(names) != 1 || names[0] != "with" {
					t.Errorf("%s has points of the queues %q, want only the one WithClientTime", m, names)
				}
			}
		})
	}
}

// TestRetryAfterSpanWithoutClientTime: a sampled attempt of a queue
// without WithClientTime still has kubeclient's "retry after" span (its
// context holds a Work at no cost), though the queue records nothing.
func TestRetryAfterSpanWithoutClientTime(t *testing.T) {
	srv := newAPIServer(t)
	srv.throttle.Store(1) // one 429 with Retry-After: 0, then 200
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: -1})
	q := scheduler.New(scheduler.Config[string]{Name: "sampled"})
	defer q.ShutDown()
	inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(tel.mp), otelqueue.WithTracerProvider(tel.tp))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	q.Add("throttled")
	it, err := q.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("demo").Get(it.Context(), it.Key, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	q.Done(it.Key)
	testutil.OneSpan(t, tel.spans.Ended(), semconv.SpanRetryAfter)
	if st := inst.ClientStats(); st != (otelqueue.ClientStats{}) {
		t.Errorf("ClientStats = %+v, want nothing without WithClientTime", st)
	}
}
