package kubeclient

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/clientwork"
)

// transport measures every round trip of an instrumented config's clients.
type transport struct {
	next        http.RoundTripper
	tracer      trace.Tracer
	propagators propagation.TextMapPropagator
	duration    metric.Float64Histogram

	// sets caches the metric's attribute sets by metricKey: building and
	// sorting a set per request would cost more than the rest of the
	// instrumentation. Its size is bounded by maxSets.
	sets  sync.Map // metricKey -> []metric.RecordOption
	nSets atomic.Int32
}

// maxSets bounds the cached attribute sets: the keys are bounded in practice
// (methods, resources, status codes), but a client that reaches many API
// servers or resources should not grow the cache without end.
const maxSets = 4096

// metricKey is the attributes of one request's metric point.
type metricKey struct {
	method, host          string
	port                  int
	verb, group, resource string
	code                  int
	errorType             string
}

// recordOptions returns the metric options of the point k, cached.
func (t *transport) recordOptions(k metricKey) []metric.RecordOption {
	if v, ok := t.sets.Load(k); ok {
		return v.([]metric.RecordOption)
	}
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs, method(k.method), semconv.ServerAddress(k.host))
	if k.port > 0 {
		attrs = append(attrs, semconv.ServerPort(k.port))
	}
	if k.verb != "" {
		attrs = append(attrs, attribute.String(AttrVerb, k.verb), attribute.String(AttrGroup, k.group), attribute.String(AttrResource, k.resource))
	}
	if k.code > 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(k.code))
	}
	if k.errorType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(k.errorType))
	}
	opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
	if t.nSets.Add(1) <= maxSets {
		t.sets.Store(k, opts)
	}
	return opts
}

// RoundTrip sends req, under a client span when req's context carries a
// span, and records its duration, status and Kubernetes verb and resource;
// inside a reconcile attempt it also adds the round trip to the attempt.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	start := time.Now()
	w := clientwork.FromContext(ctx)
	if w != nil {
		if since := w.Begin(start); !since.IsZero() && trace.SpanFromContext(ctx).IsRecording() {
			// A retry that did not wait for the rate limiter (none set).
			_, s := t.tracer.Start(ctx, SpanRetryAfter, trace.WithTimestamp(since))
			s.End(trace.WithTimestamp(start))
		}
	}
	traced := trace.SpanFromContext(ctx).SpanContext().IsValid()
	r := parseRequest(req.Method, req.URL.Path, req.URL.RawQuery, traced)
	k := metricKey{method: req.Method, verb: r.verb, group: r.group, resource: r.resource}
	k.host, k.port = splitHostPort(req.URL)

	var span trace.Span
	if traced {
		ctx, span = t.tracer.Start(ctx, req.Method+" "+r.template, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
		if span.IsRecording() {
			attrs := make([]attribute.KeyValue, 0, 11)
			attrs = append(attrs, method(req.Method), semconv.ServerAddress(k.host), semconv.URLFull(req.URL.String()), semconv.URLTemplate(r.template))
			if k.port > 0 {
				attrs = append(attrs, semconv.ServerPort(k.port))
			}
			if r.verb != "" {
				attrs = append(attrs, attribute.String(AttrVerb, r.verb), attribute.String(AttrGroup, r.group), attribute.String(AttrResource, r.resource))
			}
			if r.namespace != "" {
				attrs = append(attrs, semconv.K8SNamespaceName(r.namespace))
			}
			if r.name != "" {
				attrs = append(attrs, attribute.String(AttrName, r.name))
			}
			span.SetAttributes(attrs...)
		}
		// The RoundTripper contract forbids changing req: send a copy
		// that carries the span's context.
		req = req.Clone(ctx)
		t.propagators.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}

	resp, err := t.next.RoundTrip(req)
	end := time.Now()
	d := end.Sub(start)

	if resp != nil {
		k.code = resp.StatusCode
	}
	switch {
	case err != nil:
		k.errorType = semconv.ErrorType(err).Value.AsString()
	case k.code >= 400:
		k.errorType = strconv.Itoa(k.code)
	}
	throttled := k.code == http.StatusTooManyRequests
	retryAfter := throttled && resp.Header.Get("Retry-After") != ""
	if w != nil {
		w.RoundTrip(d, end, throttled, retryAfter)
	}
	t.duration.Record(ctx, d.Seconds(), t.recordOptions(k)...)

	if span != nil && span.IsRecording() {
		if resp != nil {
			span.SetAttributes(semconv.HTTPResponseStatusCode(k.code))
		}
		switch {
		case err != nil:
			span.SetAttributes(semconv.ErrorTypeKey.String(k.errorType))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		case k.code >= 400:
			// Client spans: every 4xx and 5xx is an error (semantic
			// conventions); the message is the status text.
			span.SetAttributes(semconv.ErrorTypeKey.String(k.errorType))
			span.SetStatus(codes.Error, k.errorType+" "+http.StatusText(k.code))
		}
		if retryAfter {
			span.SetAttributes(attribute.StringSlice("http.response.header.retry-after", resp.Header.Values("Retry-After")))
		}
	}
	if span != nil {
		span.End(trace.WithTimestamp(end))
	}
	return resp, err
}

// method is the http.request.method attribute: the known methods as they
// are, any other as _OTHER (semantic conventions).
func method(m string) attribute.KeyValue {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodHead, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return semconv.HTTPRequestMethodKey.String(m)
	}
	return semconv.HTTPRequestMethodOther
}

// splitHostPort returns the host and port a request goes to, the scheme's
// default port when the URL names none.
func splitHostPort(u *url.URL) (string, int) {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return u.Hostname(), p
	}
	switch u.Scheme {
	case "https":
		return u.Hostname(), 443
	case "http":
		return u.Hostname(), 80
	}
	return u.Hostname(), 0
}
