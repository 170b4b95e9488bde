package main

import (
	"context"
	"testing"

	"github.com/otelqueue/otelqueue/internal/exampletest"
)

// TestSummarySaysWhenTheClientLimitHoldsTheWorkloadBack runs the example
// on the embedded cluster with the workload's client limit far below what
// it asks for: the summary shows the writes done against those requested,
// and says it is behind and why (on main, it said nothing, and on a real
// cluster at client-go's 5 requests/s 8 of 250 updates landed).
func TestSummarySaysWhenTheClientLimitHoldsTheWorkloadBack(t *testing.T) {
	out := exampletest.CaptureLog(t)
	cfg, err := parseFlags([]string{"-metrics-addr", "", "-summary-interval", "300ms", "-workload-qps", "5", "-workload-burst", "1", "-churn", "50", "-objects", "20", "-latency", "1ms"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.skipNameValidation = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, nil) }()
	// The 4th line, 1.5 s in (the first interval has no line): 75 writes
	// due, about 8 done.
	l := out.WaitFor(t, 4, "queue configmaps:", exampletest.WritesRE(), errc)
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("run: %v", err)
	}
	exampletest.CheckBehind(t, l, "client rate limit (-workload-qps 5 -workload-burst 1)")
}
