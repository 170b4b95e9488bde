package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// rootSpan is the root of an attempt in both examples.
	rootSpan = "process configmaps"
	// writeSpan is the workload's span around each update it writes.
	writeSpan = "workload update"
	// traceparentAnnotation is where the workload leaves its span context.
	traceparentAnnotation = "otelqueue.github.io/traceparent"
	// queueName is the queue's name label in both examples.
	queueName = "configmaps"
	// warmup is the least number of summary lines (one a second) skipped
	// before the measured window, which starts once the queue has drained
	// the initial list (a summary line with depth=0).
	warmup = 3
	// window is the number of summary lines measured.
	window = 15
)

// TestExamplesOnAPIServer runs each example with -kubeconfig against the
// real control plane, at its default flags, and checks what its
// fake-cluster test checks: reconciles succeed, the workload's writes keep
// their requested rate, the traceparent annotation it writes is on the
// objects and the attempts link to it (for controller-runtime's For(),
// through ObjectLinkSource: workqueue.link=lookup), the exemplars carry the
// trace ids of exported traces, and a SIGTERM stop logs no error. Then it
// runs the example with the same flags on its embedded fake cluster, checks
// the same, and reports both runs side by side.
func TestExamplesOnAPIServer(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			ns := shared.namespace(t, "otelqueue-"+ex.name)
			kubeconfig := shared.kubeconfig(t, "otelqueue-example", "otelqueue:examples")
			onServer := measure(t, ex, shared.name, "-kubeconfig", kubeconfig, "-namespace", ns, "-generate")
			checkAnnotations(t, onServer, ns)
			fake := measure(t, ex, "fake")
			report.add(onServer.row(ex.name, "kube-apiserver "+shared.version, ""))
			report.add(fake.row(ex.name, "embedded API server", ""))
		})
	}
}

// measured is what one run showed over its measured window.
type measured struct {
	run               *exampleRun
	steady            []summary
	before, after     scrape
	spans             []span
	queueWait, work   histogram // observations of the window
	reconciles        float64   // per second, mean over the window
	writes, requested float64   // per second
	utilization       float64
	// outside is the median time a reconcile of the window spent outside
	// its simulated work: the cache read and the Update request.
	outside time.Duration
	// queued are the exact waits of the window's attempts (their queued
	// spans), watch the delays from a write to its key's enqueue.
	queued, watch []time.Duration
}

// workSpans names each example's span of simulated work.
var workSpans = map[string]string{"app": "simulated work", "controller-runtime": "work"}

// measure runs ex with args, skips the warm-up, measures a window, stops
// it with SIGTERM and checks the run (see TestExamplesOnAPIServer).
func measure(t *testing.T, ex example, where string, args ...string) *measured {
	t.Helper()
	return measureWith(t, ex, where, checkRun, args...)
}

// measureWith is measure with the checks check (none if nil).
func measureWith(t *testing.T, ex example, where string, check func(*testing.T, *measured), args ...string) *measured {
	t.Helper()
	r := startExample(t, ex, where, args...)
	m := &measured{run: r}
	start := drained(r)
	from := time.Now()
	m.before = r.scrape()
	all := r.waitSummaries(start+window, time.Minute+window*time.Second)
	m.after = r.scrape()
	r.stop()
	m.steady = all[start : start+window]
	m.spans = r.spans()
	m.outside = median(outsideWork(m.spans, workSpans[ex.name], from))
	m.queued = queuedFor(m.spans, from)
	m.watch = watchDelays(m.spans, writeSpan, from)
	for _, s := range m.steady {
		m.reconciles += s.reconciles / window
		m.writes += s.writes / window
		m.requested += s.requested / window
		m.utilization += s.utilization / window
	}
	q := map[string]string{"name": queueName}
	m.queueWait = m.after.histogram("workqueue_queue_duration_seconds", q).minus(m.before.histogram("workqueue_queue_duration_seconds", q))
	m.work = m.after.histogram("workqueue_work_duration_seconds", q).minus(m.before.histogram("workqueue_work_duration_seconds", q))

	if check != nil {
		check(t, m)
	}
	return m
}

// drained waits for the end of the warm-up: at least warmup summary lines,
// the last with an empty queue. It returns the number of lines so far.
func drained(r *exampleRun) int {
	r.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for n := warmup; ; n++ {
		s := r.waitSummaries(n, time.Until(deadline))
		if s[n-1].depth == 0 {
			return n
		}
	}
}

// reconcileCounts are the series each example counts its successful
// reconciles in: otelqueue's Runner, or controller-runtime's controller.
var reconcileCounts = map[string]struct {
	name   string
	labels map[string]string
}{
	"app":                {"workqueue_reconcile_results_total", map[string]string{"name": queueName, "result": "success"}},
	"controller-runtime": {"controller_runtime_reconcile_total", map[string]string{"controller": queueName, "result": "success"}},
}

