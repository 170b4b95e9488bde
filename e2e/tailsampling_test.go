package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tail sampling of example/collector/config.yaml, on a collector of its
// own (the stack's binary and config, a share of 5% instead of the stack's
// 100%) that sends to the stack's Jaeger. The example app sends every trace
// (HeadSamplerEnv); the collector must keep every failed attempt and every
// slow one, and drop most of the others.

// tailSamplingShare is the probabilistic share of the test's collector, in
// percent: low enough that a policy that keeps too much shows.
const tailSamplingShare = 5

// samplingCollector is a collector with the example config's tail sampling
// at tailSamplingShare, exporting to the stack's Jaeger.
type samplingCollector struct {
	proc        *Process
	otlpGRPC    string
	selfMetrics string
}

func startSamplingCollector(t *testing.T) *samplingCollector {
	t.Helper()
	cfg, err := CollectorConfig()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	c := &samplingCollector{otlpGRPC: addr(0), selfMetrics: addr(3)}
	env := append(CollectorEnv(c.otlpGRPC, addr(1), stack.JaegerOTLPGRPC, addr(2), c.selfMetrics), TailSamplingEnv...)
	env = append(env, "TAIL_SAMPLING_PERCENT="+strconv.Itoa(tailSamplingShare)) // the last value wins
	dir := t.TempDir()
	c.proc = &Process{
		Name:    "otelcol-tailsampling",
		Path:    stack.Collector.Path,
		Args:    []string{"--config", "file:" + cfg},
		Env:     env,
		Dir:     dir,
		LogPath: filepath.Join(dir, "otelcol.log"),
	}
	if err := c.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- last lines of %s:\n%s", c.proc.LogPath, c.proc.Tail(40))
		}
		if err := c.proc.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	})
	if err := waitReady(context.Background(), c.proc, time.Minute, all(
		tcpOpen(c.otlpGRPC),
		httpOK("http://"+c.selfMetrics+"/metrics"),
	)); err != nil {
		t.Fatal(err)
	}
	return c
}

// scrapeSum sums the samples of the series named name whose labels contain
// every one of labels (e.g. `le="1"`) in the Prometheus text exposition at
// url.
func scrapeSum(url, name string, labels ...string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if !every(labels, func(l string) bool { return strings.Contains(rest, l) }) {
			continue
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %v", line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no %s%v at %s", name, labels, url)
	}
	return sum, nil
}

func every[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if !f(v) {
			return false
		}
	}
	return true
}

// rssKBOf returns the resident memory of process pid.
func rssKBOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	return 0
}

// watch polls the collector's traces held (the tail sampler's gauge) and
// its RSS until stop is called, and returns the peaks.
func (c *samplingCollector) watch() (stop func() (peakTraces float64, peakRSSKB int)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peakTraces float64
	var peakRSS int
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := scrapeSum("http://"+c.selfMetrics+"/metrics", "otelcol_processor_tail_sampling_sampling_traces_on_memory"); err == nil {
				peakTraces = max(peakTraces, v)
			}
			peakRSS = max(peakRSS, rssKBOf(c.proc.Pid()))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() (float64, int) {
		close(done)
		wg.Wait()
		return peakTraces, peakRSS
	}
}

// appCounts are the counts of the app's "final:" line.
type appCounts struct{ reconciles, ok, errors, interrupted int }

var finalLine = regexp.MustCompile(`final: \d+ adds, \d+ retries, (\d+) reconciles \((\d+) ok, (\d+) errors, \d+ panics, (\d+) interrupted by the stop\)`)

