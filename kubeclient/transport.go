package kubeclient

import (
	"context"
	"errors"
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
	otelconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/internal/program"
	"github.com/otelqueue/otelqueue/internal/semconv"
)

// measuredKey marks the context of a request an instrumented transport
// measures, so that another one under it lets it through unmeasured.
type measuredKey struct{}

// transport measures every round trip of an instrumented config's clients.
type transport struct {
	next        http.RoundTripper
	tracer      trace.Tracer
	propagators propagation.TextMapPropagator
	duration    metric.Float64Histogram
	watches     metric.Int64UpDownCounter
	program     *program.State // the counts of the provider's program

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
	attrs = append(attrs, method(k.method), otelconv.ServerAddress(k.host))
	if k.port > 0 {
		attrs = append(attrs, otelconv.ServerPort(k.port))
	}
	if k.verb != "" {
		attrs = append(attrs, semconv.AttrRequestVerb.String(k.verb), semconv.AttrRequestGroup.String(k.group), semconv.AttrRequestResource.String(k.resource))
	}
	if k.code > 0 {
		attrs = append(attrs, otelconv.HTTPResponseStatusCode(k.code))
	}
	if k.errorType != "" {
		attrs = append(attrs, otelconv.ErrorTypeKey.String(k.errorType))
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
	if ctx.Value(measuredKey{}) != nil {
		// Measured by an instrumented transport wrapped around this one (a
		// config instrumented again after a wrapper of its own hid the
		// first instrumentation from Instrument): counted once, there.
		return t.next.RoundTrip(req)
	}
	ctx = context.WithValue(ctx, measuredKey{}, struct{}{})
	start := time.Now()
	w := clientwork.FromContext(ctx)
	if w != nil {
		if since := w.Begin(start); !since.IsZero() && trace.SpanFromContext(ctx).IsRecording() {
			// A retry that did not wait for the rate limiter (none set).
			_, s := t.tracer.Start(ctx, semconv.SpanRetryAfter, trace.WithTimestamp(since))
			s.End(trace.WithTimestamp(start))
		}
	}
	traced := trace.SpanFromContext(ctx).SpanContext().IsValid()
	r := parseRequest(req.Method, req.URL.Path, req.URL.RawQuery, traced)
	k := metricKey{method: req.Method, verb: r.verb, group: r.group, resource: r.resource}
	k.host, k.port = splitHostPort(req.URL)
	object, write := singleObject(r.verb)
	if object {
		t.program.Server.ObjectBegin(write, start)
	}

	var span trace.Span
	if traced {
		ctx, span = t.startSpan(ctx, req, &r, &k, start)
		// The RoundTripper contract forbids changing req: send a copy
		// that carries the span's context.
		req = req.Clone(ctx)
		t.propagators.Inject(ctx, propagation.HeaderCarrier(req.Header))
	} else {
		req = req.WithContext(ctx)
	}

	resp, err := t.next.RoundTrip(req)
	end := time.Now()
	d := end.Sub(start)

	if resp != nil {
		k.code = resp.StatusCode
	}
	k.errorType = errorType(err, k.code)
	if object {
		t.program.Server.ObjectEnd(write, start, d)
	}
	t.program.Server.RoundTripEnded(unavailable(err, k.code))
	throttled := k.code == http.StatusTooManyRequests
	retryAfter := throttled && resp.Header.Get("Retry-After") != ""
	if w != nil {
		w.RoundTrip(d, end, throttled, retryAfter)
	}
	t.duration.Record(ctx, d.Seconds(), t.recordOptions(k)...)
	if r.verb == "watch" && err == nil && k.code/100 == 2 {
		attrs := []attribute.KeyValue{otelconv.ServerAddress(k.host), semconv.AttrRequestGroup.String(r.group), semconv.AttrRequestResource.String(r.resource)}
		if k.port > 0 {
			attrs = append(attrs, otelconv.ServerPort(k.port))
		}
		resp.Body = openWatch(resp.Body, &t.program.Watches, t.watches, []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}, asksBookmarks(req.URL.RawQuery))
	}

	if span != nil {
		endSpan(span, resp, err, &k, retryAfter, end)
	}
	return resp, err
}

