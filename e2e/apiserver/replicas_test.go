package apiserver

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The leader election of TestReplicas: short, so that a takeover after the
// leader's death takes seconds (controller-runtime's defaults are 15 s,
// 10 s and 2 s).
const (
	replicaLease    = 4 * time.Second
	replicaRenew    = 3 * time.Second
	replicaRetry    = 500 * time.Millisecond
	replicaObjects  = 200
	replicaChurn    = 20
	replicaWorkers  = 4
	replicaStandbys = 20 * time.Second // how long the standby stands by before the leader dies
	// takeoverWithin is the time from the leader's death within which the
	// standby must lead: the lease, a retry period, and room for a loaded
	// machine.
	takeoverWithin = 30 * time.Second
	// replicaConverge is the time the new leader gets to reconcile every
	// ConfigMap to its last version.
	replicaConverge = 60 * time.Second
)

// TestReplicas runs two replicas of the controller-runtime example with
// leader election (-leader-elect) on the shared API server, with
// controller-runtime's EnableWarmup off and on (-warmup), as a Deployment
// of two replicas does: the first leads and runs the workload (20 writes a
// second over 200 ConfigMaps), the second stands by for replicaStandbys,
// then the leader is killed (SIGKILL: no release of its Lease) and the
// standby must take over.
//
// It checks what a replica's signals must say: while standing by, the
// standby's summary lines say so and carry no class (without warm-up: no
// queue yet; with it: a queue filled by its sources, workqueue_standby 1,
// workqueue_oldest_pending_item_seconds 0 though its keys have been ready
// for seconds) and it reconciles nothing; the leader's queue is not
// standby. After the leader's death: the standby leads within
// takeoverWithin, every ConfigMap ends reconciled to its last version (none
// left by the dead leader), the new leader's queue is no longer standby, and
// its queue-wait histogram holds no wait as long as the time it stood by:
// the keys its warm queue held waited from the takeover, not from its list.
// The new leader exits 0 on SIGTERM.
func TestReplicas(t *testing.T) {
	cr := exampleNamed(t, "controller-runtime")
	kubeconfig := shared.kubeconfig(t, "otelqueue-replicas", "otelqueue:replicas")
	for _, warmup := range []bool{false, true} {
		name := "cold"
		if warmup {
			name = "warm"
		}
		t.Run(name, func(t *testing.T) { replicas(t, cr, kubeconfig, warmup) })
	}
}

