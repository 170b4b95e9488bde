package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelqueue/otelqueue/example/internal/exampletest"
)

// stopWhileBusy runs the example with every worker in a long reconcile and
// keys pending, stops it, and returns its log.
func stopWhileBusy(t *testing.T, controllerRuntimeQueue bool) string {
	out := exampletest.CaptureLog(t)
	cfg, err := parseFlags([]string{"-metrics-addr", "", "-objects", "60", "-churn", "50", "-workers", "4", "-latency", "300ms", "-summary-interval", "0"})
	if err != nil {
		t.Fatal(err)
	}
	sr := tracetest.NewSpanRecorder()
	cfg.spans = sr
	cfg.skipNameValidation = true
	cfg.controllerRuntimeQueue = controllerRuntimeQueue
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, nil) }()
	// Stop once every worker is in a reconcile.
	deadline := time.Now().Add(time.Minute)
	for working(sr) < cfg.Workers {
		if time.Now().After(deadline) {
			t.Fatalf("the workers did not start within a minute:\n%s", out)
		}
		select {
		case err := <-errc:
			t.Fatalf("run stopped early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.String()
}

// TestStopReportsNoReconcilerErrors stops the example with its workers
// busy and keys pending, on otelqueue's queue and on controller-runtime's
// own. With either queue controller-runtime's workers take dozens of keys
// with the cancelled ctx before the queue is shut down (how many depends on
// the scheduling); the example's reconciler returns those without an error,
// so that neither logs a "Reconciler error" line (on main, both logged
// about 55).
func TestStopReportsNoReconcilerErrors(t *testing.T) {
	interrupted := func(s string) int {
		m := regexp.MustCompile(`(\d+) reconciles interrupted by the stop`).FindStringSubmatch(s)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	ours := stopWhileBusy(t, false)
	theirs := stopWhileBusy(t, true)
	t.Logf("reconciles interrupted by the stop: otelqueue's queue %d, controller-runtime's %d", interrupted(ours), interrupted(theirs))
	for what, out := range map[string]string{"otelqueue's queue": ours, "controller-runtime's queue": theirs} {
		if n := strings.Count(out, `"Reconciler error"`); n > 0 {
			t.Errorf("stopping with %s logs %d Reconciler error lines:\n%s", what, n, out)
		}
	}
}

// working counts the reconciler's "work" spans started and not ended.
func working(sr *tracetest.SpanRecorder) int {
	n := 0
	for _, s := range sr.Started() {
		if s.Name() == "work" {
			n++
		}
	}
	for _, s := range sr.Ended() {
		if s.Name() == "work" {
			n--
		}
	}
	return n
}