func (a *appRun) counts(t *testing.T) appCounts {
	t.Helper()
	m := finalLine.FindStringSubmatch(a.output())
	if m == nil {
		t.Fatalf("app %s printed no final line matching %v:\n%s", a.service, finalLine, a.output())
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return appCounts{reconciles: n(m[1]), ok: n(m[2]), errors: n(m[3]), interrupted: n(m[4])}
}

// errorLine is a "Reconciler error" line of otelqueue's Runner (log.go):
// slog's text format, with the attempt's trace.
var errorLine = regexp.MustCompile(`ERROR Reconciler error .* trace_id=([0-9a-f]{32}) span_id=[0-9a-f]{16} trace_sampled=(true|false)`)

// errorTraces returns the trace IDs of the app's "Reconciler error" lines
// and whether each was sampled.
func (a *appRun) errorTraces() (ids []string, sampled []bool) {
	for _, m := range errorLine.FindAllStringSubmatch(a.output(), -1) {
		ids = append(ids, m[1])
		sampled = append(sampled, m[2] == "true")
	}
	return ids, sampled
}

// attempt is what a kept trace says about its attempt.
type attempt struct {
	traceID string
	result  string        // the reconcile span's result attribute
	root    time.Duration // enqueue -> Done
	work    time.Duration // the reconcile span
}

// keptAttempts returns the service's attempts whose traces are in Jaeger.
func keptAttempts(service string) ([]attempt, error) {
	traces, err := stack.JaegerAPI.FindTraces(context.Background(), TraceQuery{Service: service, Operation: rootSpan, Limit: 5000, Lookback: 15 * time.Minute})
	if err != nil {
		return nil, err
	}
	var out []attempt
	for _, tr := range traces {
		roots, recs := tr.SpansNamed(rootSpan), tr.SpansNamed("reconcile")
		if len(roots) != 1 || len(recs) != 1 {
			return nil, fmt.Errorf("trace %s has %d root and %d reconcile spans, want one each (a trace kept in part?)", tr.TraceID, len(roots), len(recs))
		}
		res, _ := recs[0].Tag("result")
		out = append(out, attempt{
			traceID: tr.TraceID,
			result:  fmt.Sprint(res),
			root:    time.Duration(roots[0].DurationUS) * time.Microsecond,
			work:    time.Duration(recs[0].DurationUS) * time.Microsecond,
		})
	}
	return out, nil
}

// TestTailSampling runs the example app against a collector with the
// example config's tail sampling and checks, from the app's own output and
// metrics, which attempts' traces reach Jaeger.
func TestTailSampling(t *testing.T) {
	col := startSamplingCollector(t)
	env := OTelEnvGRPC(col.otlpGRPC)
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	baseRSS := rssKBOf(col.proc.Pid())
	spans0, _ := scrapeSum("http://"+col.selfMetrics+"/metrics", "otelcol_receiver_accepted_spans")

	t.Run("every failed attempt is kept, most fast successes are not", func(t *testing.T) {
		svc := "e2e-tailsampling-errors-" + suffix
		const runFor = 10 * time.Second
		stopWatch := col.watch()
		// -log-simulated-failures: a "Reconciler error" line for every
		// failure within the Runner's default limit, not only the first 3.
		a := startAppEnv(t, env, svc, "-workers", "4", "-churn", "8", "-latency", "2ms", "-latency-spread", "0",
			"-error-rate", "0.5", "-log-simulated-failures", "-burst-every", "0", "-objects", "20")
		// While it runs: how long an error line's trace takes to show in
		// Jaeger (the export delay, the decision and the batch).
		var delays []time.Duration
		start := time.Now()
		measured := map[string]bool{}
		for time.Since(start) < runFor {
			ids, _ := a.errorTraces()
			if len(ids) == 0 || measured[ids[len(ids)-1]] {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			id, seen := ids[len(ids)-1], time.Now()
			measured[id] = true
			Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
				_, err := stack.JaegerAPI.GetTrace(context.Background(), id)
				return err
			})
			delays = append(delays, time.Since(seen))
		}
		a.stop()
		peakTraces, peakRSS := stopWatch()
		spans1, _ := scrapeSum("http://"+col.selfMetrics+"/metrics", "otelcol_receiver_accepted_spans")
		n := a.counts(t)
		ids, sampled := a.errorTraces()
		if n.errors < 20 || n.ok < 40 {
			t.Fatalf("the app made %d errors and %d successes: too few to judge the sampling", n.errors, n.ok)
		}

		// Every failed attempt: all of them (the app's count), and each one
		// a "Reconciler error" line points at.
		var kept []attempt
		Eventually(t, 60*time.Second, 500*time.Millisecond, func() error {
			var err error
			if kept, err = keptAttempts(svc); err != nil {
				return err
			}
			if e := countIf(kept, func(x attempt) bool { return x.result == "error" }); e != n.errors {
				return fmt.Errorf("%d failed attempts in Jaeger, the app made %d", e, n.errors)
			}
			return nil
		})
		byID := map[string]attempt{}
		for _, x := range kept {
			byID[x.traceID] = x
		}
		if len(ids) == 0 {
			t.Fatal("no Reconciler error line with a trace_id in the app's output")
		}
		for i, id := range ids {
			if !sampled[i] {
				t.Errorf("error line of trace %s says trace_sampled=false: the app's head sampler must send every trace", id)
			}
			if x, ok := byID[id]; !ok || x.result != "error" {
				t.Errorf("the Reconciler error line of trace %s leads to %+v in Jaeger (found: %v), want a failed attempt", id, x, ok)
			}
		}

		// Fast successes: the share, no more (kept by the slow policy:
		// those that waited, e.g. after a long backoff, over 1s).
		fast := countIf(kept, func(x attempt) bool { return x.result == "success" && x.root < time.Second })
		slow := countIf(kept, func(x attempt) bool { return x.result == "success" && x.root >= time.Second })
		t.Logf("app: %d reconciles, %d ok, %d errors (%d error lines); Jaeger: %d traces, %d failed, %d fast successes (%.1f%% of successes, share %d%%), %d slow successes",
			n.reconciles, n.ok, n.errors, len(ids), len(kept), n.errors, fast, 100*float64(fast)/float64(n.ok), tailSamplingShare, slow)
		if fast*4 > n.ok {
			t.Errorf("%d of %d successful attempts kept though fast: the policies keep far more than the %d%% share", fast, n.ok, tailSamplingShare)
		}
		slices.Sort(delays)
		secs := time.Since(start).Seconds()
		t.Logf("error line -> trace in Jaeger: %v (decision_wait_after_root_received 1s, app OTEL_BSP_SCHEDULE_DELAY=500ms); collector: %.0f spans/s in, peak %v traces held, RSS %d kB idle, %d kB peak",
			delays, (spans1-spans0)/secs, peakTraces, baseRSS, peakRSS)
	})

	t.Run("every slow attempt is kept", func(t *testing.T) {
		svc := "e2e-tailsampling-slow-" + suffix
		// Every reconcile works 1.2s: over the config's 1s threshold.
		a := startAppEnv(t, env, svc, "-workers", "4", "-churn", "3", "-latency", "1200ms", "-latency-spread", "0",
			"-error-rate", "0", "-burst-every", "0", "-objects", "10")
		time.Sleep(8 * time.Second)
		// The attempts that worked over 1s so far, from the app's own
		// work-duration histogram; those still running may be cut short
		// by the stop.
		count, err := scrapeSum(a.metrics, "workqueue_work_duration_seconds_count")
		if err != nil {
			t.Fatal(err)
		}
		under1s, err := scrapeSum(a.metrics, "workqueue_work_duration_seconds_bucket", `le="1"`)
		if err != nil {
			t.Fatal(err)
		}
		a.stop()
		slowWork := int(count - under1s)
		if slowWork < 5 {
			t.Fatalf("only %d reconciles over 1s: too few to judge the sampling", slowWork)
		}
		var kept []attempt
		Eventually(t, 60*time.Second, 500*time.Millisecond, func() error {
			if kept, err = keptAttempts(svc); err != nil {
				return err
			}
			if k := countIf(kept, func(x attempt) bool { return x.work >= time.Second }); k < slowWork {
				return fmt.Errorf("%d attempts that worked over 1s in Jaeger, the app counted %d", k, slowWork)
			}
			return nil
		})
		n := a.counts(t)
		fast := countIf(kept, func(x attempt) bool { return x.root < time.Second })
		t.Logf("app: %d reconciles (%d over 1s before the stop, %d interrupted by it); Jaeger: %d traces, %d under 1s (the initial list's no-op attempts, share %d%%)",
			n.reconciles, slowWork, n.interrupted, len(kept), fast, tailSamplingShare)
	})
}

func countIf[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}