func replicas(t *testing.T, cr example, kubeconfig string, warmup bool) {
	ns := shared.namespace(t, "otelqueue-replicas")
	common := []string{"-kubeconfig", kubeconfig, "-namespace", ns, "-workers", strconv.Itoa(replicaWorkers),
		"-leader-elect", "-leader-election-lease-duration", replicaLease.String(),
		"-leader-election-renew-deadline", replicaRenew.String(), "-leader-election-retry-period", replicaRetry.String()}
	if warmup {
		common = append(common, "-warmup")
	}
	where := "replicas-" + map[bool]string{false: "cold", true: "warm"}[warmup]

	// The first replica leads, and its workload writes.
	leader := startExample(t, cr, where+"-a", append(common, "-generate",
		"-objects", strconv.Itoa(replicaObjects), "-churn", strconv.Itoa(replicaChurn))...)
	if _, ok := leader.waitLine("leading: ", time.Minute); !ok {
		t.Fatalf("the first replica did not lead within a minute")
	}
	drained(leader)

	// The second stands by.
	standby := startExample(t, cr, where+"-b", common...)
	standbyStart := time.Now()
	time.Sleep(replicaStandbys)
	if at, ok := standby.lineWith("leading: "); ok {
		t.Fatalf("the second replica leads beside the first: %s", at)
	}
	lines := standby.summaries()
	noQueue := standby.count("standby, no queue yet")
	if warmup {
		if len(lines) < 5 {
			t.Fatalf("the warm standby wrote %d summary lines in %v, want 5 or more; its log:\n%s", len(lines), replicaStandbys, lastLines(strings.Join(standby.log(), "\n"), 20))
		}
		for _, s := range lines {
			if !s.standby || s.bottleneck != "" || s.reconciles > 0 {
				t.Errorf("a warm standby's line: %s\nwant %q, no class and no reconcile", s.line, standbyMark)
			}
		}
		if last := lines[len(lines)-1]; last.depth == 0 {
			t.Errorf("the warm standby's queue is empty (%s): its sources should fill it", last.line)
		}
	} else if noQueue < 5 || len(lines) > 0 {
		t.Errorf("a cold standby: %d lines say it has no queue yet and %d summary lines; want 5 or more and none", noQueue, len(lines))
	}
	sc := standby.scrape()
	queue := map[string]string{"name": queueName}
	standbyGauge := sc.matching("workqueue_standby", queue)
	switch {
	case !warmup && len(standbyGauge) != 0:
		t.Errorf("a cold standby has a queue: %+v", standbyGauge)
	case warmup && (len(standbyGauge) != 1 || standbyGauge[0].value != 1):
		t.Errorf("the warm standby's workqueue_standby: %+v, want 1", standbyGauge)
	case warmup:
		if d := sc.sum("workqueue_depth", queue); d == 0 {
			t.Errorf("the warm standby's workqueue_depth is 0: its sources should fill its queue")
		}
		if o := sc.matching("workqueue_oldest_pending_item_seconds", queue); len(o) != 1 || o[0].value != 0 {
			t.Errorf("the warm standby's workqueue_oldest_pending_item_seconds: %+v, want 0 (no key waits for a worker yet)", o)
		}
	}
	if n := sc.sum("controller_runtime_reconcile_total", map[string]string{"controller": queueName}); n != 0 {
		t.Errorf("the standby reconciled %v times", n)
	}
	if g := leader.scrape().matching("workqueue_standby", queue); len(g) != 1 || g[0].value != 0 {
		t.Errorf("the leader's workqueue_standby: %+v, want 0", g)
	}

	// The leader dies; the standby takes over.
	killed := time.Now()
	leader.kill()
	stoodBy := killed.Sub(standbyStart)
	line, ok := standby.waitLine("leading: ", takeoverWithin)
	if !ok {
		t.Fatalf("the standby did not lead within %v of the leader's SIGKILL; its log:\n%s", takeoverWithin, lastLines(strings.Join(standby.log(), "\n"), 20))
	}
	tod, _ := timeOfDay(line)
	takeover := sinceTimeOfDay(killed, tod)
	conv := waitConverged(shared, ns, replicaConverge)
	if conv.err != nil || conv.total != replicaObjects || conv.done != conv.total {
		t.Errorf("%d of %d ConfigMaps reconciled to their last version %v after the takeover (List: %v); not: %s",
			conv.done, conv.total, conv.after.Round(time.Millisecond), conv.err, strings.Join(conv.stale, ", "))
	}
	// Wait for the first summary line of the new leader whose interval
	// begins after the takeover, then read its metrics.
	after := time.Now()
	deadline := after.Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ls := standby.summaries(); len(ls) > 0 && ls[len(ls)-1].atOK && sinceTimeOfDay(after, ls[len(ls)-1].at) > summaryInterval {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	sc = standby.scrape()
	if g := sc.matching("workqueue_standby", queue); len(g) != 1 || g[0].value != 0 {
		t.Errorf("the new leader's workqueue_standby: %+v, want 0", g)
	}
	h := sc.histogram("workqueue_queue_duration_seconds", queue)
	// The largest bucket bound below the time the standby stood by: with
	// its standby counted, every key of the warm queue's list waited
	// longer.
	bound := math.Inf(-1)
	var within float64
	for i, le := range h.upper {
		if le < stoodBy.Seconds() {
			bound, within = le, h.count[i]
		}
	}
	if h.total() == 0 || math.IsInf(bound, -1) || within != h.total() {
		t.Errorf("the new leader's queue wait: %v of %v observations within %vs (the standby stood by %v): keys wait from the takeover, not from the standby's list",
			within, h.total(), bound, stoodBy.Round(time.Millisecond))
	}
	var reconciling, standbyLines int
	for _, s := range standby.summaries() {
		switch {
		case s.standby && s.reconciles > 0:
			t.Errorf("a standby line with reconciles: %s", s.line)
		case s.standby:
			standbyLines++
		case s.reconciles > 0:
			reconciling++
		}
	}
	if reconciling == 0 {
		t.Errorf("no summary line of the new leader shows a reconcile")
	}
	standby.stop()

	note := fmt.Sprintf("controller-runtime, two replicas with leader election (lease %v, renew %v, retry %v), warm-up %t, on kube-apiserver %s: "+
		"the standby stood by %v (%d standby lines, %d without a queue), the leader killed, the standby led %v later; "+
		"%d/%d ConfigMaps converged %v after the takeover; the new leader's queue wait p99 %.3fs, %v of %v observations ≤ %vs",
		replicaLease, replicaRenew, replicaRetry, warmup, shared.version, stoodBy.Round(time.Millisecond), standbyLines, noQueue,
		takeover.Round(time.Millisecond), conv.done, conv.total, conv.after.Round(100*time.Millisecond), h.quantile(0.99), within, h.total(), bound)
	t.Log(note)
	report.addNote(note)
}

// kill kills the example with SIGKILL, as a node's failure or the OOM
// killer does: no Lease released, nothing flushed; it waits for the exit.
func (r *exampleRun) kill() {
	r.t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-r.done:
		r.done <- err
	case <-time.After(30 * time.Second):
		r.t.Fatalf("%s on %s did not exit within 30s of SIGKILL", r.ex.name, r.where)
	}
}

// lineWith returns the first line logged so far that contains s.
func (r *exampleRun) lineWith(s string) (string, bool) {
	for _, l := range r.log() {
		if strings.Contains(l, s) {
			return l, true
		}
	}
	return "", false
}

// count returns the number of lines logged so far that contain s.
func (r *exampleRun) count(s string) int {
	n := 0
	for _, l := range r.log() {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// waitLine waits, for at most timeout, until a line that contains s is
// logged, and returns it; false when none came or the example exited.
func (r *exampleRun) waitLine(s string, timeout time.Duration) (string, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l, ok := r.lineWith(s); ok {
			return l, true
		}
		select {
		case err := <-r.done:
			r.done <- err
			return r.lineWith(s)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return "", false
}
