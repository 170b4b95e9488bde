package kubeclient

import (
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// Metric instrument names.
const (
	// MetricRequestDuration is the OpenTelemetry semantic conventions' HTTP
	// client request duration: one record per round trip, from sending the
	// request to its response's headers (a watch's stream is not in it).
	MetricRequestDuration = "http.client.request.duration"
	// MetricRateLimiterDuration is the time a request waited for the
	// client-side rate limiter, as client-go's
	// rest_client_rate_limiter_duration_seconds.
	MetricRateLimiterDuration = "kubernetes.client.rate_limiter.duration"
	// MetricWatches is the watch streams open and carrying data (an
	// informer holds one per resource it watches; a stream that asked for
	// bookmarks and got nothing for StaleAfter is not counted until data
	// comes again), by server.address, server.port and the request's group
	// and resource: 0 for a resource a controller watches is a controller
	// that sees no change (ReadWatchStats).
	MetricWatches = "kubernetes.client.watches"
)

// Attribute keys of the Kubernetes request, on the request metric and span
// (the others are the semantic conventions' HTTP client attributes).
const (
	// AttrVerb is the Kubernetes verb: get, list, watch, create, update,
	// patch, delete, deletecollection; absent for a path that names no
	// resource (discovery, /version).
	AttrVerb = "kubernetes.request.verb"
	// AttrResource is the resource, with its subresource after a slash
	// (configmaps, pods/status), as in RBAC rules.
	AttrResource = "kubernetes.request.resource"
	// AttrGroup is the API group, "" for the core group.
	AttrGroup = "kubernetes.request.group"
	// AttrName is the object's name, on the span only.
	AttrName = "kubernetes.request.name"
)

// Span names of the waits (the requests' spans are named "{method}
// {url.template}").
const (
	// SpanRateLimiter is a wait for the client-side rate limiter of
	// WaitSpanThreshold or more.
	SpanRateLimiter = "client rate limiter"
	// SpanRetryAfter is client-go's wait between a 429 answer with
	// Retry-After and its retry.
	SpanRetryAfter = "retry after"
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
	tracer := c.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(otelqueue.Version))
	out := rest.CopyConfig(cfg)
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
		return &transport{next: next, tracer: tracer, propagators: c.propagators, duration: in.request, watches: in.watches}
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
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(otelqueue.Version))
	var in instruments
	var err error
	in.request, err = m.Float64Histogram(MetricRequestDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP client requests."),
		metric.WithExplicitBucketBoundaries(requestDurationBuckets...))
	if err != nil {
		otel.Handle(err)
		in.request, _ = noop.Meter{}.Float64Histogram(MetricRequestDuration)
	}
	in.limiter, err = m.Float64Histogram(MetricRateLimiterDuration, metric.WithUnit("s"),
		metric.WithDescription("How long in seconds a Kubernetes API request waited for the client-side rate limiter."),
		metric.WithExplicitBucketBoundaries(limiterBuckets...))
	if err != nil {
		otel.Handle(err)
		in.limiter, _ = noop.Meter{}.Float64Histogram(MetricRateLimiterDuration)
	}
	in.watches, err = m.Int64UpDownCounter(MetricWatches, metric.WithUnit("{watch}"),
		metric.WithDescription("Watch streams of the Kubernetes API open."))
	if err != nil {
		otel.Handle(err)
		in.watches, _ = noop.Meter{}.Int64UpDownCounter(MetricWatches)
	}
	return in
}
