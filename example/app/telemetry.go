package main

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

// telemetry holds the SDK providers and what serves or exports them.
type telemetry struct {
	tp         *sdktrace.TracerProvider
	mp         *sdkmetric.MeterProvider
	server     *http.Server
	metricsURL string
	otlp       []string // what goes where over OTLP
}

// setupTelemetry builds the tracer and meter providers from the flags and the
// standard OTEL_* variables and installs them globally.
func setupTelemetry(ctx context.Context, cfg config) (*telemetry, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("otelqueue-example")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("building the telemetry resource: %w", err)
	}

	t := &telemetry{}
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
	fail := func(err error) (*telemetry, error) {
		for _, e := range exporters {
			_ = e.Shutdown(ctx)
		}
		return nil, err
	}
	if endpoint := otlpEndpoint("TRACES"); endpoint != "" {
		t.otlp = append(t.otlp, "traces to "+endpoint)
		te, err := otlptracegrpc.New(ctx)
		if err != nil {
			return fail(fmt.Errorf("OTLP trace exporter for %s: %w", endpoint, err))
		}
		exporters = append(exporters, te)
		traceOpts = append(traceOpts, sdktrace.WithBatcher(te))
	}
	if endpoint := otlpEndpoint("METRICS"); endpoint != "" {
		t.otlp = append(t.otlp, "metrics to "+endpoint)
		me, err := otlpmetricgrpc.New(ctx)
		if err != nil {
			return fail(fmt.Errorf("OTLP metric exporter for %s: %w", endpoint, err))
		}
		exporters = append(exporters, me)
		// The periodic reader honours OTEL_METRIC_EXPORT_INTERVAL.
		metricOpts = append(metricOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)))
	}

	if cfg.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			return fail(fmt.Errorf("Prometheus exporter: %w", err))
		}
		metricOpts = append(metricOpts, sdkmetric.WithReader(exp))
		ln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			return fail(fmt.Errorf("-metrics-addr %s: %w (is another instance running? pick another port or -metrics-addr '')", cfg.metricsAddr, err))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
		t.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		t.metricsURL = "http://" + ln.Addr().String() + "/metrics"
		go func() {
			if err := t.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Printf("metrics server: %v", err)
			}
		}()
	}

	t.tp = sdktrace.NewTracerProvider(traceOpts...)
	t.mp = sdkmetric.NewMeterProvider(metricOpts...)
	otel.SetTracerProvider(t.tp)
	otel.SetMeterProvider(t.mp)
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

// shutdown flushes and stops everything, within ctx.
func (t *telemetry) shutdown(ctx context.Context) error {
	var errs []error
	if err := t.tp.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("traces: %w", err))
	}
	if err := t.mp.Shutdown(ctx); err != nil {
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
