package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/sizing"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// readRecording returns testdata/inspector.json, a page of the demo's
// inspector (recording_test.go says how it was recorded).
func readRecording(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "inspector.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeInspector decodes the recorded page: every field of its
// recommendation is one of bottleneck.Recommendation's (decoded strictly),
// and the figures are the page's.
func TestDecodeInspector(t *testing.T) {
	b := readRecording(t)
	r, err := decodeInspector(b)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Recommendation json.RawMessage `json:"recommendation"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(raw.Recommendation))
	d.DisallowUnknownFields()
	var strict bottleneck.Recommendation
	if err := d.Decode(&strict); err != nil {
		t.Errorf("the recording's recommendation has a field bottleneck.Recommendation lacks: %v", err)
	}
	if len(r.Queues) != 1 {
		t.Fatalf("queues %+v, want 1", r.Queues)
	}
	q := r.Queues[0]
	checks := []struct {
		what      string
		got, want any
	}{
		{"queue", q.Name, wantQueue},
		{"workers", q.Workers, wantWorkers},
		{"run", q.Run, wantRun},
		{"known", q.Known, true},
		{"class", q.Class, wantClass},
		{"cpu known", r.CPU.Known, true},
		{"request_cores", r.CPU.Request, wantCPURequest},
		{"limit_cores", r.CPU.Limit, wantCPULimit},
		{"per_reconcile_ns", r.CPU.PerReconcile, wantPerReconcile},
		{"memory known", r.Memory.Known, true},
		{"request_bytes", r.Memory.Request, wantMemRequest},
		{"limit_bytes", r.Memory.Limit, wantMemLimit},
		{"gomemlimit_bytes", r.Memory.GOMEMLIMIT, wantGOMEMLIMIT},
		{"objects", r.Memory.Objects, wantObjects},
		{"over_ns", r.Over, wantOver},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	// The library's own factors hold between the figures.
	if r.CPU.Limit != r.CPU.Request*sizing.CPULimitPerRequest {
		t.Errorf("limit %v is not %v × request %v", r.CPU.Limit, sizing.CPULimitPerRequest, r.CPU.Request)
	}

	if _, err := decodeInspector([]byte(`{"at":"2026-12-06T00:00:00Z","queues":[]}`)); err == nil || !strings.Contains(err.Error(), `no "recommendation"`) {
		t.Errorf("a page without a recommendation: %v", err)
	}
	if _, err := decodeInspector([]byte(`<html>`)); err == nil {
		t.Error("HTML decoded")
	}
}

// TestFetchInspector reads the recording from a server, at the path the
// demo serves it.
func TestFetchInspector(t *testing.T) {
	b := readRecording(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/queues" || r.URL.Query().Get("format") != "json" {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	defer srv.Close()
	page, r, err := fetchInspector(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, b) || r.CPU.Request != wantCPURequest {
		t.Errorf("read %d bytes, cpu request %v; want the recording", len(page), r.CPU.Request)
	}
}

// fakeDemoEnv makes the test binary a fake demo: it serves the recording
// at -metrics-addr, burns some CPU, starts a child (as the demo starts its
// API server) and stops at -duration or SIGTERM.
const fakeDemoEnv = "OTELQUEUE_VPA_FAKE_DEMO"

func TestMain(m *testing.M) {
	if os.Getenv(fakeDemoEnv) == "1" {
		fakeDemo()
		return
	}
	os.Exit(m.Run())
}

func fakeDemo() {
	fs := flag.NewFlagSet("fake", flag.ExitOnError)
	addr := fs.String("metrics-addr", "", "")
	d := fs.Duration("duration", 0, "")
	fs.Float64("churn", 0, "")
	fs.Parse(os.Args[1:])
	b, err := os.ReadFile(os.Getenv("OTELQUEUE_VPA_RECORDING"))
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/queues", func(w http.ResponseWriter, r *http.Request) { w.Write(b) })
	go http.Serve(ln, mux)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *d)
	defer cancel()
	ballast := make([]byte, 8<<20) // resident: written to
	for i := range ballast {
		ballast[i] = byte(i)
	}
	for ctx.Err() == nil { // about a fifth of a core
		end := time.Now().Add(20 * time.Millisecond)
		for time.Now().Before(end) {
		}
		time.Sleep(80 * time.Millisecond)
	}
	println("stopped", len(ballast))
}

// TestRunFakeDemo runs the tool on the fake demo for a few seconds, with
// a resolution and fetch interval scaled down, and checks its files.
func TestRunFakeDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process for 4 s")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := filepath.Abs(filepath.Join("testdata", "inspector.json"))
	t.Setenv(fakeDemoEnv, "1")
	t.Setenv("OTELQUEUE_VPA_RECORDING", rec)
	out := t.TempDir()
	o := options{app: exe, duration: 4 * time.Second, out: out, resolution: 500 * time.Millisecond, fetch: time.Second, name: "fake", args: []string{"-churn", "20"}}
	if err := run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(out, "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	meta, samples, err := readCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) < 7 || len(samples) > 9 {
		t.Errorf("%d samples of 0.5 s in 4 s", len(samples))
	}
	if !strings.Contains(meta.Command, "-churn 20 -duration 2m4s -metrics-addr 127.0.0.1:") {
		t.Errorf("command %q", meta.Command)
	}
	for _, s := range samples {
		if s.RSS < 8<<20 || s.CPU <= 0 || s.CPU > 1 {
			t.Errorf("sample %+v: want the ballast's 8 MiB resident and some CPU", s)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "inspector.json"))
	if err != nil || !bytes.Equal(page, readRecording(t)) {
		t.Errorf("inspector.json: %v, want the recording", err)
	}
	fetches := lines(t, filepath.Join(out, "fetches.csv"))
	if len(fetches) < 4 || len(fetches) > 5 || !strings.HasPrefix(fetches[0], "elapsed_s,") {
		t.Errorf("fetches.csv:\n%s", strings.Join(fetches, "\n"))
	}
	report, err := os.ReadFile(filepath.Join(out, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"workload fake:", "CPU request (cores)", "row: | fake |", "otelqueue: workers: " + wantQueue} {
		if !strings.Contains(string(report), want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	// The replay from the files gives the same report.
	var buf bytes.Buffer
	if err := replay(&buf, options{replay: out, fetch: time.Second, name: "fake"}); err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(report) {
		t.Errorf("replayed:\n%s\nthe run's:\n%s", buf.String(), report)
	}
	if log := lines(t, filepath.Join(out, "app.log")); len(log) == 0 || !strings.HasPrefix(log[len(log)-1], "stopped") {
		t.Errorf("app.log: %q, want the fake demo to have stopped at SIGTERM", log)
	}
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		out = append(out, s.Text())
	}
	return out
}
