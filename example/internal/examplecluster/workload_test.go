package examplecluster

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/example/internal/exampletest"
)

// TestChurnSchedule follows the writes requested over a schedule of rates
// (-churn 20 -churn-schedule 10s:300,20s:0,30s:40): each rate over its
// stretch, never fewer from one moment to the next, the next write due at
// the right time or at the next change, and the slack half a second of
// whatever rate was asked for.
func TestChurnSchedule(t *testing.T) {
	w := &Workload{Churn: 20, Schedule: ChurnSchedule{{10 * time.Second, 300}, {20 * time.Second, 0}, {30 * time.Second, 40}}}
	for _, tc := range []struct {
		at   time.Duration
		due  uint64
		rate float64
	}{
		{0, 0, 20},
		{5 * time.Second, 100, 20},
		{10 * time.Second, 200, 300},
		{15 * time.Second, 200 + 1500, 300},
		{20 * time.Second, 200 + 3000, 0},
		{25 * time.Second, 3200, 0},
		{31 * time.Second, 3200 + 40, 40},
	} {
		if got := w.due(tc.at); got != tc.due {
			t.Errorf("due at %v = %d, want %d", tc.at, got, tc.due)
		}
		if got := w.churnAt(tc.at); got != tc.rate {
			t.Errorf("rate at %v = %v, want %v", tc.at, got, tc.rate)
		}
	}
	for _, tc := range []struct {
		at, want time.Duration
		ok       bool
	}{
		{9990 * time.Millisecond, 10 * time.Millisecond, true},              // the 200th write, at the change
		{10*time.Second + 500*time.Microsecond, 2833333, true},              // the 201st at 300/s: 10 s + 1/300 s
		{19999 * time.Millisecond, time.Millisecond, true},                  // the change to 0
		{22 * time.Second, 8 * time.Second, true},                           // none due until the change to 40/s
		{30*time.Second + 10*time.Millisecond, 15 * time.Millisecond, true}, // at 40/s, every 25 ms
	} {
		if got, ok := w.next(tc.at); ok != tc.ok || (got-tc.want).Abs() > time.Microsecond {
			t.Errorf("next after %v = %v, %v; want %v", tc.at, got, ok, tc.want)
		}
	}
	if _, ok := (&Workload{Churn: 10, Schedule: ChurnSchedule{{time.Second, 0}}}).next(2 * time.Second); ok {
		t.Error("the schedule stopped the churn and no burst: a write is due")
	}
	// Whatever the changes: the writes requested and those settled never
	// decrease, and the slack is half a second of the recent rate (at
	// least 1, and at most all the writes due).
	var due, settled uint64
	for at := time.Duration(0); at <= 40*time.Second; at += 7 * time.Millisecond {
		d, s := w.due(at), w.settled(at)
		if d < due || s < settled {
			t.Fatalf("at %v: %d due, %d settled; before, %d and %d", at, d, s, due, settled)
		}
		if d > 0 && s >= d {
			t.Fatalf("at %v: %d due, %d settled: no slack", at, d, s)
		}
		due, settled = d, s
	}
	for at, want := range map[time.Duration]uint64{
		5 * time.Second:                       10,     // 20/s
		15 * time.Second:                      150,    // 300/s
		10*time.Second + 200*time.Millisecond: 60 + 6, // 0.2 s at 300/s, 0.3 s at 20/s
		25 * time.Second:                      1,      // nothing due lately: one write's slack
	} {
		if got := w.due(at) - w.settled(at); got != want {
			t.Errorf("slack at %v = %d, want %d", at, got, want)
		}
	}
	// Bursts: the last one due is slack.
	b := &Workload{Churn: 4, BurstEvery: time.Second, BurstSize: 10}
	if got := b.due(2500*time.Millisecond) - b.settled(2500*time.Millisecond); got != 10+2 {
		t.Errorf("slack at 2.5 s with -churn 4 and 10 every second = %d, want the last burst and 2", got)
	}
}

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

// TestRunFollowsTheSchedule runs the workload against the embedded cluster
// on a fake clock with -churn 10 -churn-schedule 2s:100,4s:0,6s:10, stepping
// the clock a second at a time: at each second it has written exactly the
// writes each rate asked for over its stretch (so the summary's writes/s
// and requested/s stay true across a change), logs each change, and its
// counts say which rate holds and how much of the backlog is slack.
func TestRunFollowsTheSchedule(t *testing.T) {
	out := exampletest.CaptureLog(t)
	c, err := Connect(context.Background(), Flags{KubeQPS: DefaultKubeQPS, KubeBurst: DefaultKubeBurst})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clk := testingclock.NewFakeClock(time.Now())
	w := &Workload{Cluster: c, Namespace: "ns", Objects: 10, Churn: 10, Clock: clk,
		Schedule: ChurnSchedule{{2 * time.Second, 100}, {4 * time.Second, 0}, {6 * time.Second, 10}}}
	if err := w.Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		w.Run(ctx)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	// idle waits until the workload has finished n writes and waits for
	// its timer: it does nothing more until the clock moves.
	idle := func(n uint64) WorkloadStats {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			st := w.Stats()
			if st.Finished > n {
				t.Fatalf("%d writes finished at %v, want %d", st.Finished, clk.Since(*w.start.Load()), n)
			}
			if st.Finished == n && clk.HasWaiters() {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d writes finished within a minute: %+v", st.Finished, n, st)
			}
			time.Sleep(time.Millisecond)
		}
	}
	idle(0)
	var prev WorkloadStats
	for i, want := range []struct {
		requested, slack uint64
		churn            float64
	}{
		{10, 5, 10},    // 1 s: 10/s
		{20, 5, 100},   // 2 s: 10/s until now, 100/s from now
		{120, 50, 100}, // 3 s
		{220, 50, 0},   // 4 s: 0/s from now, the last half second at 100/s
		{220, 1, 0},    // 5 s
		{220, 1, 10},   // 6 s: 10/s from now
		{230, 5, 10},   // 7 s
	} {
		clk.Step(time.Second)
		st := idle(want.requested)
		if st.Requested != want.requested || st.Started != want.requested || st.Done != want.requested || st.Failed != 0 {
			t.Errorf("at %d s: %+v, want %d writes requested, started and done", i+1, st, want.requested)
		}
		if st.Churn != want.churn || st.Slack() != want.slack {
			t.Errorf("at %d s: churn %v, slack %d; want %v, %d", i+1, st.Churn, st.Slack(), want.churn, want.slack)
		}
		if got := st.Counted() - prev.Counted(); got != st.Done-prev.Done {
			t.Errorf("at %d s: %d writes requested in the second, %d done: the workload kept up", i+1, got, st.Done-prev.Done)
		}
		prev = st
	}
	for _, want := range []string{"workload: 100 updates per second from 2s on (-churn-schedule 2s:100,4s:0,6s:10), 10 before",
		"workload: 0 updates per second from 4s on", "workload: 10 updates per second from 6s on"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}
