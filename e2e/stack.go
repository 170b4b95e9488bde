package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Stack is Jaeger v2, an OpenTelemetry Collector and Prometheus, each on free
// 127.0.0.1 ports, wired as in docker-compose: OTLP into the collector;
// traces, through its tail sampling (TailSamplingEnv), on to Jaeger over
// OTLP gRPC; metrics exposed by the collector's
// prometheus exporter, which Prometheus scrapes every second and evaluates
// example/prometheus/rules.yml on every second.
type Stack struct {
	// Dir holds the generated configs, the logs and Prometheus's TSDB.
	Dir string
	// RulesFile is the recording and alerting rules file Prometheus loads
	// (example/prometheus/rules.yml).
	RulesFile string

	Jaeger     *Process
	Collector  *Process
	Prometheus *Process

	// JaegerAPI and PrometheusAPI query the running servers.
	JaegerAPI     *Jaeger
	PrometheusAPI *Prometheus

	// Addresses (host:port, all on 127.0.0.1).
	CollectorOTLPGRPC     string // send OTLP/gRPC here
	CollectorOTLPHTTP     string // or OTLP/HTTP here
	CollectorPromExporter string // the collector's prometheus exporter (/metrics)
	CollectorSelfMetrics  string // the collector's own metrics (/metrics)
	JaegerOTLPGRPC        string // Jaeger's OTLP receiver (the collector sends here)
	JaegerQueryHTTP       string // Jaeger's HTTP API (/api/...)
	JaegerQueryGRPC       string
	PrometheusHTTP        string // Prometheus's web/API

	log io.Writer
}

// Binaries are the server executables.
type Binaries struct {
	Jaeger, Collector, Prometheus string
}

// Tools returns the tools built from e2e/tools.
func Tools(moduleDir string) (jaeger, collector Tool) {
	jaeger = Tool{
		Name:        "jaeger",
		ModuleDir:   filepath.Join(moduleDir, "tools", "jaeger"),
		Package:     "github.com/jaegertracing/jaeger/cmd/jaeger",
		EnvOverride: "OTELQUEUE_E2E_JAEGER",
		Hint:        "a cold build takes minutes and up to 2.3 GB of memory (docs/testing.md#how-long); it is cached afterwards",
	}
	collector = Tool{
		Name:        "otelcol",
		ModuleDir:   filepath.Join(moduleDir, "tools", "otelcol"),
		Package:     ".",
		EnvOverride: "OTELQUEUE_E2E_OTELCOL",
		Hint:        "a cold build takes minutes (docs/testing.md#how-long); it is cached afterwards",
	}
	return jaeger, collector
}

// FindBinaries builds (or finds in the cache) the Jaeger, collector and
// Prometheus binaries. Progress goes to log.
func FindBinaries(ctx context.Context, log io.Writer) (Binaries, error) {
	var b Binaries
	dir, err := ModuleDir()
	if err != nil {
		return b, err
	}
	binDir := BinDir(dir)
	jt, ct := Tools(dir)
	pt, _, err := PrometheusTools(dir)
	if err != nil {
		return b, err
	}
	// One at a time: each build already uses every core, and Jaeger's alone
	// peaks at ~2.3 GB.
	if b.Collector, err = ct.Build(ctx, binDir, log); err != nil {
		return b, err
	}
	if b.Jaeger, err = jt.Build(ctx, binDir, log); err != nil {
		return b, err
	}
	if b.Prometheus, err = pt.Build(ctx, binDir, log); err != nil {
		return b, err
	}
	return b, nil
}

// CollectorConfig returns the path of example/collector/config.yaml.
func CollectorConfig() (string, error) {
	return exampleFile("collector config", "collector", "config.yaml")
}

// RulesFile returns the path of example/prometheus/rules.yml, the recording
// and alerting rules the stack's Prometheus loads.
func RulesFile() (string, error) {
	return exampleFile("prometheus rules", "prometheus", "rules.yml")
}

