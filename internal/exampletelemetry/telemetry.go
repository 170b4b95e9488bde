// Package exampletelemetry sets up OpenTelemetry for otelqueue's example
// controllers (example/app and controllerruntime/example): tracer and meter
// providers from the standard OTEL_* variables, OTLP gRPC export per signal,
// a Prometheus endpoint through the OpenTelemetry exporter bridge, and an
// error handler that keeps export problems from flooding the log.
package exampletelemetry

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelqueue/otelqueue/otelqueuesdk"
)

// Config says what to set up.
type Config struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME says otherwise.
	ServiceName string
	// MetricsAddr is the -metrics-addr flag: where /metrics is served
	// (empty: no Prometheus endpoint).
	MetricsAddr string
	// Gatherer is served at /metrics with the exporter's series, in one
	// scrape. Nil means the Go and process collectors.
	Gatherer prometheus.Gatherer
	// SpanProcessor, when set (by tests), also receives every span.
	SpanProcessor sdktrace.SpanProcessor
}

// Telemetry holds the SDK providers and what serves or exports them.
type Telemetry struct {
	TracerProvider *sdktrace.TracerProvider
	MeterProvider  *sdkmetric.MeterProvider
	// MetricsURL is the Prometheus endpoint, empty without one.
	MetricsURL string
	// OTLP says what goes where over OTLP ("traces to ...").
	OTLP []string

	server *http.Server
}

// Setup builds the tracer and meter providers from cfg and the standard
// OTEL_* variables, installs them, the W3C propagators and the error
// handler globally, and starts serving /metrics.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("building the telemetry resource: %w", err)
	}

	t := &Telemetry{}
	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		// Keep the trace of an attempt whenever the change that caused it
		// was sampled; otherwise sample every root (a demo).
		traceOpts = append(traceOpts, sdktrace.WithSampler(otelqueuesdk.LinkSampled(sdktrace.ParentBased(sdktrace.AlwaysSample()))))
	} // else the SDK reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG.
	metricOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}

	// OTLP per signal, as the OTEL_EXPORTER_OTLP_* variables ask. The
	// exporters read those variables themselves. They connect lazily and
	// export from background goroutines, so an unreachable collector
	// delays no reconcile; its errors are logged below.
	var exporters []interface{ Shutdown(context.Context) error }
	fail := func(err error) (*Telemetry, error) {
		for _, e := range exporters {
			_ = e.Shutdown(ctx)
		}
		return nil, err
	}
	if endpoint := otlpEndpoint("TRACES"); endpoint != "" {
		t.OTLP = append(t.OTLP, "traces to "+endpoint)
		te, err := otlptracegrpc.New(ctx)
		if err != nil {
			return fail(fmt.Errorf("OTLP trace exporter for %s: %w", endpoint, err))
		}
		exporters = append(exporters, te)
		traceOpts = append(traceOpts, sdktrace.WithBatcher(te))
	}
	if endpoint := otlpEndpoint("METRICS"); endpoint != "" {
		t.OTLP = append(t.OTLP, "metrics to "+endpoint)
		me, err := otlpmetricgrpc.New(ctx)
		if err != nil {
			return fail(fmt.Errorf("OTLP metric exporter for %s: %w", endpoint, err))
		}
		exporters = append(exporters, me)
		// The periodic reader honours OTEL_METRIC_EXPORT_INTERVAL.
		metricOpts = append(metricOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)))
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
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fail(fmt.Errorf("-metrics-addr %s: %w (is another instance running? pick another port or -metrics-addr '')", cfg.MetricsAddr, err))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{gatherer, reg}, promhttp.HandlerOpts{EnableOpenMetrics: true}))
		t.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		t.MetricsURL = "http://" + ln.Addr().String() + "/metrics"
		go func() {
			if err := t.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Printf("metrics server: %v", err)
			}
		}()
	}

	if cfg.SpanProcessor != nil {
		traceOpts = append(traceOpts, sdktrace.WithSpanProcessor(cfg.SpanProcessor))
	}
	t.TracerProvider = sdktrace.NewTracerProvider(traceOpts...)
	t.MeterProvider = sdkmetric.NewMeterProvider(metricOpts...)
	otel.SetTracerProvider(t.TracerProvider)
	otel.SetMeterProvider(t.MeterProvider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(&throttledLog{every: 30 * time.Second})
	return t, nil
}

// otlpEndpoint returns the OTLP endpoint configured for signal ("TRACES"
// or "METRICS"), if any: OTEL_EXPORTER_OTLP_<signal>_ENDPOINT, else
// OTEL_EXPORTER_OTLP_ENDPOINT.
func otlpEndpoint(signal string) string {
	if e := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"); e != "" {
		return e
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
}

// Shutdown flushes and stops everything, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if err := t.TracerProvider.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("traces: %w", err))
	}
	if err := t.MeterProvider.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("metrics: %w", err))
	}
	if t.server != nil {
		if err := t.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("metrics server: %w", err))
		}
	}
	return errors.Join(errs...)
}

// throttledLog logs OpenTelemetry errors (an unreachable collector, say) at
// most once per interval, with a count of those it held back.
type throttledLog struct {
	every time.Duration

	mu      sync.Mutex
	last    time.Time
	dropped int
}

func (l *throttledLog) Handle(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.last) >= l.every {
		suffix := ""
		if l.dropped > 0 {
			suffix = fmt.Sprintf(" (and %d more errors since the last report)", l.dropped)
		}
		log.Printf("telemetry export problem, reconciles are not affected: %v%s", err, suffix)
		l.last, l.dropped = now, 0
		return
	}
	l.dropped++
}
