package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The example app, built from this checkout and run against the real stack:
// its traces in Jaeger, its exemplars in Prometheus, the Grafana dashboard's
// queries, and its behaviour when the collector or Jaeger fail.

const rootSpan = "process configmaps"

// appDir holds the app's binary (~114 MB with its build): TestMain removes
// it with removeAppBinary once the tests are done.
var appDir string

var appBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "otelqueue-e2e-app-")
	if err != nil {
		return "", err
	}
	appDir = dir
	bin := filepath.Join(dir, "app")
	cmd := exec.Command("go", "build", "-o", bin, "./app")
	cmd.Dir = "../example" // the examples' module
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building example/app: %v\n%s", err, out)
	}
	return bin, nil
})

// removeAppBinary removes what appBinary built, if it ran.
func removeAppBinary() {
	if appDir != "" {
		if err := os.RemoveAll(appDir); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: removing the app's build: %v\n", err)
		}
	}
}

// appRun is one run of the example app.
type appRun struct {
	t       *testing.T
	cmd     *exec.Cmd
	service string
	metrics string // its Prometheus endpoint
	done    chan error
	mu      sync.Mutex
	out     []string
}

// startApp runs the app exporting to the stack's collector as service, with
// the workload given by args.
func startApp(t *testing.T, service string, args ...string) *appRun {
	t.Helper()
	return startAppExporting(t, true, service, args...)
}

// startAppExporting is startApp; with export false the app exports no
// telemetry over OTLP (its own /metrics still serves).
func startAppExporting(t *testing.T, export bool, service string, args ...string) *appRun {
	t.Helper()
	var env []string
	if export {
		env = stack.OTelEnv()
	}
	return startAppEnv(t, env, service, args...)
}

// startAppEnv is startApp with the OTEL_* variables env (none: no OTLP
// export) instead of the stack's gRPC settings.
func startAppEnv(t *testing.T, env []string, service string, args ...string) *appRun {
	t.Helper()
	bin, err := appBinary()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args = append([]string{"-metrics-addr", addr, "-summary-interval", "1s"}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "OTEL_SERVICE_NAME="+service, "OTEL_METRIC_EXPORT_INTERVAL=1000", "OTEL_BSP_SCHEDULE_DELAY=500")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &appRun{t: t, cmd: cmd, service: service, metrics: "http://" + addr + "/metrics", done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			a.mu.Lock()
			a.out = append(a.out, sc.Text())
			a.mu.Unlock()
		}
		a.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("app %s output:\n%s", service, a.output())
		}
	})
	Eventually(t, time.Minute, 100*time.Millisecond, func() error {
		_, err := a.reconciles()
		return err
	})
	return a
}

func (a *appRun) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.out, "\n")
}

// stop ends the app with SIGTERM, as a user or Kubernetes would, and
// expects a clean exit within the flush deadline.
func (a *appRun) stop() {
	a.t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.done:
		if err != nil {
			a.t.Fatalf("app %s exited with %v after SIGTERM:\n%s", a.service, err, a.output())
		}
	case <-time.After(30 * time.Second):
		a.t.Fatalf("app %s did not stop within 30s of SIGTERM", a.service)
	}
}

// reconciles returns the app's reconcile count from its own /metrics.
func (a *appRun) reconciles() (float64, error) {
	return scrapeSum(a.metrics, "workqueue_reconcile_results_total")
}

// rssKB returns the app's resident memory.
func (a *appRun) rssKB() int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}

