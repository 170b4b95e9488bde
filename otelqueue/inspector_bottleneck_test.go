package otelqueue_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// work processes n keys one at a time on fc, each for d, adding arrivals
// new keys before each: one worker's load.
func work(t *testing.T, q *scheduler.Scheduler[string], fc interface{ Step(time.Duration) }, prefix string, n, arrivals int, d time.Duration) {
	t.Helper()
	for i := range n {
		for j := range arrivals {
			q.Add(fmt.Sprintf("%s-%d-%d", prefix, i, j))
		}
		it, err := q.GetContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fc.Step(d)
		q.Done(it.Key)
	}
}

// TestInspectorBottleneck: each look of an Inspector ends a window of the
// queue's counters and classifies it; a look within MinBottleneckWindow
// shows the last class again; each Inspector keeps its own windows, and
// the page shows the class.
func TestInspectorBottleneck(t *testing.T) {
	q, fc, _ := inspectedQueue(t, "inspected-bottleneck", otelqueue.WithWorkers(1))
	h := &otelqueue.Inspector{}

	// At once: no window yet.
	b := queueOf(t, h.Page(), "inspected-bottleneck").Bottleneck
	if b == nil || b.Class != "" || !strings.HasPrefix(b.Verdict, "measuring") || b.Workers != 1 {
		t.Fatalf("first look: %+v, want no class yet, measuring, 1 worker", b)
	}

	// 10 s of 2 arrivals/s on one worker busy all the time, 1 s a key:
	// Little's law needs ceil(2 × 1 s / 0.7) = 3 workers.
	work(t, q, fc, "a", 10, 2, time.Second)
	b = queueOf(t, h.Page(), "inspected-bottleneck").Bottleneck
	if b.Class != string(bottleneck.Workers) || b.Recommended != 3 || b.Window != 10*time.Second ||
		b.Utilization != 1 || b.Arrivals != 2 || b.Reconciles != 1 || b.MeanWork != time.Second || !b.Since.Equal(t0) {
		t.Fatalf("after 10 s saturated: %+v, want workers, 3 recommended, over 10 s from t0, utilization 1, 2 arrivals/s, 1 reconcile/s of 1s", b)
	}
	if b.Verdict != "Little's law 3 > configured" {
		t.Errorf("verdict %q, want the figures without the class", b.Verdict)
	}
	if b.CPUCores != 0 {
		t.Errorf("CPU %v of %v cores on a fake clock, want unknown", b.CPU, b.CPUCores)
	}

	// A second later: the same window's class, not a 1 s window's.
	fc.Step(time.Second)
	if again := queueOf(t, h.Page(), "inspected-bottleneck").Bottleneck; *again != *b {
		t.Errorf("a look 1 s later: %+v, want the last window's %+v", again, b)
	}

	// Another Inspector's first window runs from the instrumentation.
	other := queueOf(t, (&otelqueue.Inspector{}).Page(), "inspected-bottleneck").Bottleneck
	if !other.Since.Equal(t0) || other.Window != 11*time.Second {
		t.Errorf("another Inspector's first window: since %v for %v, want since t0 for 11s", other.Since, other.Window)
	}

	// The next window, from the last that ended one: most adds are
	// retries through the backoff.
	for i := range 6 {
		key := fmt.Sprintf("f-%d", i)
		q.Add(key)
		it, err := q.GetContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fc.Step(100 * time.Millisecond)
		q.AddRateLimited(it.Key)
		q.AddRateLimited(it.Key)
		q.Done(it.Key)
	}
	fc.Step(5 * time.Second)
	b2 := queueOf(t, h.Page(), "inspected-bottleneck").Bottleneck
	if b2.Class != string(bottleneck.Errors) || !b2.Since.Equal(t0.Add(10*time.Second)) {
		t.Errorf("after failures: %+v, want errors since t0+10s", b2)
	}

	// The HTML page says it.
	_, html := get(t, h, http.MethodGet, "/", "")
	if !strings.Contains(html, `data-field="bottleneck-class">`) {
		t.Fatalf("the page has no bottleneck class:\n%s", html)
	}
	fc.Step(10 * time.Second)
	_, html = get(t, h, http.MethodGet, "/", "")
	if !strings.Contains(html, `data-field="bottleneck-class">none<`) {
		t.Errorf("an idle window's page does not say none")
	}
}

// TestInspectorBottleneckStandbyAndUnknownWorkers: a standby queue has no
// class; a queue whose worker count nobody gave says what it cannot read.
func TestInspectorBottleneckStandbyAndUnknownWorkers(t *testing.T) {
	leader := make(chan struct{})
	_, fcStandby, _ := inspectedQueue(t, "inspected-standby-class", otelqueue.WithStandby(leader))
	q, fc, _ := inspectedQueue(t, "inspected-no-workers")
	h := &otelqueue.Inspector{}
	work(t, q, fc, "k", 10, 2, time.Second)
	fcStandby.Step(10 * time.Second)
	page := h.Page()
	if b := queueOf(t, page, "inspected-standby-class").Bottleneck; b.Class != "" || !strings.Contains(b.Verdict, "standby") {
		t.Errorf("standby: %+v, want no class", b)
	}
	if b := queueOf(t, page, "inspected-no-workers").Bottleneck; b.Workers != 0 || b.Class != string(bottleneck.None) ||
		!strings.Contains(b.Verdict, "worker count is unknown") || b.Recommended != 0 {
		t.Errorf("no worker count: %+v, want none, saying the count is unknown", b)
	}
}

// TestInspectorBottleneckNothingFinished: keys that came while no worker
// took any give no class (a window in which nothing finished says nothing
// of the limit, as the summary line's does), and the verdict asks whether
// the workers run; an idle window is none.
func TestInspectorBottleneckNothingFinished(t *testing.T) {
	q, fc, _ := inspectedQueue(t, "inspected-no-worker-runs", otelqueue.WithWorkers(2))
	_, fcIdle, _ := inspectedQueue(t, "inspected-idle", otelqueue.WithWorkers(2))
	for i := range 100 {
		q.Add(fmt.Sprintf("k-%d", i))
	}
	fc.Step(6 * time.Second)
	fcIdle.Step(6 * time.Second)
	page := (&otelqueue.Inspector{}).Page()
	if b := queueOf(t, page, "inspected-no-worker-runs").Bottleneck; b.Class != "" || !strings.Contains(b.Verdict, "100 adds and no reconcile finished") || b.Recommended != 0 {
		t.Errorf("100 keys, none taken: %+v, want no class, asking about the workers", b)
	}
	if b := queueOf(t, page, "inspected-idle").Bottleneck; b.Class != string(bottleneck.None) {
		t.Errorf("an idle queue: %+v, want none", b)
	}
}

// TestInspectorBottleneckNil: a nil Inspector keeps no windows: every look
// classifies the time since the instrumentation.
func TestInspectorBottleneckNil(t *testing.T) {
	q, fc, _ := inspectedQueue(t, "inspected-nil-class", otelqueue.WithWorkers(2))
	var h *otelqueue.Inspector
	work(t, q, fc, "k", 6, 1, time.Second)
	for range 2 {
		if b := queueOf(t, h.Page(), "inspected-nil-class").Bottleneck; !b.Since.Equal(t0) || b.Window != 6*time.Second {
			t.Errorf("nil Inspector: since %v for %v, want since t0 for 6s", b.Since, b.Window)
		}
	}
}
