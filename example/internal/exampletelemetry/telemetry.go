// Package exampletelemetry sets up OpenTelemetry for otelqueue's example
// controllers (example/app and example/controllerruntime): tracer and meter
// providers, exporters chosen by the standard OTEL_* variables (OTLP over
// gRPC or HTTP, console, none; docs/environment.md lists them), a Prometheus
// endpoint through the OpenTelemetry exporter bridge, and an error handler
// that keeps export problems from flooding the log.
package exampletelemetry

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/shard"
)

// Config says what to set up.
type Config struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME says otherwise.
	ServiceName string
	// MetricsAddr is the -metrics-addr flag: where /metrics is served
	// (empty: no Prometheus endpoint). It serves whatever
	// OTEL_METRICS_EXPORTER says; OTEL_METRICS_EXPORTER=prometheus names it.
	MetricsAddr string
	// Gatherer is served at /metrics with the exporter's series, in one
	// scrape. Nil means the Go and process collectors.
	Gatherer prometheus.Gatherer
	// NativeHistograms gives the queue-wait and work-duration histograms
	// native buckets beside their classic ones, as controller-runtime serves
	// them (otelqueuesdk.NativeHistograms): in one histogram at /metrics
	// (otelqueuesdk.MergeNativeHistograms), and as a second stream, an
	// exponential histogram named <name>.native, over OTLP.
	NativeHistograms bool
	// Sizer, when set, is the inspector's: its page starts with the
	// Sizer's recommendation.
	Sizer *otelqueue.Sizer
	// Shard, when set (-shards), is on the resource (Shard.Attributes: the
	// spans and metrics carry it) and reported as workqueue.shard.share;
	// nil, shard 0 of 1 is reported.
	Shard *shard.Shard
	// SpanProcessor, when set (by tests), also receives every span.
	SpanProcessor sdktrace.SpanProcessor
	// Logf receives warnings, export problems and the flush notice. Nil
	// means log.Printf.
	Logf func(format string, args ...any)
}

// Telemetry holds the SDK providers and what serves or exports them.
type Telemetry struct {
	TracerProvider *sdktrace.TracerProvider
	MeterProvider  *sdkmetric.MeterProvider
	// MetricsURL is the Prometheus endpoint, empty without one;
	// InspectorURL the queue inspector (otelqueue.Inspector) beside it,
	// whose trace ids link to $OTELQUEUE_TRACE_URL when set (e.g.
	// http://127.0.0.1:16686/trace/{trace_id}, Jaeger's UI).
	MetricsURL, InspectorURL string
	// OTLP says what goes where over OTLP, as dialled, e.g. "traces over
	// OTLP gRPC to 127.0.0.1:4317 (plaintext)".
	OTLP []string
	// Console names the signals written to stdout (OTEL_TRACES_EXPORTER,
	// OTEL_METRICS_EXPORTER=console): "traces", "metrics".
	Console []string

	server   *http.Server
	logf     func(format string, args ...any)
	errors   *throttledLog
	stopOnce sync.Once
	stopErr  error
}

