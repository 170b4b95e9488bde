package apiserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exampleRun is one run of an example controller as a user starts it: a
// process with flags, its log on stderr, its spans on stdout (the console
// exporter), its Prometheus endpoint scraped while it runs.
type exampleRun struct {
	t       *testing.T
	ex      example
	where   string // "fake" or the plane's name
	cmd     *exec.Cmd
	metrics string
	logPath string

	mu       sync.Mutex
	lines    []string  // stderr
	stopTime time.Time // when SIGTERM was sent
	stdout   bytes.Buffer
	done     chan error
	exitErr  error
}

// startExample starts ex with args after the flags every run gets: a free
// loopback metrics address and a summary line every second.
func startExample(t *testing.T, ex example, where string, args ...string) *exampleRun {
	t.Helper()
	addr := freeAddr(t)
	args = append([]string{"-metrics-addr", addr, "-summary-interval", "1s"}, args...)
	r := &exampleRun{t: t, ex: ex, where: where, metrics: "http://" + addr + "/metrics", done: make(chan error, 1),
		logPath: filepath.Join(tmpDir, fmt.Sprintf("%s-%s-%s.log", strings.ReplaceAll(t.Name(), "/", "_"), ex.name, where))}
	r.cmd = exec.Command(ex.bin, args...)
	// Spans as JSON lines on stdout; every attempt sampled, and none
	// dropped when the console exporter falls behind on a loaded machine
	// (the batch processor's queue holds 2048 by default); metrics only
	// through /metrics.
	r.cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=console", "OTEL_METRICS_EXPORTER=none",
		"OTEL_TRACES_SAMPLER=always_on", "OTEL_BSP_SCHEDULE_DELAY=200", "OTEL_BSP_MAX_QUEUE_SIZE=1000000")
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	r.cmd.Stdout = &lockedWriter{mu: &r.mu, w: &r.stdout}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", ex.bin, err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
		}
		err := r.cmd.Wait()
		r.mu.Lock()
		r.exitErr = err
		r.mu.Unlock()
		r.done <- err
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		r.mu.Lock()
		log := strings.Join(r.lines, "\n")
		r.mu.Unlock()
		_ = os.WriteFile(r.logPath, []byte(log+"\n"), 0o644)
		if t.Failed() {
			t.Logf("%s on %s (%s), its log's last lines:\n%s", ex.name, where, strings.Join(args, " "), lastLines(log, 60))
		}
	})
	return r
}

// summaries returns the summary lines logged so far.
func (r *exampleRun) summaries() []summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []summary
	for _, l := range r.lines {
		if s, ok := parseSummary(l); ok {
			out = append(out, s)
		}
	}
	return out
}

// waitSummaries waits until n summary lines were logged, failing the test
// if the example exits first or they take longer than timeout.
func (r *exampleRun) waitSummaries(n int, timeout time.Duration) []summary {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := r.summaries()
		if len(s) >= n {
			return s
		}
		select {
		case err := <-r.done:
			r.done <- err
			r.t.Fatalf("%s on %s exited (%v) after %d of %d summary lines", r.ex.name, r.where, err, len(s), n)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s on %s: %d of %d summary lines after %s", r.ex.name, r.where, len(s), n, timeout)
		}
	}
}

// stop sends SIGTERM, as Kubernetes does, and expects a clean exit within
// the examples' flush deadline.
func (r *exampleRun) stop() {
	r.t.Helper()
	if err := r.terminate(); err != nil {
		r.t.Fatalf("%s on %s: %v", r.ex.name, r.where, err)
	}
}

// errNoStop is terminate's error when the example did not exit in time.
var errNoStop = errors.New("did not stop within 30s of SIGTERM")

// terminate sends SIGTERM and returns the exit's error (wrapped: "exited
// with ... after SIGTERM"), or errNoStop when it did not exit within 30 s;
// it may be called from any goroutine.
func (r *exampleRun) terminate() error {
	r.mu.Lock()
	r.stopTime = time.Now()
	r.mu.Unlock()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			return fmt.Errorf("exited with %w after SIGTERM", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return errNoStop
	}
}

// stopLines returns the lines logged after SIGTERM, by the time of day
// each line starts with (both examples log with microseconds): lines
// written before the signal may still be in the pipe when it is sent. A
// line without a time belongs with the line before it.
func (r *exampleRun) stopLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	after := false
	for _, l := range r.lines {
		if at, ok := timeOfDay(l); ok {
			after = sinceTimeOfDay(r.stopTime, at) >= 0
		}
		if after {
			out = append(out, l)
		}
	}
	return out
}

// timeOfDay parses the time of day a log line starts with
// (15:04:05.000000), as a duration since midnight.
func timeOfDay(line string) (time.Duration, bool) {
	const layout = "15:04:05.000000"
	if len(line) < len(layout) {
		return 0, false
	}
	t, err := time.Parse(layout, line[:len(layout)])
	if err != nil {
		return 0, false
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond()), true
}

// sinceTimeOfDay returns how long after ref's local time of day the time of
// day at is, within half a day either way (a run may pass midnight).
func sinceTimeOfDay(ref time.Time, at time.Duration) time.Duration {
	h, m, sec := ref.Clock()
	refTOD := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second + time.Duration(ref.Nanosecond())
	return todSub(at, refTOD)
}

// log returns every line logged.
func (r *exampleRun) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// spans decodes the spans the console exporter wrote (after the stop, when
// every span was flushed).
func (r *exampleRun) spans() []span {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	dec := json.NewDecoder(bytes.NewReader(r.stdout.Bytes()))
	for {
		var s span
		if err := dec.Decode(&s); err == io.EOF {
			return out
		} else if err != nil {
			r.t.Fatalf("%s on %s: decoding its spans (stdout) after %d: %v", r.ex.name, r.where, len(out), err)
		}
		out = append(out, s)
	}
}

// scrape reads the example's /metrics in the OpenMetrics format (the one
// that carries exemplars).
func (r *exampleRun) scrape() scrape {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.metrics, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("scraping %s: %v", r.metrics, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		r.t.Fatalf("scraping %s: %s %v", r.metrics, resp.Status, err)
	}
	return parseScrape(string(b))
}

// errorLine matches what counts as an error in a log: klog's error and
// fatal lines (E1201 12:00:00.000000 ...), controller-runtime's "Reconciler
// error", and anything with error, panic or failed in it but the summary
// line's errors/s= rate and the final line's "N errors".
var errorLine = regexp.MustCompile(`(?i)^[EF]\d{4} |reconciler error|\berror\b|\bpanic(ked)?\b|\bfailed\b|\bfatal\b`)

// simulated is in the log line of a failure the app injects (-error-rate),
// which a reconcile that finished its work just before the stop reports
// after it: no error of the stop.
const simulated = "simulated failure (see -error-rate)"

// errorLines returns the lines of lines that errorLine matches, but the
// app's injected failures.
func errorLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if errorLine.MatchString(l) && !strings.Contains(l, simulated) {
			out = append(out, l)
		}
	}
	return out
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// freeAddr returns a 127.0.0.1 address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
