package kubeclient_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// TestAttemptsAreAttributedToTheirQueue runs a Runner whose reconciles use an
// instrumented clientset, on a queue instrumented WithClientTime: each
// attempt's requests, 429s and Retry-After waits land in its queue's
// workqueue.client.* metrics and ClientStats; a request made with another
// context inside the reconcile does not.
func TestAttemptsAreAttributedToTheirQueue(t *testing.T) {
	for _, tracing := range []bool{true, false} {
		name := "metrics only"
		if tracing {
			name = "traced"
		}
		t.Run(name, func(t *testing.T) {
			srv := newAPIServer(t)
			srv.throttle.Store(1)
			tel := newTelemetry(t)
			cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: -1})

			q := scheduler.New(scheduler.Config[string]{Name: "configmaps"})
			opts := []otelqueue.Option{otelqueue.WithMeterProvider(tel.mp), otelqueue.WithClientTime()}
			if tracing {
				opts = append(opts, otelqueue.WithTracerProvider(tel.tp))
			}
			inst, err := otelqueue.Instrument(q, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Stop()
			ctx, cancel := context.WithCancel(context.Background())
			reconciled := make(chan string, 3)
			r, err := otelqueue.NewRunner(q, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
				_, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, key, metav1.GetOptions{})
				// Not the attempt's context: counts for no queue.
				_, _ = cs.CoreV1().ConfigMaps("demo").Get(context.Background(), "elsewhere", metav1.GetOptions{})
				reconciled <- key
				return otelqueue.Result{}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			q.Add("throttled") // one 429 with Retry-After: 0, then 200
			testutil.Receive(t, reconciled, "the first reconcile")
			q.Add("cm-2")
			testutil.Receive(t, reconciled, "the second reconcile")
			testutil.WaitFor(t, "both attempts done", func() bool { return q.Stats().InFlight == 0 && r.Stats().Count(otelqueue.OutcomeSuccess) == 2 })
			cancel()
			if err := testutil.Receive(t, done, "Run's return"); err != nil {
				t.Fatal(err)
			}

			st := inst.ClientStats()
			if st.Attempts != 2 || st.Work < st.RequestTime+st.RetryAfterWait || st.Requests != 3 || st.Throttled != 1 || st.RequestTime <= 0 || st.RetryAfterWait <= 0 || st.RateLimiterWait != 0 {
				t.Errorf("ClientStats = %+v; want 2 attempts, 3 requests (the other context's 2 not counted), 1 throttled, time in requests and Retry-After, no limiter (QPS -1)", st)
			}
			rm := testutil.Collect(t, tel.reader)
			queueAttrs := attribute.NewSet(semconv.AttrName.String("configmaps"), semconv.AttrController.String("configmaps"))
			for _, m := range []string{semconv.MetricClientRateLimiter, semconv.MetricClientRequest, semconv.MetricClientRetryAfter} {
				h := testutil.FindMetric(t, rm, semconv.ScopeOtelqueue, m).Data.(metricdata.Histogram[float64])
				if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 2 || !h.DataPoints[0].Attributes.Equals(&queueAttrs) {
					t.Errorf("%s: %+v, want one point of 2 attempts with the queue's attributes", m, h.DataPoints)
					continue
				}
				p := h.DataPoints[0]
				if tracing && m == semconv.MetricClientRequest {
					if len(p.Exemplars) == 0 || p.Exemplars[0].TraceID == nil {
						t.Errorf("%s: no exemplar with a trace (traced attempts)", m)
					}
				}
				if !tracing {
					for _, e := range p.Exemplars {
						if e.TraceID != nil {
							t.Errorf("%s: an exemplar with a trace id with tracing off", m)
						}
					}
				}
			}
			for m, want := range map[string]int64{semconv.MetricClientRequests: 3, semconv.MetricClientThrottled: 1} {
				s := testutil.FindMetric(t, rm, semconv.ScopeOtelqueue, m).Data.(metricdata.Sum[int64])
				if len(s.DataPoints) != 1 || s.DataPoints[0].Value != want || !s.IsMonotonic {
					t.Errorf("%s: %+v, want %d", m, s.DataPoints, want)
				}
			}
			if tracing {
				// The request spans are children of their attempt's reconcile span.
				spans := tel.spans.Ended()
				rec := map[trace.SpanID]bool{}
				for _, s := range testutil.SpansNamed(spans, semconv.SpanReconcile) {
					rec[s.SpanContext().SpanID()] = true
				}
				reqs := testutil.SpansNamed(spans, "GET /api/v1/namespaces/{namespace}/configmaps/{name}")
				if len(reqs) != 3 {
					t.Fatalf("%d request spans, want 3 (the other context's requests start none): %v", len(reqs), testutil.SpanNames(spans))
				}
				for _, s := range reqs {
					if !rec[s.Parent().SpanID()] {
						t.Errorf("request span %v is not a child of a reconcile span", s.SpanContext().SpanID())
					}
				}
				testutil.OneSpan(t, spans, semconv.SpanRetryAfter)
			}
		})
	}
}

// TestConcurrentRequestsOfOneAttempt: a reconciler may issue requests from
// several goroutines with the attempt's ctx; each counts once (run with
// -race).
func TestConcurrentRequestsOfOneAttempt(t *testing.T) {
	srv := newAPIServer(t)
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	work := &clientwork.Work{}
	ctx := clientwork.NewContext(context.Background(), work)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, fmt.Sprintf("cm-%d", i), metav1.GetOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := work.Totals(); got.Requests != n || got.RequestTime <= 0 {
		t.Errorf("%+v, want %d requests", got, n)
	}
}

// TestClientStatsOfNoInstrumentation: ClientStats on a nil Instrumentation
// is zero, not a panic.
func TestClientStatsOfNoInstrumentation(t *testing.T) {
	var inst *otelqueue.Instrumentation
	if st := inst.ClientStats(); st != (otelqueue.ClientStats{}) {
		t.Errorf("%+v", st)
	}
}
