package examplecluster

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelqueue/otelqueue/internal/exampletest"
)

func TestWorkloadSchedule(t *testing.T) {
	w := &Workload{Churn: 4, BurstEvery: time.Second, BurstSize: 10}
	if got := w.due(2500 * time.Millisecond); got != 30 {
		t.Errorf("due at 2.5 s with -churn 4 and 10 every second = %d, want 10 + 20", got)
	}
	if next, ok := w.next(2500 * time.Millisecond); !ok || next != 250*time.Millisecond {
		t.Errorf("next after 2.5 s = %v, %v; want 250ms (the churn's, before the burst at 3 s)", next, ok)
	}
	if next, ok := (&Workload{BurstEvery: time.Second, BurstSize: 1}).next(2500 * time.Millisecond); !ok || next != 500*time.Millisecond {
		t.Errorf("bursts only: next after 2.5 s = %v, %v; want 500ms", next, ok)
	}
	if _, ok := (&Workload{}).next(time.Second); ok {
		t.Error("no churn, no bursts: a write is due")
	}
}

// cancelAfter is a context that is cancelled from the (limit+1)-th call of
// Err on: a stop at a known point of a loop that checks its context.
type cancelAfter struct {
	context.Context
	calls atomic.Int64
	limit int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) > c.limit {
		return context.Canceled
	}
	return nil
}

// TestSeedStopsAtOnce stops Seed after 10 of 100,000 objects: it returns
// the context's error with no further object created (on main, seeding
// ignored its context, and SIGTERM with it).
func TestSeedStopsAtOnce(t *testing.T) {
	c, err := Connect(context.Background(), Flags{KubeQPS: DefaultKubeQPS, KubeBurst: DefaultKubeBurst})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := &cancelAfter{Context: context.Background(), limit: 10}
	w := &Workload{Cluster: c, Namespace: "ns", Objects: 100000}
	err = w.Seed(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Seed stopped after 10 objects: %v, want context.Canceled", err)
	}
	list, err := c.Client.CoreV1().ConfigMaps("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 10 {
		t.Errorf("%d objects created, want the 10 before the stop", len(list.Items))
	}
	if err := StopError(ctx, err); err != nil {
		t.Errorf("a stop while seeding is a clean stop: %v", err)
	}
}

// TestSeedManyObjects seeds 20,000 objects into the embedded cluster (69 s
// with NewClientset's tracker in issue 9, 158 ms with this one here) and
// lists them.
func TestSeedManyObjects(t *testing.T) {
	c, err := Connect(context.Background(), Flags{KubeQPS: DefaultKubeQPS, KubeBurst: DefaultKubeBurst})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := &Workload{Cluster: c, Namespace: "ns", Objects: 20000}
	start := time.Now()
	if err := w.Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d ConfigMaps in %v", w.Objects, time.Since(start))
	if err := w.Seed(context.Background()); err != nil {
		t.Fatalf("seeding again keeps what exists: %v", err)
	}
	list, err := c.Client.CoreV1().ConfigMaps("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 20000 {
		t.Errorf("%d objects listed, want 20000", len(list.Items))
	}
}

// TestRunEndsQuietlyAtTheDeadline runs the workload against a real client
// far beyond its -workload-qps until a deadline: client-go's limiter refuses at once
// any wait that would pass a deadline, which the workload must not log as a
// write error ("rate: Wait(n=1) would exceed context deadline", some 40
// lines at the end of every -duration run on a real cluster), and the
// shortfall shows in Stats.
func TestRunEndsQuietlyAtTheDeadline(t *testing.T) {
	out := exampletest.CaptureLog(t)
	kubeconfig, server := apiServer(t)
	c, err := Connect(context.Background(), Flags{Kubeconfig: kubeconfig, KubeQPS: DefaultKubeQPS, KubeBurst: DefaultKubeBurst, WorkloadQPS: 5, WorkloadBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := &Workload{Cluster: c, Namespace: "ns", Objects: 10, Churn: 100}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	w.Run(ctx)
	st := w.Stats()
	if st.Done == 0 || st.Done >= st.Requested || st.Failed != 0 {
		t.Errorf("stats %+v: want some writes done, fewer than requested, none failed", st)
	}
	if n := server.requests(WorkloadUserAgent); int(st.Done) != n || server.requests("") != n {
		t.Errorf("%d writes done, %d requests of the workload served, %d in all", st.Done, n, server.requests(""))
	}
	if st.LimiterWaited < 100*time.Millisecond {
		t.Errorf("the workload waited %v for its -workload-qps 5 over 0.5 s, want most of it", st.LimiterWaited)
	}
	if strings.Contains(out.String(), "workload") {
		t.Errorf("the workload logged at the deadline:\n%s", out)
	}
}
