package exampletelemetry

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.uber.org/goleak"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// otelVars are the variables Setup or the SDK's exporters read; every test
// starts with all of them unset.
var otelVars = []string{
	"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_METRICS_INSECURE",
	"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_TRACES_SAMPLER", "OTEL_METRIC_EXPORT_INTERVAL",
	"OTEL_TRACES_SAMPLER_ARG", "OTEL_METRIC_EXPORT_TIMEOUT",
	"OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT",
}

// setEnv unsets every OTEL_* variable Setup reads, then sets kv (name,
// value pairs), for the test's duration.
func setEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// logBuffer captures the standard logger (Setup's default Logf) for the
// test's duration.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func captureLog(t *testing.T) *logBuffer {
	t.Helper()
	b := &logBuffer{}
	w, flags := log.Writer(), log.Flags()
	log.SetOutput(b)
	log.SetFlags(0)
	t.Cleanup(func() {
		log.SetOutput(w)
		log.SetFlags(flags)
	})
	return b
}

// emit records one span and one counter increment through the global
// providers, as the examples do.
func emit(ctx context.Context) {
	_, span := otel.Tracer("exampletelemetry_test").Start(ctx, "work")
	span.End()
	c, _ := otel.Meter("exampletelemetry_test").Int64Counter("work.done")
	c.Add(ctx, 1)
}

// setup runs Setup and shuts it down at the end of the test.
func setup(t *testing.T, cfg Config) *Telemetry {
	t.Helper()
	tel, err := Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tel.Shutdown(ctx)
	})
	return tel
}

// flush pushes everything recorded so far to the exporters.
func flush(t *testing.T, tel *Telemetry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.TracerProvider.ForceFlush(ctx); err != nil {
		t.Fatalf("flushing traces: %v", err)
	}
	if err := tel.MeterProvider.ForceFlush(ctx); err != nil {
		t.Fatalf("flushing metrics: %v", err)
	}
}

func TestOTLPProtocols(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol string // OTEL_EXPORTER_OTLP_PROTOCOL
		via      string // the receiver side that must get the data
	}{
		{"unset means grpc", "", "grpc"},
		{"grpc", "grpc", "grpc"},
		{"http/protobuf", "http/protobuf", "http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startReceiver(t)
			addr := r.GRPC
			if tc.via == "http" {
				addr = r.HTTP
			}
			setEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr, "OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			tel := setup(t, Config{ServiceName: "test"})
			emit(context.Background())
			flush(t, tel)
			spans, metrics := r.counts(tc.via)
			if spans == 0 || metrics == 0 {
				t.Errorf("received over %s: %d spans, %d metrics; want both", tc.via, spans, metrics)
			}
			want := []string{
				"traces over OTLP gRPC to " + addr + " (plaintext)",
				"metrics over OTLP gRPC to " + addr + " (plaintext)",
			}
			if tc.via == "http" {
				want = []string{
					"traces over OTLP http/protobuf to http://" + addr + "/v1/traces",
					"metrics over OTLP http/protobuf to http://" + addr + "/v1/metrics",
				}
			}
			if strings.Join(tel.OTLP, "\n") != strings.Join(want, "\n") {
				t.Errorf("OTLP = %q, want %q", tel.OTLP, want)
			}
		})
	}
}

func TestPerSignalExporters(t *testing.T) {
	for _, tc := range []struct {
		variable            string // set to none
		wantSpans, wantMets bool
	}{
		{"OTEL_TRACES_EXPORTER", false, true},
		{"OTEL_METRICS_EXPORTER", true, false},
	} {
		t.Run(tc.variable+"=none", func(t *testing.T) {
			r := startReceiver(t)
			setEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+r.GRPC, tc.variable, "none")
			tel := setup(t, Config{ServiceName: "test"})
			emit(context.Background())
			flush(t, tel)
			if spans, metrics := r.counts("grpc"); (spans > 0) != tc.wantSpans || (metrics > 0) != tc.wantMets {
				t.Errorf("received %d spans, %d metrics; want spans %v, metrics %v", spans, metrics, tc.wantSpans, tc.wantMets)
			}
		})
	}
	t.Run("per-signal endpoints and protocols", func(t *testing.T) {
		r := startReceiver(t)
		setEnv(t,
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"+r.HTTP+"/v1/traces",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf",
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://"+r.GRPC)
		tel := setup(t, Config{ServiceName: "test"})
		emit(context.Background())
		flush(t, tel)
		hs, hm := r.counts("http")
		gs, gm := r.counts("grpc")
		if hs == 0 || hm != 0 || gs != 0 || gm == 0 {
			t.Errorf("spans over HTTP %d, gRPC %d; metrics over HTTP %d, gRPC %d: want spans over HTTP only and metrics over gRPC only", hs, gs, hm, gm)
		}
	})
	t.Run("an exporter named without an endpoint dials the SDK default, and says so", func(t *testing.T) {
		setEnv(t, "OTEL_TRACES_EXPORTER", "otlp", "OTEL_METRICS_EXPORTER", "none")
		tel := setup(t, Config{ServiceName: "test"})
		if want := []string{"traces over OTLP gRPC to localhost:4317 (TLS)"}; strings.Join(tel.OTLP, "\n") != want[0] {
			t.Errorf("OTLP = %q, want %q", tel.OTLP, want)
		}
	})
}