// exampleFile returns the absolute path of a file under example/.
func exampleFile(what string, elem ...string) (string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(append([]string{dir, "..", "example"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return filepath.Clean(p), nil
}

// Start builds or finds the binaries, writes the configs into a new temporary
// directory, starts Jaeger, the collector and Prometheus, and waits until each
// is ready and Prometheus scrapes the collector. On error it stops whatever it
// started. Progress goes to log.
func Start(ctx context.Context, log io.Writer) (*Stack, error) {
	bins, err := FindBinaries(ctx, log)
	if err != nil {
		return nil, err
	}
	return StartWith(ctx, bins, log)
}

// StartWith is Start with given binaries.
func StartWith(ctx context.Context, bins Binaries, log io.Writer) (_ *Stack, err error) {
	colCfg, err := CollectorConfig()
	if err != nil {
		return nil, err
	}
	rules, err := RulesFile()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "otelqueue-e2e-")
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(8)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	s := &Stack{
		Dir:                   dir,
		RulesFile:             rules,
		JaegerOTLPGRPC:        addr(0),
		JaegerQueryHTTP:       addr(1),
		JaegerQueryGRPC:       addr(2),
		CollectorOTLPGRPC:     addr(3),
		CollectorOTLPHTTP:     addr(4),
		CollectorPromExporter: addr(5),
		CollectorSelfMetrics:  addr(6),
		PrometheusHTTP:        addr(7),
		log:                   log,
	}
	s.JaegerAPI = &Jaeger{BaseURL: "http://" + s.JaegerQueryHTTP}
	s.PrometheusAPI = &Prometheus{BaseURL: "http://" + s.PrometheusHTTP}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()

	jaegerCfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(jaegerCfg, []byte(s.jaegerConfig()), 0o644); err != nil {
		return nil, err
	}
	promCfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(promCfg, []byte(s.prometheusConfig()), 0o644); err != nil {
		return nil, err
	}
	if err := s.ScrapeApp(); err != nil { // no app to scrape yet
		return nil, err
	}

	s.Jaeger = &Process{
		Name:    "jaeger",
		Path:    bins.Jaeger,
		Args:    []string{"--config", "file:" + jaegerCfg},
		Dir:     dir,
		LogPath: filepath.Join(dir, "jaeger.log"),
	}
	s.Collector = &Process{
		Name:    "otelcol",
		Path:    bins.Collector,
		Args:    []string{"--config", "file:" + colCfg},
		Env:     append(CollectorEnv(s.CollectorOTLPGRPC, s.CollectorOTLPHTTP, s.JaegerOTLPGRPC, s.CollectorPromExporter, s.CollectorSelfMetrics), TailSamplingEnv...),
		Dir:     dir,
		LogPath: filepath.Join(dir, "otelcol.log"),
	}
	s.Prometheus = &Process{
		Name: "prometheus",
		Path: bins.Prometheus,
		Args: []string{
			"--config.file=" + promCfg,
			"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
			"--web.listen-address=" + s.PrometheusHTTP,
			"--enable-feature=exemplar-storage",
			// OTLP straight into Prometheus (/api/v1/otlp/v1/metrics), for
			// TestNativeHistogramsPrometheusOTLP.
			"--web.enable-otlp-receiver",
			"--log.level=info",
		},
		Dir:     dir,
		LogPath: filepath.Join(dir, "prometheus.log"),
	}

	start := time.Now()
	if err := s.StartJaeger(ctx); err != nil {
		return nil, err
	}
	if err := s.StartCollector(ctx); err != nil {
		return nil, err
	}
	if err := s.Prometheus.Start(); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, s.Prometheus, time.Minute, httpOK("http://"+s.PrometheusHTTP+"/-/ready")); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, s.Prometheus, 30*time.Second, s.scrapeUp); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "e2e: stack ready in %s: collector OTLP gRPC %s, Jaeger API %s, Prometheus %s (dir %s)\n",
		time.Since(start).Round(time.Millisecond), s.CollectorOTLPGRPC, s.JaegerQueryHTTP, s.PrometheusHTTP, dir)
	return s, nil
}

// TailSamplingEnv is what the stack's collector is given for the tail
// sampling of example/collector/config.yaml: decisions within seconds (a
// trace whose root span never comes is decided 2s after its first span
// instead of 30s), and every trace kept (a share of 100%), so that a test
// that looks up a trace, e.g. from an exemplar, finds it once the decision
// is made. TestTailSampling runs a collector of its own that keeps a small
// share. The app under the stack sends every trace (OTelEnv).
var TailSamplingEnv = []string{
	"TAIL_SAMPLING_DECISION_WAIT=2s",
	"TAIL_SAMPLING_PERCENT=100",
}

// CollectorEnv returns the variables example/collector/config.yaml reads
// for its endpoints: OTLP in on otlpGRPC and otlpHTTP, traces out to
// jaegerOTLP, the prometheus exporter on promExporter and the collector's
// own metrics on selfMetrics (all host:port).
func CollectorEnv(otlpGRPC, otlpHTTP, jaegerOTLP, promExporter, selfMetrics string) []string {
	host, port, _ := strings.Cut(selfMetrics, ":")
	return []string{
		"OTLP_GRPC_ENDPOINT=" + otlpGRPC,
		"OTLP_HTTP_ENDPOINT=" + otlpHTTP,
		"JAEGER_OTLP_ENDPOINT=" + jaegerOTLP,
		"PROM_EXPORTER_ENDPOINT=" + promExporter,
		"OTELCOL_METRICS_HOST=" + host,
		"OTELCOL_METRICS_PORT=" + port,
	}
}

