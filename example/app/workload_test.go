package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/otelqueue/otelqueue/example/internal/exampletelemetry"
	"github.com/otelqueue/otelqueue/example/internal/exampletest"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// startController runs runController with args until the test ends, and
// returns its log and a function that waits for the n-th summary line matching want
// (failing after a minute, or if the controller stopped).
func startController(t *testing.T, args ...string) (*exampletest.Log, func(n int, want *regexp.Regexp) string) {
	t.Helper()
	out := exampletest.CaptureLog(t)
	cfg, err := parseFlags(append([]string{"-metrics-addr", "", "-summary-interval", "300ms"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- runController(ctx, cfg, &exampletelemetry.Telemetry{}, &otelqueue.Sizer{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("runController: %v", err)
		}
	})
	return out, func(n int, want *regexp.Regexp) string {
		t.Helper()
		return out.WaitFor(t, n, "queue configmaps:", want, errc)
	}
}

// TestSummarySaysWhenTheClientLimitHoldsTheWorkloadBack runs the workload
// through the embedded cluster with its own client limit far below what it
// asks for: the summary must show the writes done against those requested,
// and say that it is behind and why (on main, the summary said nothing and
// the fake had no limit at all).
func TestSummarySaysWhenTheClientLimitHoldsTheWorkloadBack(t *testing.T) {
	_, waitFor := startController(t, "-workload-qps", "5", "-workload-burst", "1", "-churn", "50", "-burst-every", "0", "-latency", "1ms", "-error-rate", "0", "-objects", "20")
	// The 4th line, 1.2 s in: 60 writes due, about 7 done.
	exampletest.CheckBehind(t, waitFor(4, exampletest.WritesRE()), "client rate limit (-workload-qps 5 -workload-burst 1)")
}

// TestServerLimitDoesNotThrottleTheWorkload: -server-qps is the
// controller's share of the embedded API server; the workload stands for
// the cluster's other clients and keeps its rate.
func TestServerLimitDoesNotThrottleTheWorkload(t *testing.T) {
	_, waitFor := startController(t, "-server-qps", "2", "-churn", "50", "-burst-every", "0", "-latency", "1ms", "-error-rate", "0", "-objects", "20")
	l := waitFor(4, exampletest.WritesRE())
	if strings.Contains(l, "behind:") {
		t.Errorf("the workload is held back by the controller's -server-qps: %s", l)
	}
}

// TestControllerLimitDoesNotThrottleTheWorkload: a -kube-qps far below the
// workload's rate holds back the controller's requests only; the workload
// has a client of its own and keeps its rate.
func TestControllerLimitDoesNotThrottleTheWorkload(t *testing.T) {
	_, waitFor := startController(t, "-kube-qps", "2", "-kube-burst", "1", "-churn", "50", "-burst-every", "0", "-latency", "1ms", "-error-rate", "0", "-objects", "20")
	l := waitFor(4, exampletest.WritesRE())
	if strings.Contains(l, "behind:") {
		t.Errorf("the workload is held back by the controller's -kube-qps: %s", l)
	}
}

// TestSummaryRecommendsWorkers saturates one worker (50 ms reconciles,
// 40 updates/s): the summary shows the utilization, the coalesced adds and
// a recommended worker count above 1.
func TestSummaryRecommendsWorkers(t *testing.T) {
	_, waitFor := startController(t, "-workers", "1", "-churn", "40", "-burst-every", "0", "-latency", "50ms", "-latency-spread", "0", "-error-rate", "0", "-objects", "500")
	// The first interval may hold the initial list's quick reconciles.
	l := waitFor(1, regexp.MustCompile(`recommend -workers ([2-9]|\d\d)`))
	for _, want := range []string{"utilization=", "coalesced/s=", "bottleneck=workers"} {
		if !strings.Contains(l, want) {
			t.Errorf("summary lacks %q: %s", want, l)
		}
	}
}

// TestManyObjectsStartReconcilingAtOnce: with -objects 20000 the
// controller reconciles within seconds (on main, seeding alone took 69 s
// before the first reconcile).
func TestManyObjectsStartReconcilingAtOnce(t *testing.T) {
	_, waitFor := startController(t, "-objects", "20000", "-churn", "0", "-burst-every", "0", "-latency", "0", "-workers", "4", "-error-rate", "0")
	waitFor(1, regexp.MustCompile(`reconciles/s=[1-9]`))
}

// TestStopWhileSeeding: a stop (signal or -duration) while seeding is a
// clean, immediate stop.
func TestStopWhileSeeding(t *testing.T) {
	out := exampletest.CaptureLog(t)
	cfg, err := parseFlags([]string{"-metrics-addr", "", "-objects", "40000"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runController(ctx, cfg, &exampletelemetry.Telemetry{}, &otelqueue.Sizer{}); err != nil {
		t.Fatalf("stopped while seeding: %v", err)
	}
	if !strings.Contains(out.String(), "seeding stopped after 0 of 40000 ConfigMaps") {
		t.Errorf("the log does not say seeding stopped:\n%s", out)
	}
}

// TestStopLogsNoReconcilerErrors stops the app with both workers in a
// reconcile: the interrupted reconciles are no errors, so the Runner logs
// no "Reconciler error" line for them.
func TestStopLogsNoReconcilerErrors(t *testing.T) {
	var log *exampletest.Log
	t.Cleanup(func() { // after the controller stopped (cleanups run last first)
		if n := strings.Count(log.String(), "Reconciler error"); n > 0 {
			t.Errorf("the stop logged %d Reconciler error lines:\n%s", n, log)
		}
		if !strings.Contains(log.String(), "2 interrupted by the stop") {
			t.Errorf("the final line does not count the 2 interrupted reconciles:\n%s", log)
		}
	})
	out, waitFor := startController(t, "-workers", "2", "-latency", "1h", "-latency-spread", "0", "-error-rate", "0", "-churn", "10", "-burst-every", "0")
	log = out
	waitFor(1, regexp.MustCompile(`in_flight=2 `))
}

// TestSummaryBottleneck provokes each class of the summary's bottleneck
// with the demo's flags, and checks that once the class shows, no line
// recommends more workers for a class other than workers. (Before, a line
// may: the split counts attempts when they end, and in the first second the
// attempts waiting on a downstream limit have not ended yet.)
func TestSummaryBottleneck(t *testing.T) {
	recommend := regexp.MustCompile(`recommend -workers`)
	for _, tc := range []struct {
		name string
		args []string
	}{
		// 40 updates/s of 1 ms reconciles, each one write: at 5 requests/s
		// the controller's limiter is where the time goes.
		{"client-rate-limit", []string{"-kube-qps", "5", "-kube-burst", "1", "-churn", "40", "-latency", "1ms", "-workers", "4", "-error-rate", "0"}},
		// The embedded API server lets the controller 3 requests/s; the
		// rest wait out Retry-After: 1.
		{"server-throttling", []string{"-server-qps", "3", "-churn", "40", "-latency", "1ms", "-workers", "4", "-error-rate", "0"}},
		// 80% of the reconciles fail and come back.
		{"errors", []string{"-error-rate", "0.8", "-churn", "20", "-latency", "1ms", "-workers", "4"}},
		{"workers", []string{"-workers", "1", "-churn", "40", "-latency", "50ms", "-error-rate", "0"}},
		{"none", []string{"-churn", "10", "-latency", "1ms", "-workers", "4", "-error-rate", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-burst-every", "0", "-latency-spread", "0", "-objects", "50", "-summary-interval", "1s"}, tc.args...)
			out, waitFor := startController(t, args...)
			l := waitFor(3, regexp.MustCompile(`bottleneck=`+tc.name+` `))
			t.Logf("%s", l)
			if tc.name == "workers" || tc.name == "none" {
				return
			}
			shown := false
			for _, line := range strings.Split(out.String(), "\n") {
				if !strings.Contains(line, "queue configmaps:") {
					continue
				}
				shown = shown || strings.Contains(line, "bottleneck="+tc.name+" ")
				if shown && recommend.MatchString(line) {
					t.Errorf("a line recommends more workers under %s: %s", tc.name, line)
				}
			}
		})
	}
}

// TestSummaryShowsAdaptiveWorkers runs the app with an adaptive pool that
// starts at one worker under the load of four (40 updates a second of
// 100 ms reconciles): the Runner's pool decides on the app's instrumented
// queue and grows for the demand or the wait, its "adaptive workers" line
// goes to the app's log, and the summary line shows its count and last
// reason, its utilization for that count.
func TestSummaryShowsAdaptiveWorkers(t *testing.T) {
	out, waitFor := startController(t, "-adaptive-workers", "1:8", "-workers", "1", "-churn", "40", "-burst-every", "0",
		"-latency", "100ms", "-latency-spread", "0", "-error-rate", "0", "-objects", "500")
	waitFor(1, regexp.MustCompile(`workers=1 \(adaptive 1\.\.8, no change yet\) adds/s=`))
	// The first decision comes after the pool's interval, 5 s.
	l := waitFor(1, regexp.MustCompile(`workers=([2-8]) \(adaptive 1\.\.8, last: (demand|wait), 1 change\) adds/s=`))
	if !strings.Contains(l, "utilization=") {
		t.Errorf("summary lacks the utilization: %s", l)
	}
	log := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`controller "configmaps" running against .*, 1 worker to start, adaptive from 1 to 8`),
		regexp.MustCompile(`INFO adaptive workers queue=configmaps from=1 to=[2-8] reason=(demand|wait) detail="needed \d+`),
	} {
		if !want.MatchString(log) {
			t.Errorf("the log lacks %v:\n%s", want, log)
		}
	}
}
