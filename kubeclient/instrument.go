package kubeclient

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/otelqueue/otelqueue/internal/program"
	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// requestDurationBuckets are the semantic conventions' advice for
// http.client.request.duration.
var requestDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// limiterBuckets go from 1ms to 60s: a token taken at once is in the first.
var limiterBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Instrument returns a copy of cfg whose transport, and client-side rate
// limiter when cfg sets one, are instrumented (see the package
// documentation); cfg itself is not changed. Build every client that
// reconcilers use from the copy. It changes no queue: a queue counts its
// attempts' requests only when instrumented with otelqueue.WithClientTime.
//
// The copy limits requests exactly as cfg does: every client built from it
// has the budget it would have without instrumentation. A RateLimiter that
// cfg sets (shared by the clients built from cfg, as client-go shares it) is
// wrapped to measure its waits. Without one, client-go builds a token bucket
// from QPS and Burst for each clientset or REST client it makes, as always;
// those waits are not measured (client-go gives no hook for them): to see
// them in kubernetes.client.rate_limiter.duration and the attempts'
// workqueue.client.rate_limiter.duration, set the limiter yourself before
// Instrument, cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS,
// cfg.Burst), which every client built from the config then shares.
//
// Instrument refuses a nil config, a config it returned or a copy of one
// (instrumenting twice would count every request twice; a config wrapped
// by a RoundTripper of the caller's after Instrument hides the first
// instrumentation, and is accepted: its requests are counted once, by the
// outer one), a negative Burst
// with a positive QPS and no RateLimiter (client-go would refuse to build a
// client from it), and a provider given as an option that is a typed nil
// (a nil *sdkmetric.MeterProvider; an untyped nil is the global provider,
// as in otelhttp's options). Errors in creating
// instruments go to otel.Handle and leave the others working.
func Instrument(cfg *rest.Config, opts ...Option) (*rest.Config, error) {
	if cfg == nil {
		return nil, errors.New("kubeclient: Instrument needs a *rest.Config, got nil")
	}
	if _, ok := cfg.RateLimiter.(*limiter); ok || instrumented(cfg) {
		return nil, errors.New("kubeclient: the config is instrumented already (it came from Instrument): instrumenting it again would count every request twice")
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 && cfg.Burst < 0 {
		return nil, fmt.Errorf("kubeclient: the config's Burst is %d with QPS %g: a token bucket with a negative burst lets no request through; use a Burst of 1 or more (0 for client-go's default of %d)", cfg.Burst, cfg.QPS, rest.DefaultBurst)
	}

	in := newInstruments(c.meterProvider)
	tracer := c.tracerProvider.Tracer(semconv.ScopeKubeclient, trace.WithInstrumentationVersion(otelqueue.Version))
	out := rest.CopyConfig(cfg)
	prog := program.Of(c.meterProvider)
	if cfg.RateLimiter != nil {
		out.RateLimiter = &limiter{base: cfg.RateLimiter, tracer: tracer, wait: in.limiter}
	}
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		if _, ok := next.(*transport); ok {
			return next // instrumented below: count once
		}
		if next == nil {
			next = http.DefaultTransport // what an http.Client without a Transport uses
		}
		return &transport{next: next, tracer: tracer, propagators: c.propagators, duration: in.request, watches: in.watches, program: prog}
	})
	return out, nil
}

// instrumented reports whether cfg's transport wrappers include this
// package's: cfg came from Instrument (or is a copy of a config that did).
func instrumented(cfg *rest.Config) (ok bool) {
	if cfg.WrapTransport == nil {
		return false
	}
	// The wrappers get a transport of their own: one may configure the
	// transport it is given (http.DefaultTransport is the process's) or
	// panic on one it did not expect.
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, ok = cfg.WrapTransport(&http.Transport{}).(*transport)
	return ok
}

type instruments struct {
	request metric.Float64Histogram
	limiter metric.Float64Histogram
	watches metric.Int64UpDownCounter
}

func newInstruments(mp metric.MeterProvider) instruments {
	m := mp.Meter(semconv.ScopeKubeclient, metric.WithInstrumentationVersion(otelqueue.Version))
	var in instruments
	var err error
	in.request, err = m.Float64Histogram(semconv.MetricHTTPClientRequestDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP client requests."),
		metric.WithExplicitBucketBoundaries(requestDurationBuckets...))
	if err != nil {
		otel.Handle(err)
		in.request, _ = noop.Meter{}.Float64Histogram(semconv.MetricHTTPClientRequestDuration)
	}
	in.limiter, err = m.Float64Histogram(semconv.MetricKubernetesClientRateLimiterDuration, metric.WithUnit("s"),
		metric.WithDescription("How long in seconds a Kubernetes API request waited for the client-side rate limiter."),
		metric.WithExplicitBucketBoundaries(limiterBuckets...))
	if err != nil {
		otel.Handle(err)
		in.limiter, _ = noop.Meter{}.Float64Histogram(semconv.MetricKubernetesClientRateLimiterDuration)
	}
	in.watches, err = m.Int64UpDownCounter(semconv.MetricKubernetesClientWatches, metric.WithUnit("{watch}"),
		metric.WithDescription("Watch streams of the Kubernetes API open."))
	if err != nil {
		otel.Handle(err)
		in.watches, _ = noop.Meter{}.Int64UpDownCounter(semconv.MetricKubernetesClientWatches)
	}
	return in
}