// scrapeUp checks that Prometheus has scraped the collector successfully.
func (s *Stack) scrapeUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ts, err := s.PrometheusAPI.Targets(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Health == "up" {
			return nil
		}
		if t.LastError != "" {
			err = fmt.Errorf("target %s: %s: %s", t.ScrapeURL, t.Health, t.LastError)
		}
	}
	if err == nil {
		err = fmt.Errorf("no target up yet (%d targets)", len(ts))
	}
	return err
}

// jaegerConfig is a Jaeger v2 (OTel collector based) configuration: OTLP gRPC
// in, memory storage, the query API; every endpoint on loopback.
func (s *Stack) jaegerConfig() string {
	return fmt.Sprintf(`# Generated by otelqueue e2e.
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none   # no self-metrics endpoint (default: a Prometheus reader on :8888)
    logs:
      level: info

extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    # v2 traces itself to localhost:4317 by default.
    enable_tracing: false
    # Never move spans: skew shows up as span warnings instead.
    max_clock_skew_adjust: 0s
    http:
      endpoint: %s
    grpc:
      endpoint: %s

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, s.JaegerQueryHTTP, s.JaegerQueryGRPC, s.JaegerOTLPGRPC)
}

func (s *Stack) prometheusConfig() string {
	return PrometheusConfig(s.CollectorPromExporter, s.RulesFile, s.appTargetsFile())
}

// appTargetsFile is the file_sd file of the stack's "app" scrape job
// (ScrapeApp writes it).
func (s *Stack) appTargetsFile() string { return filepath.Join(s.Dir, "app-targets.json") }

// ScrapeApp makes the stack's Prometheus scrape the Prometheus endpoint of
// programs at addrs (host:port, /metrics) directly, as job "app", besides
// the collector; no address stops those scrapes. Prometheus notices the
// change of its file_sd file within seconds.
func (s *Stack) ScrapeApp(addrs ...string) error {
	targets := "[]"
	if len(addrs) > 0 {
		quoted := make([]string, len(addrs))
		for i, a := range addrs {
			quoted[i] = strconv.Quote(a)
		}
		targets = `[{"targets": [` + strings.Join(quoted, ", ") + `]}]`
	}
	tmp := s.appTargetsFile() + ".tmp"
	if err := os.WriteFile(tmp, []byte(targets+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.appTargetsFile()) // Prometheus never reads half a file
}

// PrometheusOTLPMetricsURL is the OTLP/HTTP metrics endpoint of the stack's
// Prometheus (its OTLP receiver), for OTEL_EXPORTER_OTLP_METRICS_ENDPOINT.
func (s *Stack) PrometheusOTLPMetricsURL() string {
	return "http://" + s.PrometheusHTTP + "/api/v1/otlp/v1/metrics"
}

// PrometheusConfig is the stack's Prometheus configuration, for Prometheus
// 3.x: scrape the collector's prometheus exporter at target and evaluate the
// rules in rulesFile, both every second; with appTargets (a file_sd file)
// not empty, also scrape the programs it lists directly, as job "app".
//
// Both jobs negotiate the protobuf exposition and keep native histograms
// (scrape_native_histograms). The app's endpoint serves, with
// otelqueuesdk.MergeNativeHistograms, classic and native buckets in one
// histogram, as controller-runtime does: always_scrape_classic_histograms
// keeps both. Through the collector the native half arrives as a metric of
// its own, workqueue_{queue,work}_duration_native_seconds (the OTLP stream
// of otelqueuesdk.NativeHistograms): it is renamed to the classic
// histogram's name, which then has both kinds as well.
func PrometheusConfig(target, rulesFile, appTargets string) string {
	cfg := fmt.Sprintf(`# Generated by otelqueue e2e.
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: otelcol
    # Keep job and instance as the exporter sets them (from service.name and
    # service.instance.id).
    honor_labels: true
    scrape_native_histograms: true
    static_configs:
      - targets: [%q]
    metric_relabel_configs:
%s`, rulesFile, target, nativeRenameRelabel)
	if appTargets != "" {
		cfg += fmt.Sprintf(`  - job_name: app
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    file_sd_configs:
      - files: [%q]
`, appTargets)
	}
	return cfg
}

// nativeRenameRelabel is the metric relabeling, in a scrape config's
// metric_relabel_configs, that gives the native histograms of
// otelqueuesdk.NativeHistograms' second stream, exported over OTLP and
// served by the collector as workqueue_{queue,work}_duration_native_seconds,
// the name of the classic histograms of the same instrument (as in
// example/prometheus/prometheus.yml). Relabel regexes are anchored: the
// _count and _sum series a classic scrape of them would add keep their
// names.
const nativeRenameRelabel = `      - source_labels: [__name__]
        regex: (.*workqueue_(?:queue|work)_duration)_native(_seconds)?
        target_label: __name__
        replacement: ${1}${2}
`

// StartJaeger starts Jaeger (again: its memory storage starts empty) and
// waits until it is ready.
func (s *Stack) StartJaeger(ctx context.Context) error {
	if err := s.Jaeger.Start(); err != nil {
		return err
	}
	return waitReady(ctx, s.Jaeger, time.Minute, all(
		tcpOpen(s.JaegerOTLPGRPC),
		httpOK("http://"+s.JaegerQueryHTTP+"/api/services"),
	))
}

// StopJaeger stops Jaeger gracefully (SIGTERM, then SIGKILL after 10s).
func (s *Stack) StopJaeger() error { return s.Jaeger.Stop(10 * time.Second) }

// StartCollector starts the collector and waits until it accepts OTLP and
// serves its prometheus exporter.
func (s *Stack) StartCollector(ctx context.Context) error {
	if err := s.Collector.Start(); err != nil {
		return err
	}
	return waitReady(ctx, s.Collector, time.Minute, all(
		tcpOpen(s.CollectorOTLPGRPC),
		tcpOpen(s.CollectorOTLPHTTP),
		httpOK("http://"+s.CollectorPromExporter+"/metrics"),
	))
}

// StopCollector stops the collector gracefully: it flushes what it holds.
func (s *Stack) StopCollector() error { return s.Collector.Stop(10 * time.Second) }

// KillCollector kills the collector with SIGKILL, as a crash would: whatever
// it held is lost, and senders see connection errors until it is restarted.
func (s *Stack) KillCollector() error { return s.Collector.Kill() }

// RestartCollector stops the collector if it runs, starts it again on the
// same ports and waits until it is ready.
func (s *Stack) RestartCollector(ctx context.Context) error {
	if err := s.StopCollector(); err != nil {
		fmt.Fprintf(s.log, "e2e: %v\n", err)
	}
	return s.StartCollector(ctx)
}

// HeadSamplerEnv is the head sampler of a program that sends to a
// collector with tail sampling: every trace, so that the collector sees
// each attempt's outcome before it decides (docker-compose.yaml sets the
// same).
const HeadSamplerEnv = "OTEL_TRACES_SAMPLER=parentbased_always_on"

// OTelEnv returns OTEL_* variables that point an OTLP-exporting program
// (e.g. the example app) at the collector over gRPC, with HeadSamplerEnv.
func (s *Stack) OTelEnv() []string {
	return OTelEnvGRPC(s.CollectorOTLPGRPC)
}

// OTelEnvGRPC is OTelEnv for the collector whose OTLP gRPC receiver is at
// addr.
func OTelEnvGRPC(addr string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_INSECURE=true",
		HeadSamplerEnv,
	}
}

// OTelEnvHTTP is OTelEnv for OTLP over HTTP (http/protobuf) to the
// collector's HTTP receiver.
func (s *Stack) OTelEnvHTTP() []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + s.CollectorOTLPHTTP,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		HeadSamplerEnv,
	}
}

// Stop stops the collector (so that it flushes), then Jaeger and Prometheus.
// It removes the temporary directory unless OTELQUEUE_E2E_KEEP=1.
func (s *Stack) Stop() {
	s.stop(false)
}

// StopKeep stops like Stop but always keeps the temporary directory (for a
// failed run: the logs stay for inspection).
func (s *Stack) StopKeep() {
	s.stop(true)
}

func (s *Stack) stop(keep bool) {
	for _, p := range []*Process{s.Collector, s.Jaeger, s.Prometheus} {
		if p == nil {
			continue
		}
		if err := p.Stop(10 * time.Second); err != nil {
			fmt.Fprintf(s.log, "e2e: %v\n", err)
		}
	}
	if keep || os.Getenv("OTELQUEUE_E2E_KEEP") == "1" {
		fmt.Fprintf(s.log, "e2e: kept %s (configs, logs, TSDB)\n", s.Dir)
		return
	}
	os.RemoveAll(s.Dir)
}

// DumpLogs writes the last n lines of every server's log to w.
func (s *Stack) DumpLogs(w io.Writer, n int) {
	for _, p := range []*Process{s.Jaeger, s.Collector, s.Prometheus} {
		if p == nil {
			continue
		}
		fmt.Fprintf(w, "\n--- last %d lines of %s (%s):\n%s\n", n, p.Name, p.LogPath, p.Tail(n))
	}
}
