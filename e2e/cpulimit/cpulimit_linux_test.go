package cpulimit

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// The load: churn reconciles a second, each burning reconcileCPU on its
// thread's CPU clock: 0.72 cores of reconcile CPU alone, more than the
// quota's half core, well under the machine's 2.
const (
	churn        = 12
	reconcileCPU = 60 * time.Millisecond
)

// Figures of the library's classifier, read from package bottleneck: the
// utilization the cores needed aim at, and the share of the cores from
// which the class is cpu (the table's threshold of cpu_utilization).
const targetUtilization = bottleneck.TargetUtilization

var cpuUtilizationShare = func() float64 {
	for _, r := range bottleneck.Rules() {
		if r.Signal == "cpu_utilization" {
			return r.Threshold
		}
	}
	panic("package bottleneck's table has no cpu_utilization rule")
}()

// coresForLoad is what the requested load needs at targetUtilization, for
// its reconciles' burned CPU alone: 1.03 cores.
var coresForLoad = churn * reconcileCPU.Seconds() / targetUtilization

// probeWithin is how soon after the lift an adaptive pool the CPU shrank
// must try more workers: its CPU's signs gone for two 5 s windows, with a
// window of slack.
const probeWithin = 25 * time.Second

// TestCPULimit runs the app in a cgroup of half a core with a load that
// needs more, and lifts the quota 40 s in: first with a fixed pool of 8
// workers, then with an adaptive pool that starts at 4. While the quota
// holds, the summary line's class is cpu, it never asks for more workers,
// it gives the cores needed as a lower bound above the quota, and the
// adaptive pool shrinks for the CPU and never grows for demand; once the
// quota is gone, the quota's class is gone (the node's CPU wait, while
// the backlog drains on cores the app's own API server shares, may stay
// in a minority of lines), the line shows the machine's cores and the
// cores the load needs, and the pool grows again.
func TestCPULimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the test runs the example app twice for 75 s")
	}
	cg := makeCgroup(t)

	ctx, bin := appFor(t)

	available := availableCores()
	load := []string{
		"-reconcile-cpu", reconcileCPU.String(), "-churn", strconv.Itoa(churn), "-burst-every", "0", "-error-rate", "0",
		"-metrics-addr", "", "-summary-interval", "5s", "-duration", fmt.Sprintf("%gs", runFor.Seconds()),
	}
	runs := []*run{
		{name: "A", title: "a fixed pool of 8 workers", fixed: 8, args: append([]string{"-workers", "8"}, load...)},
		{name: "B", title: "an adaptive pool, 1 to 32 workers, starting at 4", args: append([]string{"-workers", "4", "-adaptive-workers", "1:32"}, load...)},
	}
	// One after the other: on a 2-core machine, side by side they would
	// take each other's CPU after the lift.
	t.Run("A fixed", func(t *testing.T) {
		r := runs[0]
		runApp(ctx, t, r, cg, bin)
		checkClassUnderQuota(t, r)
		checkFixedUnderQuota(t, r)
		checkFixedLifted(t, r, available)
	})
	t.Run("B adaptive", func(t *testing.T) {
		r := runs[1]
		runApp(ctx, t, r, cg, bin)
		checkClassUnderQuota(t, r)
		checkAdaptiveUnderQuota(t, r)
		checkAdaptiveLifted(t, r)
	})

	header := fmt.Sprintf("Each run starts the app in the %s from its first instruction with a quota of %d µs every %d µs (%.2f cores), "+
		"and lifts the quota (%s) %v after the start. Without the quota the app has %.2f cores (min(GOMAXPROCS, NumCPU); NumCPU %d). "+
		"The load asks for %d reconciles/s of %v of CPU each: %.2f cores at utilization %.1f for that CPU alone. "+
		"Judged: the summary lines from %v after the start to the lift, and from %v after the lift to the end.\n",
		cg, quotaMicros, periodMicros, quotaCores, cg.liftText(), liftAfter, available, runtime.NumCPU(),
		churn, reconcileCPU, coresForLoad, targetUtilization, warmup, transition)
	rep := report(header, runs)
	t.Logf("report:\n%s", rep)
	if dir := os.Getenv("OTELQUEUE_E2E_RESULTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Error(err)
		} else if err := os.WriteFile(filepath.Join(dir, "cpulimit.md"), []byte(rep), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// availableCores is the cores the app has without the quota, as its
// procstat reads them: min(GOMAXPROCS, NumCPU). The app's GOMAXPROCS is
// the $GOMAXPROCS it inherits or, without a quota, its CPUs, which the
// test process's NumCPU stands for (the same machine, the same affinity).
func availableCores() float64 {
	n := runtime.NumCPU()
	if v, err := strconv.Atoi(os.Getenv("GOMAXPROCS")); err == nil && v > 0 {
		n = min(n, v)
	}
	return float64(n)
}

// checkClassUnderQuota checks the lines of either run while the quota
// holds: the app reads the quota's half core, and the class is cpu in at
// least 4 of them and in most.
func checkClassUnderQuota(t *testing.T, r *run) {
	t.Helper()
	lines := r.judged(phaseQuota)
	cpu := 0
	var cores []string
	for _, s := range lines {
		if s.class == "cpu" {
			cpu++
		}
		if !s.cpuKnown || math.Abs(s.cpuCores-quotaCores) > 0.005 {
			cores = append(cores, fmt.Sprintf("%s: %s", r.since(s.at), cpuText(s)))
		}
	}
	r.check(t, cpu >= 4 && 2*cpu > len(lines), "under the quota, the class is cpu in %d of %d judged lines (want at least 4, and most)", cpu, len(lines))
	r.check(t, len(lines) > 0 && len(cores) == 0, "under the quota, every judged line shows the quota's cores, cpu=U/%.2f (the app's own reading of its cgroup)%s", quotaCores, listed(cores))
}

// checkFixedUnderQuota checks run A's lines while the quota holds: no
// recommendation of more workers, and a lower bound of the cores needed,
// above the quota.
func checkFixedUnderQuota(t *testing.T, r *run) {
	t.Helper()
	lines := r.judged(phaseQuota)
	var more, bound []string
	var cores []float64
	for _, s := range lines {
		if strings.HasPrefix(s.rec, "→ recommend") {
			more = append(more, fmt.Sprintf("%s: %s", r.since(s.at), s.rec))
		}
		if s.size == "" {
			continue
		}
		cores = append(cores, s.cores)
		if s.atLeast != (s.class == "cpu") {
			bound = append(bound, fmt.Sprintf("%s: class %s, %s", r.since(s.at), orNone(s.class), s.size))
		}
	}
	r.check(t, len(more) == 0, "under the quota, no line recommends more workers (→ recommend)%s", listed(more))
	r.check(t, len(bound) == 0, "under the quota, every size part says cores-needed>= (a lower bound) when its class is cpu, and = when not%s", listed(bound))
	m := median(cores)
	r.check(t, m > quotaCores, "under the quota, the median cores-needed is %.2f over %d lines (%s), want above the quota's %.2f", m, len(cores), floats(cores), quotaCores)
}

// nodeWait says whether s's class is cpu by the CPU wait: the node's
// CPU, not the quota's. After the lift the app's own API server and etcd
// share the machine's cores with it, and the drain of the backlog the
// quota left can make its threads wait for one: that is the class's
// truth, not the quota's, as long as it is not most of the lines (the
// load needs 0.75 of the cores).
func nodeWait(s summary) bool { return s.class == "cpu" && s.signal == "cpu-wait" }

// checkNodeWait checks that fewer than half of lines say cpu by the CPU
// wait (nodeWait).
func checkNodeWait(t *testing.T, r *run, lines []summary) {
	t.Helper()
	var waits []string
	for _, s := range lines {
		if nodeWait(s) {
			waits = append(waits, r.since(s.at))
		}
	}
	r.check(t, 2*len(waits) < len(lines), "after the lift, fewer than half of the %d judged lines say cpu by the node's CPU wait (the backlog's drain on cores the app's API server shares)%s", len(lines), listed(waits))
}

// checkFixedLifted checks run A's lines after the lift: no class but
// workers or none (or, in fewer than half of them, the node's CPU wait),
// the machine's cores, less than cpuUtilizationShare of them used, and
// the cores the load needs for its burned CPU.
func checkFixedLifted(t *testing.T, r *run, available float64) {
	t.Helper()
	lines := r.judged(phaseLifted)
	var classes, cpu []string
	var cores []float64
	for _, s := range lines {
		if s.class != "workers" && s.class != "none" && !nodeWait(s) {
			classes = append(classes, fmt.Sprintf("%s: %s", r.since(s.at), orNone(s.class)))
		}
		if !s.cpuKnown || math.Abs(s.cpuCores-available) > 0.005 || s.cpuUsed >= cpuUtilizationShare*available {
			cpu = append(cpu, fmt.Sprintf("%s: %s", r.since(s.at), cpuText(s)))
		}
		if s.size != "" {
			cores = append(cores, s.cores)
		}
	}
	r.check(t, len(lines) >= 3, "after the lift, %d judged lines (want at least 3)", len(lines))
	r.check(t, len(classes) == 0, "after the lift, the class is workers or none in every judged line (no cpu but the node's CPU wait)%s", listed(classes))
	checkNodeWait(t, r, lines)
	r.check(t, len(cpu) == 0, "after the lift, every judged line shows cpu=U/%.2f cores with U under %.2f%s", available, cpuUtilizationShare*available, listed(cpu))
	m, lo, hi := median(cores), 0.9*coresForLoad, 3*coresForLoad
	r.check(t, m >= lo && m <= hi, "after the lift, the median cores-needed is %.2f over %d lines (%s), want from %.2f (%.2f for the burned CPU alone, less 10%% for the arrivals' noise) to %.2f", m, len(cores), floats(cores), lo, coresForLoad, hi)
}

// checkAdaptiveUnderQuota checks run B while the quota holds: the pool
// never grows for demand or wait, shrinks for the CPU at least once, and
// its count never passes its start of 4 after the warm-up.
func checkAdaptiveUnderQuota(t *testing.T, r *run) {
	t.Helper()
	var grew, all []string
	shrank := 0
	for _, d := range r.decisions {
		if r.lift.IsZero() || !d.at.Before(r.lift) {
			continue
		}
		all = append(all, fmt.Sprintf("%s: %d → %d for %s", r.since(d.at), d.from, d.to, d.reason))
		if d.to > d.from && (d.reason == "demand" || d.reason == "wait") {
			grew = append(grew, fmt.Sprintf("%s: %d → %d for %s", r.since(d.at), d.from, d.to, d.reason))
		}
		if d.to < d.from && d.reason == "cpu" {
			shrank++
		}
	}
	r.check(t, len(grew) == 0, "under the quota, the pool never grows for demand or wait%s", listed(grew))
	r.check(t, shrank > 0, "under the quota, the pool shrinks for cpu %d times (want at least once); its decisions before the lift%s", shrank, orList(all))
	var over []string
	for _, s := range r.judged(phaseQuota) {
		if s.pool == "" || s.workers > 4 {
			over = append(over, fmt.Sprintf("%s: %s", r.since(s.at), orNone(s.pool)))
		}
	}
	r.check(t, len(over) == 0, "under the quota, the judged lines show workers=N with N at most 4%s", listed(over))
}

// checkAdaptiveLifted checks run B after the lift: no class cpu but the
// node's CPU wait, in fewer than half of the lines (nodeWait), and the
// pool not stuck at what the CPU left it: it grows, to probe or for
// demand, within probeWithin.
func checkAdaptiveLifted(t *testing.T, r *run) {
	t.Helper()
	lines := r.judged(phaseLifted)
	var cpu []string
	for _, s := range lines {
		if s.class == "cpu" && !nodeWait(s) {
			cpu = append(cpu, fmt.Sprintf("%s: cpu (%s)", r.since(s.at), s.signal))
		}
	}
	r.check(t, len(lines) >= 3, "after the lift, %d judged lines (want at least 3)", len(lines))
	r.check(t, len(cpu) == 0, "after the lift, no judged line says bottleneck=cpu by the quota's signs or GOMAXPROCS%s", listed(cpu))
	checkNodeWait(t, r, lines)
	grew := ""
	for _, d := range r.decisions {
		if !r.lift.IsZero() && d.at.After(r.lift) && !d.at.After(r.lift.Add(probeWithin)) &&
			d.to > d.from && (d.reason == "probe" || d.reason == "demand") {
			grew = fmt.Sprintf("%d → %d for %s, %v after the lift", d.from, d.to, d.reason, d.at.Sub(r.lift).Round(100*time.Millisecond))
			break
		}
	}
	r.check(t, grew != "", "after the lift, the pool grows to probe or for demand within %v: %s", probeWithin, orNone(grew))
}

// cpuText is a line's cpu part as it shows it.
func cpuText(s summary) string {
	if !s.cpuKnown {
		return "no cpu="
	}
	return fmt.Sprintf("cpu=%.2f/%.2f cores", s.cpuUsed, s.cpuCores)
}

// listed is ": a; b" for the items that broke a rule, "" for none.
func listed(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return ": " + strings.Join(items, "; ")
}

// orList is listed(items), or ": none".
func orList(items []string) string {
	if len(items) == 0 {
		return ": none"
	}
	return listed(items)
}

// floats is xs in their order, to 2 decimals.
func floats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(s, " ")
}
