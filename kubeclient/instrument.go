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
	"k8s.io/client-go/util/flowcontrol"

	"github.com/otelqueue/otelqueue/internal/clientwork"
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
	// MetricWatches is the watch streams open (an informer holds one per
	// resource it watches), by server.address, server.port and the
	// request's group and resource: 0 for a resource a controller
	// watches is a controller that sees no change (ReadWatchStats).
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

// Instrument returns a copy of cfg whose client-side rate limiter and
// transport are instrumented (see the package documentation); cfg itself is
// not changed. Build every client that reconcilers use from the copy.
//
// The rate limiter is cfg.RateLimiter when set, otherwise the token bucket
// client-go would build from cfg.QPS and cfg.Burst (5 and 10 when zero; none
// when QPS is negative, as controller-runtime's GetConfig sets it), made
// here once and shared by every client built from the copy.
//
// Instrument refuses a nil config, a config it returned (instrumenting twice
// would count every request twice), a negative Burst with a positive QPS
// (client-go's limiter would refuse every request), and nil providers given
// as options. Errors in creating instruments go to otel.Handle and leave
// the others working.
func Instrument(cfg *rest.Config, opts ...Option) (*rest.Config, error) {
	if cfg == nil {
		return nil, errors.New("kubeclient: Instrument needs a *rest.Config, got nil")
	}
	if _, ok := cfg.RateLimiter.(*limiter); ok {
		return nil, errors.New("kubeclient: the config is instrumented already (it came from Instrument): instrumenting it again would count every request twice")
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	base := cfg.RateLimiter
	if base == nil {
		qps, burst := cfg.QPS, cfg.Burst
		if qps == 0 {
			qps = rest.DefaultQPS
		}
		if burst == 0 {
			burst = rest.DefaultBurst
		}
		if qps > 0 {
			if burst < 0 {
				return nil, fmt.Errorf("kubeclient: the config's Burst is %d with QPS %g: a token bucket with a negative burst lets no request through; use a Burst of 1 or more (0 for client-go's default of %d)", cfg.Burst, cfg.QPS, rest.DefaultBurst)
			}
			base = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		}
	}

	clientwork.Enable() // otelqueue's attempts carry a Work from now on
	in := newInstruments(c.meterProvider)
	tracer := c.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(otelqueue.Version))
	out := rest.CopyConfig(cfg)
	out.RateLimiter = &limiter{base: base, tracer: tracer, wait: in.limiter}
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &transport{next: next, tracer: tracer, propagators: c.propagators, duration: in.request, watches: in.watches}
	})
	return out, nil
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