// checkRun checks a run as the examples' fake-cluster tests do.
func checkRun(t *testing.T, m *measured) {
	t.Helper()
	r := m.run
	what := r.ex.name + " on " + r.where

	c := reconcileCounts[r.ex.name]
	if ok := m.after.sum(c.name, c.labels); ok == 0 || m.reconciles == 0 {
		t.Errorf("%s: %v successful reconciles (%s), %.1f reconciles/s over the window: the controller did not work", what, ok, c.name, m.reconciles)
	}
	for _, s := range m.steady {
		if !s.hasWrites {
			t.Fatalf("%s: a summary line without the workload's writes: %s", what, s.line)
		}
		if s.hasBehind {
			t.Errorf("%s: the workload fell behind at the default client limits: %s", what, s.line)
		}
	}
	if m.writes < 0.9*m.requested {
		t.Errorf("%s: writes/s %.1f of %.1f requested over the window, want at least 90%%", what, m.writes, m.requested)
	}

	// Traces: an attempt linked to the write that caused it, with queued
	// and reconcile beneath it.
	writes, traces := map[string]bool{}, map[string]bool{}
	for _, s := range m.spans {
		traces[s.SpanContext.TraceID] = true
		if s.Name == writeSpan {
			writes[s.SpanContext.SpanID] = true
		}
	}
	var roots, linked, lookups int
	children := map[string]map[string]bool{}
	for _, s := range m.spans {
		if children[s.Parent.SpanID] == nil {
			children[s.Parent.SpanID] = map[string]bool{}
		}
		children[s.Parent.SpanID][s.Name] = true
	}
	var shaped int
	for _, s := range m.spans {
		if s.Name != rootSpan {
			continue
		}
		roots++
		if c := children[s.SpanContext.SpanID]; c["queued"] && c["reconcile"] {
			shaped++
		}
		for _, l := range s.Links {
			if writes[l.SpanContext.SpanID] {
				linked++
				if attr(l.Attributes, "workqueue.link") == "lookup" {
					lookups++
				}
			}
		}
	}
	if len(writes) == 0 || roots == 0 || shaped != roots {
		t.Errorf("%s: %d workload writes, %d attempts traced, %d of them with queued and reconcile children", what, len(writes), roots, shaped)
	}
	if linked == 0 {
		t.Errorf("%s: no attempt links to the workload write that caused it (%d attempts, %d writes)", what, roots, len(writes))
	}
	if r.ex.name == "controller-runtime" && lookups == 0 {
		t.Errorf("%s: For()'s attempts link to writes (%d links) but none with workqueue.link=lookup", what, linked)
	}

	// Exemplars: on both histograms, each leading to an exported trace.
	for _, family := range []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
		var n, missing int
		for _, smp := range m.after.matching(family+"_bucket", map[string]string{"name": queueName}) {
			if smp.exemplar == "" {
				continue
			}
			n++
			if !traces[smp.exemplar] {
				missing++
			}
		}
		if n == 0 || missing > 0 {
			t.Errorf("%s: %s has %d exemplars with a trace id, %d of them of no exported trace", what, family, n, missing)
		}
	}

	if bad := errorLines(r.stopLines()); len(bad) > 0 {
		t.Errorf("%s: the stop logged %d error lines:\n%s", what, len(bad), strings.Join(bad, "\n"))
	}
}

// checkAnnotations checks that the ConfigMaps the workload updated in ns
// carry the traceparent annotation, each naming the write the example
// exported. The workload picks the ConfigMap of each update at random, so
// not all were updated: at least half must have been (the examples' default
// flags update as many times as there are ConfigMaps, or more, within the
// run: 1 - 1/e of them at the least).
func checkAnnotations(t *testing.T, m *measured, ns string) {
	t.Helper()
	cms, err := shared.client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writes := map[string]bool{}
	for _, s := range m.spans {
		if s.Name == writeSpan {
			writes[s.SpanContext.TraceID+"-"+s.SpanContext.SpanID] = true
		}
	}
	var annotated, known int
	for _, cm := range cms.Items {
		tp, ok := cm.Annotations[traceparentAnnotation]
		if !ok {
			continue
		}
		annotated++
		// 00-<trace id>-<span id>-<flags>
		if parts := strings.Split(tp, "-"); len(parts) == 4 && writes[parts[1]+"-"+parts[2]] {
			known++
		}
	}
	if len(cms.Items) == 0 || 2*annotated < len(cms.Items) || known != annotated {
		t.Errorf("%d ConfigMaps in %s, %d with %s, %d of those naming an exported workload write; want at least half, all of them known",
			len(cms.Items), ns, annotated, traceparentAnnotation, known)
	}
}

// row is the run's line of the report.
func (m *measured) row(example, cluster, note string) row {
	return row{
		example: example, cluster: cluster,
		reconciles: m.reconciles, writes: m.writes, requested: m.requested, utilization: m.utilization,
		waitP50: m.queueWait.quantile(0.5), waitP99: m.queueWait.quantile(0.99),
		workP50: m.work.quantile(0.5), workP99: m.work.quantile(0.99),
		outside: m.outside, note: note,
		queuedP50: quantile(m.queued, 0.5), queuedP99: quantile(m.queued, 0.99), watchP50: median(m.watch),
	}
}

// describe is a short form of a row for test logs.
func (m *measured) describe() string {
	return fmt.Sprintf("reconciles/s %.1f, writes/s %.1f/%.1f, wait p50 %s p99 %s, work p50 %s p99 %s, outside the simulated work p50 %s",
		m.reconciles, m.writes, m.requested, seconds(m.queueWait.quantile(0.5)), seconds(m.queueWait.quantile(0.99)),
		seconds(m.work.quantile(0.5)), seconds(m.work.quantile(0.99)), m.outside.Round(10*time.Microsecond))
}
