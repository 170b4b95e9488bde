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
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/otelqueue/otelqueue/otelqueuesdk"
)

// telemetry holds the SDK providers and what serves or exports them.
type telemetry struct {
	tp         *sdktrace.TracerProvider
	mp         *sdkmetric.MeterProvider
	server     *http.Server
	metricsURL string
}

// setupTelemetry builds the providers from the flags and the OTEL_*
// variables, installs them globally (controllerruntime.New uses the global
// providers by default) and serves /metrics.
func setupTelemetry(ctx context.Context, cfg config) (*telemetry, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("otelqueue-controller-runtime-example")),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("building the telemetry resource: %w", err)
	}
	t := &telemetry{}
	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		traceOpts = append(traceOpts, sdktrace.WithSampler(otelqueuesdk.LinkSampled(sdktrace.ParentBased(sdktrace.AlwaysSample()))))
	}
	metricOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if cfg.metricsAddr != "" {
		// The exporter gets a registry of its own; /metrics gathers it with
		// controller-runtime's. A series in both would fail the scrape, so
		// a clean scrape shows that nothing is counted twice.
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			return nil, fmt.Errorf("Prometheus exporter: %w", err)
		}
		metricOpts = append(metricOpts, sdkmetric.WithReader(exp))
		ln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			return nil, fmt.Errorf("-metrics-addr %s: %w (is another instance running? pick another port or -metrics-addr '')", cfg.metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{ctrlmetrics.Registry, reg}, promhttp.HandlerOpts{EnableOpenMetrics: true}))
		t.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		t.metricsURL = "http://" + ln.Addr().String() + "/metrics"
		go func() {
			if err := t.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Printf("metrics server: %v", err)
			}
		}()
		log.Printf("metrics at %s", t.metricsURL)
	}
	// OTLP per signal, as the OTEL_EXPORTER_OTLP_* variables ask. The
	// exporters export in the background: an unreachable collector slows no
	// reconcile.
	var te *otlptrace.Exporter
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		te, err = otlptracegrpc.New(ctx)
		if err != nil {
			t.closeServer()
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		traceOpts = append(traceOpts, sdktrace.WithBatcher(te))
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" {
		me, err := otlpmetricgrpc.New(ctx)
		if err != nil {
			t.closeServer()
			if te != nil {
				_ = te.Shutdown(ctx)
			}
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		metricOpts = append(metricOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)))
	}
	if cfg.spans != nil {
		traceOpts = append(traceOpts, sdktrace.WithSpanProcessor(cfg.spans))
	}
	t.tp = sdktrace.NewTracerProvider(traceOpts...)
	t.mp = sdkmetric.NewMeterProvider(metricOpts...)
	otel.SetTracerProvider(t.tp)
	otel.SetMeterProvider(t.mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(&throttledLog{every: 30 * time.Second})
	return t, nil
}

// closeServer stops the metrics server, if any, when setup fails.
func (t *telemetry) closeServer() {
	if t.server != nil {
		_ = t.server.Close()
	}
}

// shutdown flushes and stops everything, within ctx.
func (t *telemetry) shutdown(ctx context.Context) error {
	errs := []error{t.tp.Shutdown(ctx), t.mp.Shutdown(ctx)}
	if t.server != nil {
		errs = append(errs, t.server.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// throttledLog logs OpenTelemetry errors at most once per interval.
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
		log.Printf("telemetry export problem, reconciles are not affected: %v (%d more since the last report)", err, l.dropped)
		l.last, l.dropped = now, 0
		return
	}
	l.dropped++
}