// startSpan starts the client span of a request r (its metric key k) at
// start, with the HTTP client conventions' attributes and the Kubernetes
// request's.
func (t *transport) startSpan(ctx context.Context, req *http.Request, r *request, k *metricKey, start time.Time) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, req.Method+" "+r.template, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := make([]attribute.KeyValue, 0, 11)
	attrs = append(attrs, method(req.Method), otelconv.ServerAddress(k.host), otelconv.URLFull(req.URL.String()), otelconv.URLTemplate(r.template))
	if k.port > 0 {
		attrs = append(attrs, otelconv.ServerPort(k.port))
	}
	if r.verb != "" {
		attrs = append(attrs, semconv.AttrRequestVerb.String(r.verb), semconv.AttrRequestGroup.String(r.group), semconv.AttrRequestResource.String(r.resource))
	}
	if r.namespace != "" {
		attrs = append(attrs, otelconv.K8SNamespaceName(r.namespace))
	}
	if r.name != "" {
		attrs = append(attrs, semconv.AttrRequestName.String(r.name))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endSpan ends a request's client span at end with its answer: the status
// code, and for an error or a 4xx or 5xx answer the error type and status.
func endSpan(span trace.Span, resp *http.Response, err error, k *metricKey, retryAfter bool, end time.Time) {
	if span.IsRecording() {
		if resp != nil {
			span.SetAttributes(otelconv.HTTPResponseStatusCode(k.code))
		}
		switch {
		case err != nil:
			span.SetAttributes(otelconv.ErrorTypeKey.String(k.errorType))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		case k.code >= 400:
			// Client spans: every 4xx and 5xx is an error (semantic
			// conventions); the message is the status text.
			span.SetAttributes(otelconv.ErrorTypeKey.String(k.errorType))
			span.SetStatus(codes.Error, k.errorType+" "+http.StatusText(k.code))
		}
		if retryAfter {
			span.SetAttributes(attribute.StringSlice("http.response.header.retry-after", resp.Header.Values("Retry-After")))
		}
	}
	span.End(trace.WithTimestamp(end))
}

// errorType is the error.type attribute of a round trip that returned err
// and status code: empty for a success; "canceled" when the caller canceled
// it and "timeout" when its deadline passed (the semantic conventions'
// low-cardinality identifiers, which tell the caller's doing from the
// server's); the Go error's type for another transport error; the status
// code from 400 on.
func errorType(err error, code int) string {
	switch {
	case err == nil && code < 400:
		return ""
	case err == nil:
		return strconv.Itoa(code)
	case errors.Is(err, context.Canceled):
		return errorTypeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return errorTypeTimeout
	}
	return otelconv.ErrorType(err).Value.AsString()
}

// The error.type values of a round trip that ended before its answer for
// its context.
const (
	errorTypeCanceled = "canceled"
	errorTypeTimeout  = "timeout"
)

// unavailable says whether a round trip that returned err and status code
// failed for the API server: a transport error other than the caller's
// cancellation (connection refused or reset, a timeout), or a 5xx answer.
func unavailable(err error, code int) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled)
	}
	return code >= 500
}

// singleObject says whether verb acts on one object, the round trips whose
// time says how fast the API server answers (a list's grows with the
// collection, a watch's round trip ends at its first byte), and whether it
// writes it.
func singleObject(verb string) (object, write bool) {
	switch verb {
	case "get":
		return true, false
	case "create", "update", "patch", "delete":
		return true, true
	}
	return false, false
}

// method is the http.request.method attribute: the known methods as they
// are, any other as _OTHER (semantic conventions).
func method(m string) attribute.KeyValue {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodHead, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return otelconv.HTTPRequestMethodKey.String(m)
	}
	return otelconv.HTTPRequestMethodOther
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
