package main

import (
	"context"
	"regexp"
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/otelqueue/otelqueue/example/internal/exampletest"
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

// TestSummaryShowsAdaptiveWorkers runs the example with an adaptive pool
// that starts at one worker under the load of four (40 updates a second of
// 100 ms reconciles): controller-runtime runs MAX reconciles at once
// (controller_runtime_max_concurrent_reconciles), the pool gates them and
// grows for the demand or the wait, its "adaptive workers" line goes to
// the log, and the summary line shows its count and last reason.
func TestSummaryShowsAdaptiveWorkers(t *testing.T) {
	out := exampletest.CaptureLog(t)
	cfg, err := parseFlags([]string{"-metrics-addr", "", "-summary-interval", "300ms", "-adaptive-workers", "1:8", "-workers", "1",
		"-churn", "40", "-objects", "500", "-latency", "100ms"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.skipNameValidation = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, nil) }()
	out.WaitFor(t, 1, "queue configmaps:", regexp.MustCompile(`workers=1 \(adaptive 1\.\.8, no change yet\) adds/s=`), errc)
	// Read from controller-runtime's registry, not a scrape: it is global,
	// and holds the workqueue_* series of the tests before that ran
	// controller-runtime's own queue.
	maxConcurrent := -1.0
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_max_concurrent_reconciles" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "configmaps" {
					maxConcurrent = m.GetGauge().GetValue()
				}
			}
		}
	}
	if maxConcurrent != 8 {
		t.Errorf("controller_runtime_max_concurrent_reconciles is %v, want 8, the pool's MAX", maxConcurrent)
	}
	// The first decision comes after the pool's interval, 5 s.
	out.WaitFor(t, 1, "queue configmaps:", regexp.MustCompile(`workers=([2-8]) \(adaptive 1\.\.8, last: (demand|wait), 1 change\) adds/s=\S+ .* utilization=`), errc)
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("run: %v", err)
	}
	log := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`controller "configmaps" watching ConfigMaps in .* with 1 worker to start, adaptive from 1 to 8`),
		regexp.MustCompile(`INFO adaptive workers queue=configmaps from=1 to=[2-8] reason=(demand|wait) detail="needed \d+`),
	} {
		if !want.MatchString(log) {
			t.Errorf("the log lacks %v:\n%s", want, log)
		}
	}
}
