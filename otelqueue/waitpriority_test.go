package otelqueue_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// TestQueueWaitByPriority: WithWaitByPriority records the queue wait by
// the run's priority too, so that real changes' wait is told from the
// initial list's (-100); a queue that uses more than MaxPriorities
// priorities has the rest under PriorityOverflow. The queue wait itself
// keeps controller-runtime's labels.
func TestQueueWaitByPriority(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithWaitByPriority()}})
	add := func(key string, prio int) {
		e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Priority: prio}, key)
	}
	add("listed", -100)
	add("changed", 0)
	e.step(time.Second)
	e.q.Done(e.getKey(t, "changed").Key) // waited 1 s
	e.step(2 * time.Second)
	e.q.Done(e.getKey(t, "listed").Key) // waited 3 s
	// 30 more priorities, 1..30: 0, -100 and 1..23 have series, 24..30
	// overflow.
	for p := 1; p <= 30; p++ {
		add("k"+string(rune('a'+p)), p)
	}
	for range 30 {
		e.q.Done(e.get(t).Key)
	}
	rm := e.collect(t)
	if all := testutil.FindMetric(t, rm, semconv.ScopeOtelqueue, semconv.MetricQueueDuration).Data.(metricdata.Histogram[float64]); len(all.DataPoints) != 1 || all.DataPoints[0].Count != 32 {
		t.Errorf("queue wait: %+v, want one series of all 32 waits", all.DataPoints)
	}
	h := testutil.FindMetric(t, rm, semconv.ScopeOtelqueue, semconv.MetricQueueDurationByPriority).Data.(metricdata.Histogram[float64])
	byPrio := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, dp := range h.DataPoints {
		v, _ := dp.Attributes.Value(semconv.AttrPriority)
		byPrio[v.AsString()] = dp
	}
	if len(byPrio) != otelqueue.MaxPriorities+1 {
		t.Errorf("%d priorities on the queue wait, want %d and the overflow", len(byPrio), otelqueue.MaxPriorities)
	}
	if dp := byPrio["0"]; dp.Count != 1 || dp.Sum != 1 {
		t.Errorf("priority 0: %d waits, %v s; want the change's 1 s", dp.Count, dp.Sum)
	}
	if dp := byPrio["-100"]; dp.Count != 1 || dp.Sum != 3 {
		t.Errorf("priority -100: %d waits, %v s; want the initial list's 3 s", dp.Count, dp.Sum)
	}
	if dp := byPrio[otelqueue.PriorityOverflow]; dp.Count != 7 {
		t.Errorf("overflow: %d waits, want 7 (priorities 24 to 30)", dp.Count)
	}
	want := attribute.NewSet(semconv.AttrName.String(queueName), semconv.AttrController.String(queueName), semconv.AttrPriority.String("0"))
	if got := byPrio["0"].Attributes; !got.Equals(&want) {
		t.Errorf("attributes %v, want %v", got.Encoded(attribute.DefaultEncoder()), want.Encoded(attribute.DefaultEncoder()))
	}
}

// TestQueueWaitByPriorityOff: without the option, no such instrument.
func TestQueueWaitByPriorityOff(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Priority: -100}, "a")
	e.q.Done(e.getKey(t, "a").Key)
	for _, name := range testutil.MetricNames(e.collect(t), semconv.ScopeOtelqueue) {
		if name == semconv.MetricQueueDurationByPriority {
			t.Errorf("%s reported without WithWaitByPriority", name)
		}
	}
}

// TestQueueWaitByPriorityConcurrent: workers learning priorities at once
// count every wait once, within the bound (go test -race checks the rest).
func TestQueueWaitByPriorityConcurrent(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithWaitByPriority()}})
	const keys = 400
	for i := range keys {
		e.q.AddWithOptions(context.Background(), scheduler.AddOptions{Priority: i % 40}, strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range keys / 4 {
				it, err := e.q.GetContext(context.Background())
				if err != nil {
					t.Error(err) // not Fatal: another goroutine's
					return
				}
				e.q.Done(it.Key)
			}
		})
	}
	wg.Wait()
	h := testutil.FindMetric(t, e.collect(t), semconv.ScopeOtelqueue, semconv.MetricQueueDurationByPriority).Data.(metricdata.Histogram[float64])
	var n uint64
	for _, dp := range h.DataPoints {
		n += dp.Count
	}
	if n != keys || len(h.DataPoints) != otelqueue.MaxPriorities+1 {
		t.Errorf("%d waits in %d series, want %d in %d", n, len(h.DataPoints), keys, otelqueue.MaxPriorities+1)
	}
}
