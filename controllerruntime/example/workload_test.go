package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/otelqueue/otelqueue/internal/exampletest"
)

// TestSummarySaysWhenTheClientLimitHoldsTheWorkloadBack runs the example
// on the fake cluster with a real cluster's limiter far below what the
// workload asks for: the summary shows the writes done against those
// requested, and says it is behind and why (on main, it said nothing, and
// on a real cluster at client-go's 5 requests/s 8 of 250 updates landed).
func TestSummarySaysWhenTheClientLimitHoldsTheWorkloadBack(t *testing.T) {
	out := exampletest.CaptureLog(t)
	cfg, err := parseFlags([]string{"-metrics-addr", "", "-summary-interval", "300ms", "-kube-qps", "5", "-kube-burst", "1", "-churn", "50", "-objects", "20", "-latency", "1ms"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.skipNameValidation = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, nil) }()
	writes := regexp.MustCompile(`writes/s=([0-9.]+)/([0-9.]+)`)
	l := out.WaitFor(t, "queue configmaps:", writes, errc)
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("run: %v", err)
	}
	m := writes.FindStringSubmatch(l)
	done, _ := strconv.ParseFloat(m[1], 64)
	requested, _ := strconv.ParseFloat(m[2], 64)
	if done >= 0.9*requested {
		t.Fatalf("at -kube-qps 5 the workload kept up with -churn 50: %s", l)
	}
	if !strings.Contains(l, "behind: client rate limit (-kube-qps 5 -kube-burst 1)") {
		t.Errorf("the workload does %v of %v writes/s and does not say it is held back by the client limit: %s", done, requested, l)
	}
}