func TestNoEndpointMeansNoOTLP(t *testing.T) {
	setEnv(t)
	tel := setup(t, Config{ServiceName: "test"})
	if len(tel.OTLP) != 0 {
		t.Errorf("no endpoint set, yet OTLP = %q", tel.OTLP)
	}
}

func TestBadVariablesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want []string // substrings of the error
	}{
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "::not a url"}, []string{`OTEL_EXPORTER_OTLP_ENDPOINT="::not a url" is not a URL`, "http://host:port"}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:notaport"}, []string{`OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:notaport" is not a URL`, "invalid port"}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x"}, []string{`scheme "ftp" is not supported`}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4317"}, []string{"no http:// or https:// scheme"}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://:4317"}, []string{"names no host"}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:70000"}, []string{"port 70000 is out of range"}},
		{[]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://x"}, []string{`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="ftp://x"`}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}, []string{`OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`, "metrics exporter supports grpc or http/protobuf"}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift"}, []string{`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="thrift"`}},
		{[]string{"OTEL_TRACES_EXPORTER", "zipkin"}, []string{`OTEL_TRACES_EXPORTER="zipkin": "zipkin" is not supported here; use one of otlp, console, none`}},
		{[]string{"OTEL_METRICS_EXPORTER", "none,console"}, []string{"none cannot be combined"}},
		{[]string{"OTEL_METRICS_EXPORTER", "prometheus"}, []string{"-metrics-addr is empty"}},
	} {
		t.Run(strings.Join(tc.env, "="), func(t *testing.T) {
			setEnv(t, tc.env...)
			tel, err := Setup(context.Background(), Config{ServiceName: "test"})
			if err == nil {
				_ = tel.Shutdown(context.Background())
				t.Fatalf("Setup accepted %s", strings.Join(tc.env, "="))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestResolveOTLPSaysWhatIsDialled(t *testing.T) {
	for _, tc := range []struct {
		env    []string
		signal string
		want   string
	}{
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4317"}, signalTraces, "OTLP gRPC to collector.example:4317 (TLS)"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.example"}, signalTraces, "OTLP gRPC to collector.example:443 (plaintext)"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4317", "OTEL_EXPORTER_OTLP_INSECURE", "true"}, signalMetrics, "OTLP gRPC to c:4317 (plaintext)"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/base", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}, signalMetrics, "OTLP http/protobuf to http://c:4318/base/v1/metrics"},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}, signalTraces, "OTLP http/protobuf to https://c:4318/"},
		{[]string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}, signalMetrics, "OTLP http/protobuf to https://localhost:4318/v1/metrics"},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, signalTraces, "OTLP http/json to http://c:4318/v1/traces"},
	} {
		t.Run(strings.Join(tc.env, "="), func(t *testing.T) {
			setEnv(t, tc.env...)
			got, err := resolveOTLP(tc.signal)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("%s: %q, want %q", tc.signal, got, tc.want)
			}
		})
	}
}

// An export in flight when the app stops is cancelled by the shutdown, which
// collects and flushes its data again: no warning may be printed for it.
func TestCleanStopPrintsNoCanceledWarning(t *testing.T) {
	logs := captureLog(t)
	r := startReceiverWith(t, true)
	setEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+r.GRPC, "OTEL_METRIC_EXPORT_INTERVAL", "20")
	tel, err := Setup(context.Background(), Config{ServiceName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	emit(context.Background())
	select {
	case <-r.held: // a periodic export is in flight
	case <-time.After(time.Minute):
		t.Fatal("no periodic metrics export within a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if out := logs.String(); strings.Contains(out, "canceled") || strings.Contains(out, "problem") {
		t.Errorf("a clean stop logged an export problem:\n%s", out)
	}
	if _, metrics := r.counts("grpc"); metrics == 0 {
		t.Error("the shutdown flushed no metrics")
	}
}

// A collector that accepts and never answers: the flush ends with its
// deadline and the log says, before it starts, that it is flushing, where
// to and for how long at most.
func TestFlushToHangingCollectorSaysHowLong(t *testing.T) {
	logs := captureLog(t)
	addr := startHangingCollector(t)
	// The span export the shutdown gave up on goes on in the background
	// until the exporter's own timeout (as it would until the process
	// exits); a short one lets the test end without a leaked goroutine.
	setEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr, "OTEL_EXPORTER_OTLP_TIMEOUT", "1500")
	t.Cleanup(func() { waitForNoGoroutine(t, "otlptracegrpc") })
	tel, err := Setup(context.Background(), Config{ServiceName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	emit(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = tel.Shutdown(ctx)
	if err == nil {
		t.Fatal("Shutdown reported no error with a collector that never answers")
	}
	out := logs.String()
	for _, want := range []string{"flushing telemetry (traces over OTLP gRPC to " + addr, ", at most "} {
		if !strings.Contains(out, want) {
			t.Errorf("log does not say %q:\n%s", want, out)
		}
	}
	if !strings.Contains(err.Error(), "not flushed in time") {
		t.Errorf("Shutdown error %q does not say the flush was cut short", err)
	}
	if again := tel.Shutdown(context.Background()); again != err {
		t.Errorf("second Shutdown returned %v, want the first one's %v", again, err)
	}
}

// waitForNoGoroutine waits until no goroutine has pkg in its stack.
func waitForNoGoroutine(t *testing.T, pkg string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		buf := make([]byte, 1<<20)
		if !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte(pkg)) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines of %s still running after a minute", pkg)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMetricsAddrListenErrorsHaveTheirOwnHint(t *testing.T) {
	setEnv(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		addr, want, notWant string
	}{
		{busy.Addr().String(), "address in use: is another instance running?", ""},
		// 192.0.2.1 is TEST-NET-1: no host has it, nothing listens.
		{"192.0.2.1:0", "no interface of this host has that address", "another instance"},
		{"127.0.0.1:99999", "not a usable host:port", "another instance"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			tel, err := Setup(context.Background(), Config{ServiceName: "test", MetricsAddr: tc.addr})
			if err == nil {
				_ = tel.Shutdown(context.Background())
				t.Fatalf("Setup listened on %s", tc.addr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q says %q, which is not the problem", err, tc.notWant)
			}
		})
	}
}

func TestMetricsAddrExposureWarning(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want string
	}{
		{"0.0.0.0", "served on every network interface (0.0.0.0:9464): anyone who can reach this host can read it; -metrics-addr 127.0.0.1:9464 keeps it local"},
		{"::", "served on every network interface ([::]:9464)"},
		{"192.168.1.5", "served on 192.168.1.5:9464, which other hosts may reach"},
		{"127.0.0.1", ""},
		{"::1", ""},
	} {
		got := exposureWarning(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 9464})
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: warning %q, want %q", tc.ip, got, tc.want)
		}
	}

	// On loopback, Setup warns of nothing.
	logs := captureLog(t)
	setEnv(t)
	tel := setup(t, Config{ServiceName: "test", MetricsAddr: "127.0.0.1:0"})
	if tel.MetricsURL == "" {
		t.Fatal("no metrics URL")
	}
	if out := logs.String(); strings.Contains(out, "warning") {
		t.Errorf("loopback -metrics-addr logged a warning:\n%s", out)
	}
}

// TestNativeHistograms: with Config.NativeHistograms, /metrics serves the
// queue-wait and work-duration histograms with classic and native (schema
// 3) buckets in one histogram to a scraper that asks for protobuf, as a
// Prometheus that keeps native histograms does, and no *_native_* family;
// without it, classic buckets only.
func TestNativeHistograms(t *testing.T) {
	for _, native := range []bool{true, false} {
		t.Run(fmt.Sprintf("NativeHistograms=%v", native), func(t *testing.T) {
			setEnv(t)
			tel := setup(t, Config{ServiceName: "test", MetricsAddr: "127.0.0.1:0", NativeHistograms: native})
			q := scheduler.New(scheduler.Config[string]{Name: "native"})
			defer q.ShutDown()
			if _, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(tel.MeterProvider)); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"a", "b", "c"} {
				q.Add(k)
				item, _ := q.Get()
				q.Done(item)
			}
			families := testutil.ScrapeProtobuf(t, tel.MetricsURL)
			for name := range families {
				if strings.Contains(name, "_native") {
					t.Errorf("family %s served", name)
				}
			}
			for _, name := range []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
				mf := families[name]
				if mf == nil || len(mf.GetMetric()) != 1 {
					t.Fatalf("%s: %v, want one series", name, mf)
				}
				h := mf.GetMetric()[0].GetHistogram()
				if len(h.GetBucket()) == 0 || h.GetSampleCount() != 3 {
					t.Errorf("%s: %d classic buckets, count %d; want classic buckets of 3 observations", name, len(h.GetBucket()), h.GetSampleCount())
				}
				if hasNative := h.Schema != nil; hasNative != native || (native && h.GetSchema() != 3) {
					t.Errorf("%s: native buckets %v (schema %d), want %v at schema 3", name, hasNative, h.GetSchema(), native)
				}
			}
		})
	}
}