// Setup builds the tracer and meter providers from cfg and the standard
// OTEL_* variables, installs them, the W3C propagators and the error
// handler globally, and starts serving /metrics. A malformed or unsupported
// OTEL_* value is an error that names it.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	if err := checkSDKEnv(); err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)),
		resource.WithAttributes(cfg.Shard.Attributes()...),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("building the telemetry resource: %w", err)
	}

	t := &Telemetry{logf: cfg.Logf}
	if t.logf == nil {
		t.logf = log.Printf
	}
	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		// Keep the trace of an attempt whenever the change that caused it
		// was sampled; otherwise sample every root (a demo).
		traceOpts = append(traceOpts, sdktrace.WithSampler(otelqueuesdk.LinkSampled(sdktrace.ParentBased(sdktrace.AlwaysSample()))))
	} // else the SDK reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG.
	metricOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if cfg.NativeHistograms {
		metricOpts = append(metricOpts, sdkmetric.WithView(otelqueuesdk.NativeHistograms(0)...))
	}

	// Exporters per signal, as OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER
	// and OTEL_EXPORTER_OTLP_* ask (exporters.go). They connect lazily and
	// export from background goroutines, so an unreachable collector
	// delays no reconcile; its errors are logged below.
	var stops []func(context.Context) error
	fail := func(err error) (*Telemetry, error) {
		for _, stop := range stops {
			_ = stop(ctx)
		}
		return nil, err
	}
	spanExps, traceTargets, err := spanExporters(ctx)
	if err != nil {
		for _, e := range spanExps {
			_ = e.Shutdown(ctx)
		}
		return nil, err
	}
	for _, e := range spanExps {
		// The processor's Shutdown stops its goroutine and the exporter.
		bsp := sdktrace.NewBatchSpanProcessor(e)
		stops = append(stops, bsp.Shutdown)
		traceOpts = append(traceOpts, sdktrace.WithSpanProcessor(bsp))
	}
	readers, metricTargets, prometheusNamed, err := metricReaders(ctx)
	for _, r := range readers {
		stops = append(stops, r.Shutdown)
		metricOpts = append(metricOpts, sdkmetric.WithReader(r))
	}
	if err != nil {
		return fail(err)
	}
	if prometheusNamed && cfg.MetricsAddr == "" {
		return fail(errors.New("OTEL_METRICS_EXPORTER names prometheus, which is served at -metrics-addr, and -metrics-addr is empty: set it, e.g. -metrics-addr 127.0.0.1:9464"))
	}
	for _, tg := range traceTargets {
		t.OTLP = append(t.OTLP, "traces over "+tg.String())
	}
	if consoleNamed(signalTraces) {
		t.Console = append(t.Console, "traces")
	}
	if consoleNamed(signalMetrics) {
		t.Console = append(t.Console, "metrics")
	}
	for _, tg := range metricTargets {
		t.OTLP = append(t.OTLP, "metrics over "+tg.String())
	}

	if cfg.MetricsAddr != "" {
		gatherer := cfg.Gatherer
		if gatherer == nil {
			runtimeReg := prometheus.NewRegistry()
			runtimeReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			gatherer = runtimeReg
		}
		// The exporter gets a registry of its own, gathered with the
		// other in one scrape: a series in both would fail the scrape.
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			return fail(fmt.Errorf("building the Prometheus exporter: %w", err))
		}
		metricOpts = append(metricOpts, sdkmetric.WithReader(exp))
		ln, err := listenMetrics(cfg.MetricsAddr)
		if err != nil {
			return fail(err)
		}
		if w := exposureWarning(ln.Addr()); w != "" {
			t.logf("%s", w)
		}
		mux := http.NewServeMux()
		var served prometheus.Gatherer = reg
		if cfg.NativeHistograms {
			served = otelqueuesdk.MergeNativeHistograms(reg)
		}
		// OpenMetrics carries the exemplars; a Prometheus that scrapes native
		// histograms asks for the protobuf format, which has both.
		mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{gatherer, served}, promhttp.HandlerOpts{EnableOpenMetrics: true}))
		// The queues' keys and traces, read-only, on the same (loopback by
		// default) address as the metrics.
		in := &otelqueue.Inspector{TraceURL: os.Getenv("OTELQUEUE_TRACE_URL"), Sizer: cfg.Sizer}
		if cfg.Shard != nil {
			in.Shard = cfg.Shard
		}
		mux.Handle("/debug/queues", in)
		t.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		t.MetricsURL = "http://" + ln.Addr().String() + "/metrics"
		t.InspectorURL = "http://" + ln.Addr().String() + "/debug/queues"
		go func() {
			if err := t.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.logf("metrics server: %v", err)
			}
		}()
	}

	if cfg.SpanProcessor != nil {
		traceOpts = append(traceOpts, sdktrace.WithSpanProcessor(cfg.SpanProcessor))
	}
	t.TracerProvider = sdktrace.NewTracerProvider(traceOpts...)
	t.MeterProvider = sdkmetric.NewMeterProvider(metricOpts...)
	t.errors = &throttledLog{every: 30 * time.Second, logf: t.logf}
	otel.SetTracerProvider(t.TracerProvider)
	otel.SetMeterProvider(t.MeterProvider)
	// Unsharded, the replica reports shard 0 of 1, the whole hash space:
	// the fleet's rules read it as a fleet of one, and say when it needs
	// shards (WorkqueueShardsTooFew).
	s := cfg.Shard
	if s == nil {
		s, _ = shard.New(0, 1, "uid")
	}
	if _, err := s.Instrument(t.MeterProvider); err != nil {
		return nil, err
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(t.errors)
	return t, nil
}

// Shutdown flushes and stops everything, within ctx: with OTLP export on,
// it first logs that it is flushing, where to, and for how long at most (an
// unreachable collector holds the flush until ctx ends). Exports cut short
// by the shutdown itself are not reported as problems. A second call
// returns the first one's result.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.stopOnce.Do(func() { t.stopErr = t.shutdown(ctx) })
	return t.stopErr
}

func (t *Telemetry) shutdown(ctx context.Context) error {
	logf := t.logf
	if logf == nil {
		logf = log.Printf
	}
	if t.errors != nil {
		t.errors.stopping.Store(true)
	}
	deadline, bounded := ctx.Deadline()
	if len(t.OTLP) > 0 {
		limit := "until interrupted"
		if bounded {
			limit = fmt.Sprintf("at most %s", time.Until(deadline).Round(100*time.Millisecond))
		}
		logf("flushing telemetry (%s), %s", strings.Join(t.OTLP, ", "), limit)
	}
	var errs []error
	if t.TracerProvider != nil {
		if err := t.TracerProvider.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("traces: %w", err))
		}
	}
	if t.MeterProvider != nil {
		if err := t.MeterProvider.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("metrics: %w", err))
		}
	}
	if t.server != nil {
		if err := t.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("metrics server: %w", err))
		}
	}
	err := errors.Join(errs...)
	if err != nil && ctx.Err() != nil && len(t.OTLP) > 0 {
		return fmt.Errorf("not flushed in time, what was left is lost (is the collector reachable?): %w", err)
	}
	return err
}

// throttledLog logs OpenTelemetry errors (an unreachable collector, say) at
// most once per interval, with a count of those it held back. Once the
// shutdown has begun, an export it cancelled (context.Canceled) is no
// problem: what it carried is collected again and flushed by the shutdown.
type throttledLog struct {
	every    time.Duration
	logf     func(format string, args ...any)
	stopping atomic.Bool

	mu      sync.Mutex
	last    time.Time
	dropped int
}

// Handle implements otel.ErrorHandler.
func (l *throttledLog) Handle(err error) {
	if l.stopping.Load() && errors.Is(err, context.Canceled) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.last) >= l.every {
		suffix := ""
		if l.dropped > 0 {
			suffix = fmt.Sprintf(" (and %d more errors since the last report)", l.dropped)
		}
		l.logf("telemetry export problem, reconciles are not affected: %v%s", err, suffix)
		l.last, l.dropped = now, 0
		return
	}
	l.dropped++
}