// measure lets the apps run for warmup, then returns each one's reconciles
// per second over the next d and its peak RSS; during is called a third of
// the way in. Apps measured together share the machine's load, so a busy
// machine slows them alike.
func measure(t *testing.T, apps []*appRun, warmup, d time.Duration, during func()) (rates []float64, peaks []int) {
	t.Helper()
	time.Sleep(warmup)
	start := make([]float64, len(apps))
	for i, a := range apps {
		n, err := a.reconciles()
		if err != nil {
			t.Fatal(err)
		}
		start[i] = n
	}
	t0 := time.Now()
	peaks = make([]int, len(apps))
	mid := false
	for time.Since(t0) < d {
		time.Sleep(250 * time.Millisecond)
		for i, a := range apps {
			peaks[i] = max(peaks[i], a.rssKB())
		}
		if !mid && time.Since(t0) >= d/3 && during != nil {
			mid = true
			during()
		}
	}
	secs := time.Since(t0).Seconds()
	for i, a := range apps {
		n, err := a.reconciles()
		if err != nil {
			t.Fatal(err)
		}
		rates = append(rates, (n-start[i])/secs)
	}
	return rates, peaks
}

// attemptTraces returns the service's traces that hold an attempt.
func attemptTraces(t *testing.T, service string, want int) []Trace {
	t.Helper()
	var traces []Trace
	Eventually(t, 90*time.Second, time.Second, func() error {
		var err error
		traces, err = stack.JaegerAPI.FindTraces(context.Background(), TraceQuery{Service: service, Operation: rootSpan, Limit: 200, Lookback: 15 * time.Minute})
		if err != nil {
			return err
		}
		if len(traces) < want {
			return fmt.Errorf("%d traces of %s in Jaeger, want %d", len(traces), service, want)
		}
		return nil
	})
	return traces
}

