package kubeclient

import (
	"net/http"
	"net/url"
	"strconv"
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
	r := parseRequest(req.Method, req.URL.Path, req.URL.RawQuery)
	host, port := splitHostPort(req.URL)
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs, method(req.Method), semconv.ServerAddress(host))
	if port > 0 {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	if r.verb != "" {
		attrs = append(attrs, attribute.String(AttrVerb, r.verb), attribute.String(AttrGroup, r.group), attribute.String(AttrResource, r.resource))
	}
	common := len(attrs)

	var span trace.Span
	if parent := trace.SpanFromContext(ctx); parent.SpanContext().IsValid() {
		spanAttrs := append(attrs[:common:common], semconv.URLFull(req.URL.String()), semconv.URLTemplate(r.template))
		if r.namespace != "" {
			spanAttrs = append(spanAttrs, semconv.K8SNamespaceName(r.namespace))
		}
		if r.name != "" {
			spanAttrs = append(spanAttrs, attribute.String(AttrName, r.name))
		}
		ctx, span = t.tracer.Start(ctx, req.Method+" "+r.template,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start), trace.WithAttributes(spanAttrs...))
		// The RoundTripper contract forbids changing req: send a copy
		// that carries the span's context.
		req = req.Clone(ctx)
		t.propagators.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}

	resp, err := t.next.RoundTrip(req)
	end := time.Now()
	d := end.Sub(start)

	code := 0
	if resp != nil {
		code = resp.StatusCode
		attrs = append(attrs, semconv.HTTPResponseStatusCode(code))
	}
	switch {
	case err != nil:
		attrs = append(attrs, semconv.ErrorType(err))
	case code >= 400:
		attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(code)))
	}
	throttled := code == http.StatusTooManyRequests
	retryAfter := throttled && resp.Header.Get("Retry-After") != ""
	if w != nil {
		w.RoundTrip(d, end, throttled, retryAfter)
	}
	t.duration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))

	if span != nil {
		if resp != nil {
			span.SetAttributes(semconv.HTTPResponseStatusCode(code))
		}
		switch {
		case err != nil:
			span.SetAttributes(semconv.ErrorType(err))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		case code >= 400:
			// Client spans: every 4xx and 5xx is an error (semantic
			// conventions); the message is the status text.
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(code)))
			span.SetStatus(codes.Error, strconv.Itoa(code)+" "+http.StatusText(code))
		}
		if retryAfter {
			span.SetAttributes(attribute.StringSlice("http.response.header.retry-after", resp.Header.Values("Retry-After")))
		}
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
