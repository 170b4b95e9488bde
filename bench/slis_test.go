package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// The opt-in instruments of the change SLI, the wait by priority and the
// lateness, all on: what they cost per attempt against scheduler-otel
// (each Lifecycle op's plain add opens a change its Done closes, and its
// run is at priority 0; ready at once, it is not late).
func init() {
	lifecycleVariants = append(lifecycleVariants, lifecycleVariant{
		name:  "scheduler-otel-slis",
		start: startSchedulerOTel(nil, false, otelqueue.WithChangeDuration(), otelqueue.WithWaitByPriority(), otelqueue.WithLateness()),
		check: checkSLIs,
	})
}

// checkSLIs verifies that the change duration and the wait by priority
// counted every op, besides scheduler-otel's histograms.
func checkSLIs(t *testing.T, name string, ops int) {
	t.Helper()
	checkOTelHistograms(t, name, ops)
	counts := histogramCounts(t, name)
	for _, m := range []string{semconv.MetricChangeDuration, semconv.MetricQueueDurationByPriority} {
		if counts[m] < uint64(ops) {
			t.Errorf("%s: %s counted %d after %d ops", name, m, counts[m], ops)
		}
	}
}

// BenchmarkInspector measures a look of otelqueue.Inspector at a queue of
// 1,000 pending keys and 4 in flight: the page's figures (Page) with the
// default limit of 20 keys and with 1,000, and the HTML. The queue's own
// operations pay nothing for it; a look holds the queue's lock while it
// walks the keys.
func BenchmarkInspector(b *testing.B) {
	s := newSchedulerOTel(b, "inspected", nil)
	defer s.ShutDown()
	for i := range 1004 {
		s.Add("namespace/object-" + strconv.Itoa(i))
	}
	for range 4 {
		if _, err := s.GetContext(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	// The Inspector's default Limit and its most.
	for _, limit := range []int{20, 1000} {
		b.Run("view=page/limit="+strconv.Itoa(limit), func(b *testing.B) {
			in := &otelqueue.Inspector{Limit: limit}
			b.ReportAllocs()
			for b.Loop() {
				page := in.Page()
				if len(page.Queues) == 0 {
					b.Fatal("no queue on the page")
				}
			}
		})
		b.Run("view=html/limit="+strconv.Itoa(limit), func(b *testing.B) {
			in := &otelqueue.Inspector{Limit: limit}
			w := &discard{}
			req := newInspectorRequest()
			b.ReportAllocs()
			for b.Loop() {
				in.ServeHTTP(w, req)
			}
		})
	}
}

// discard is an http.ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// newInspectorRequest is a browser's GET of the page.
func newInspectorRequest() *http.Request {
	return httptest.NewRequest(http.MethodGet, "/debug/queues", nil)
}