// checkAttempt verifies one attempt's trace: one root, one queued and one
// reconcile span, both children of the root, queued before reconcile, no
// child starting before its parent, no Jaeger warning. It returns the wait.
func checkAttempt(t *testing.T, tr Trace) time.Duration {
	t.Helper()
	roots, queued, reconcile := tr.SpansNamed(rootSpan), tr.SpansNamed("queued"), tr.SpansNamed("reconcile")
	if len(roots) != 1 || len(queued) != 1 || len(reconcile) != 1 {
		t.Fatalf("trace %s: %d roots, %d queued, %d reconcile spans, want one each", tr.TraceID, len(roots), len(queued), len(reconcile))
	}
	root, q, r := roots[0], queued[0], reconcile[0]
	if q.ParentSpanID() != root.SpanID || r.ParentSpanID() != root.SpanID {
		t.Errorf("trace %s: queued and reconcile must be children of %q", tr.TraceID, rootSpan)
	}
	if q.End().After(r.Start()) {
		t.Errorf("trace %s: queued ends at %v, after reconcile starts at %v", tr.TraceID, q.End(), r.Start())
	}
	for _, s := range tr.Spans {
		if p, ok := tr.Span(s.ParentSpanID()); ok && s.Start().Before(p.Start()) {
			t.Errorf("trace %s: %s starts before its parent %s", tr.TraceID, s.OperationName, p.OperationName)
		}
	}
	if w := tr.AllWarnings(); len(w) > 0 {
		t.Errorf("trace %s: Jaeger warnings %q", tr.TraceID, w)
	}
	return time.Duration(q.DurationUS) * time.Microsecond
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestApp runs the app idle and congested and checks what a user looks at:
// traces, exemplars, the dashboard.
func TestApp(t *testing.T) {
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	idle, congested := "e2e-idle-"+suffix, "e2e-congested-"+suffix

	// Idle: 8 workers for 20 updates a second of 2 ms reconciles, with an
	// adaptive pool, which shrinks them for low utilization once its
	// windows cover its shrink window (a minute: 12 of its 5 s intervals,
	// the first of which may be extended to gather 20 reconciles): the
	// dashboard's adaptive panels have data. The app runs until the pool
	// has logged its change, and 3 s more for the metrics to be exported.
	// 8, not 4: on a CPU starved by CI's other jobs a window's work time
	// can pass 5 ms, a demand of 2 (20/s × 5 ms with the staffing
	// margin), which shrinks 8 but not 4 (to 3, over the shrink share).
	a := startApp(t, idle, "-workers", "8", "-adaptive-workers", "1:8", "-churn", "20", "-latency", "2ms", "-latency-spread", "0",
		"-error-rate", "0.1", "-burst-every", "0", "-objects", "20")
	Eventually(t, 100*time.Second, 200*time.Millisecond, func() error {
		if !strings.Contains(a.output(), "INFO adaptive workers queue=configmaps from=8") {
			return errors.New("the idle app's adaptive pool has not changed its workers yet")
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	a.stop()
	// Congested: 1 worker for 40 updates a second of 40 ms reconciles.
	c := startApp(t, congested, "-workers", "1", "-churn", "40", "-latency", "40ms", "-latency-spread", "0",
		"-error-rate", "0", "-burst-every", "0", "-objects", "200")
	time.Sleep(8 * time.Second)
	c.stop()

	t.Run("jaeger holds queued and reconcile spans per attempt", func(t *testing.T) {
		var waits = map[string][]time.Duration{}
		for _, svc := range []string{idle, congested} {
			for _, tr := range attemptTraces(t, svc, 20) {
				waits[svc] = append(waits[svc], checkAttempt(t, tr))
			}
		}
		mi, mc := median(waits[idle]), median(waits[congested])
		t.Logf("median queued span: idle %v (%d traces), congested %v (%d traces)", mi, len(waits[idle]), mc, len(waits[congested]))
		if mc < 5*mi || mc < 100*time.Millisecond {
			t.Errorf("congested median wait %v, idle %v: a congested run must show much longer waits", mc, mi)
		}
	})

	t.Run("exemplars resolve to traces with a queued span", func(t *testing.T) {
		var exemplars []Exemplar
		Eventually(t, 90*time.Second, time.Second, func() error {
			series, err := stack.PrometheusAPI.QueryExemplars(context.Background(),
				fmt.Sprintf(`workqueue_queue_duration_seconds_bucket{job=%q}`, congested), time.Now().Add(-15*time.Minute), time.Now())
			if err != nil {
				return err
			}
			exemplars = nil
			for _, s := range series {
				exemplars = append(exemplars, s.Exemplars...)
			}
			if len(exemplars) == 0 {
				return errors.New("no exemplars on workqueue_queue_duration_seconds_bucket yet")
			}
			return nil
		})
		checked := 0
		for _, e := range exemplars[:min(5, len(exemplars))] {
			// The collector's tail sampling decides a trace a second or two
			// after its root span arrives (the stack keeps every trace):
			// an exemplar of the run's last seconds may come first.
			var tr Trace
			err := poll(context.Background(), 30*time.Second, 200*time.Millisecond, func() error {
				var err error
				tr, err = stack.JaegerAPI.GetTrace(context.Background(), e.TraceID())
				return err
			})
			if err != nil {
				t.Errorf("exemplar trace %s: %v", e.TraceID(), err)
				continue
			}
			q := tr.SpansNamed("queued")
			if len(q) != 1 || q[0].SpanID != e.SpanID() {
				t.Errorf("exemplar %v: trace %s has queued spans %v, want the exemplar's span", e.Labels, tr.TraceID, q)
			}
			checked++
		}
		if checked == 0 {
			t.Fatal("no exemplar resolved in Jaeger")
		}
	})

	t.Run("every dashboard query returns data", func(t *testing.T) {
		queries, err := DashboardQueries()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, q := range queries {
			// The fleet's panels too: the unsharded app reports shard 0
			// of 1, a fleet of one (e2e/apiserver's TestShards queries
			// them on three shards).
			n++
			Eventually(t, 60*time.Second, time.Second, func() error {
				s, err := stack.PrometheusAPI.Query(context.Background(), q.Expr)
				if err != nil {
					return err
				}
				if len(s) == 0 {
					return fmt.Errorf("panel %q: %s returned no data", q.Panel, q.Expr)
				}
				return nil
			})
		}
		if n < 10 {
			t.Errorf("only %d dashboard queries found", n)
		}
	})
}

// TestAppFaults kills the collector in the middle of a run, and stops
// Jaeger: reconciles go on at the same pace, memory stays bounded, and
// telemetry resumes once the collector is back.
func TestAppFaults(t *testing.T) {
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	args := []string{"-workers", "4", "-churn", "30", "-latency", "2ms", "-latency-spread", "0", "-error-rate", "0", "-burst-every", "0", "-objects", "50"}
	const warmup, window = 3 * time.Second, 12 * time.Second

	// Each faulty run is compared with an undisturbed app (no export)
	// running at the same time.
	base := startAppExporting(t, false, "e2e-undisturbed-"+suffix, args...)
	svc := "e2e-collector-killed-" + suffix
	a := startApp(t, svc, args...)
	var restarted time.Time
	rates, peaks := measure(t, []*appRun{base, a}, warmup, window, func() {
		if err := stack.KillCollector(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(window / 3)
		if err := stack.RestartCollector(context.Background()); err != nil {
			t.Fatal(err)
		}
		restarted = time.Now()
	})
	t.Logf("reconciles/s: undisturbed %.1f, collector killed %.1f; peak RSS %d kB vs %d kB", rates[0], rates[1], peaks[1], peaks[0])
	if rates[1] < 0.9*rates[0] || rates[1] > 1.1*rates[0] {
		t.Errorf("with the collector killed the app reconciled %.1f/s, undisturbed %.1f/s: not within 10%%", rates[1], rates[0])
	}
	if peaks[1] > 2*peaks[0]+20_000 {
		t.Errorf("peak RSS %d kB with the collector killed, %d kB undisturbed: memory is not bounded", peaks[1], peaks[0])
	}
	// Telemetry resumes: a trace and a metric sample from after the restart.
	Eventually(t, 90*time.Second, time.Second, func() error {
		traces, err := stack.JaegerAPI.FindTraces(context.Background(), TraceQuery{Service: svc, Operation: rootSpan, Limit: 500, Lookback: 15 * time.Minute})
		if err != nil {
			return err
		}
		for _, tr := range traces {
			for _, s := range tr.Spans {
				if s.Start().After(restarted) {
					return nil
				}
			}
		}
		return fmt.Errorf("no trace of %s started after the collector restart (%d traces)", svc, len(traces))
	})
	Eventually(t, 90*time.Second, time.Second, func() error {
		s, err := stack.PrometheusAPI.Query(context.Background(), fmt.Sprintf(`timestamp(workqueue_adds_total{job=%q})`, svc))
		if err != nil {
			return err
		}
		for _, x := range s {
			if time.Unix(int64(x.Value), 0).After(restarted) {
				return nil
			}
		}
		return fmt.Errorf("no sample of %s's workqueue_adds_total after the collector restart", svc)
	})
	a.stop()

	// Jaeger down: no effect on the app.
	if err := stack.StopJaeger(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !stack.Jaeger.Running() {
			_ = stack.StartJaeger(context.Background())
		}
	})
	j := startApp(t, "e2e-jaeger-down-"+suffix, args...)
	rates, _ = measure(t, []*appRun{base, j}, warmup, window/2, nil)
	j.stop()
	base.stop()
	t.Logf("reconciles/s with Jaeger down: %.1f (undisturbed %.1f)", rates[1], rates[0])
	if rates[1] < 0.9*rates[0] || rates[1] > 1.1*rates[0] {
		t.Errorf("with Jaeger down the app reconciled %.1f/s, undisturbed %.1f/s: not within 10%%", rates[1], rates[0])
	}
	if err := stack.StartJaeger(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestComposeFileIsValid checks docker-compose.yaml with Debian's
// docker-compose (no Docker engine is needed for config -q).
func TestComposeFileIsValid(t *testing.T) {
	path, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is not installed: apt-get install docker-compose (make test does it)")
	}
	cmd := exec.Command(path, "-f", "../docker-compose.yaml", "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config -q: %v\n%s", err, out)
	}
}
