package kubeclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/kubeclient"
)

// apiServer is a loopback HTTP server answering ConfigMap GETs: "throttled"
// is refused with 429 and Retry-After: 0 as many times as throttle says,
// "missing" is not found, any other name is found. It keeps the traceparent
// headers it received.
type apiServer struct {
	*httptest.Server
	throttle atomic.Int32

	mu           sync.Mutex
	traceparents []string
	requests     int
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.traceparents = append(s.traceparents, r.Header.Get("Traceparent"))
	s.mu.Unlock()
	name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason metav1.StatusReason) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: string(reason)})
	}
	switch {
	case name == "throttled" && s.throttle.Add(-1) >= 0:
		w.Header().Set("Retry-After", "0")
		status(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	case name == "missing":
		status(http.StatusNotFound, metav1.StatusReasonNotFound)
	default:
		_ = json.NewEncoder(w).Encode(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", ResourceVersion: "1"}})
	}
}

func (s *apiServer) received() (n int, traceparents []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, append([]string(nil), s.traceparents...)
}

// telemetry is a real SDK: a manual metric reader and a span recorder.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
}

func newTelemetry(t *testing.T) *telemetry {
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	t.Cleanup(func() {
		_ = tel.mp.Shutdown(context.Background())
		_ = tel.tp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) options() []kubeclient.Option {
	return []kubeclient.Option{kubeclient.WithMeterProvider(tel.mp), kubeclient.WithTracerProvider(tel.tp),
		kubeclient.WithPropagators(propagation.TraceContext{})}
}

func (tel *telemetry) clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	icfg, err := kubeclient.Instrument(cfg, tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(icfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// requestPoints returns the http.client.request.duration points.
func (tel *telemetry) requestPoints(t *testing.T) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	rm := testutil.Collect(t, tel.reader)
	m := testutil.FindMetric(t, rm, semconv.ScopeKubeclient, semconv.MetricHTTPClientRequestDuration)
	if m.Unit != "s" {
		t.Errorf("%s has unit %q, want s", m.Name, m.Unit)
	}
	return m.Data.(metricdata.Histogram[float64]).DataPoints
}

func value(set attribute.Set, key attribute.Key) string {
	v, ok := set.Value(key)
	if !ok {
		return "<absent>"
	}
	return v.String()
}

func TestRequestOutsideAnySpan(t *testing.T) {
	srv := newAPIServer(t)
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: -1})

	if _, err := cs.CoreV1().ConfigMaps("demo").Get(context.Background(), "cm-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("demo").Get(context.Background(), "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing ConfigMap returned %v, want NotFound: the transport must hand client-go the response as it came", err)
	}
	if spans := tel.spans.Ended(); len(spans) != 0 {
		t.Errorf("requests outside any span started %d spans (%v): an informer's or a workload's requests must not become root spans", len(spans), testutil.SpanNames(spans))
	}
	if _, tps := srv.received(); tps[0] != "" {
		t.Errorf("a request outside any span sent traceparent %q", tps[0])
	}
	byCode := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, p := range tel.requestPoints(t) {
		byCode[value(p.Attributes, "http.response.status_code")] = p
	}
	ok, nf := byCode["200"], byCode["404"]
	if ok.Count != 1 || nf.Count != 1 {
		t.Fatalf("points by status code: %v; want one 200 and one 404", byCode)
	}
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	for k, want := range map[attribute.Key]string{
		"http.request.method": "GET", "server.address": host, "server.port": port,
		semconv.AttrRequestVerb: "get", semconv.AttrRequestResource: "configmaps", semconv.AttrRequestGroup: "",
		"error.type": "<absent>",
	} {
		if got := value(ok.Attributes, k); got != want {
			t.Errorf("200 point: %s = %q, want %q", k, got, want)
		}
	}
	if got := value(nf.Attributes, "error.type"); got != "404" {
		t.Errorf("404 point: error.type = %q, want 404", got)
	}
	if value(ok.Attributes, semconv.AttrRequestName) != "<absent>" || value(ok.Attributes, "url.full") != "<absent>" {
		t.Errorf("the metric carries the object's name or URL (unbounded cardinality): %v", ok.Attributes)
	}
}

func TestRequestUnderASpan(t *testing.T) {
	srv := newAPIServer(t)
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: -1})

	ctx, parent := tel.tp.Tracer("test").Start(context.Background(), "reconcile")
	_, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, "missing", metav1.GetOptions{})
	parent.End()
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Get returned %v, want NotFound", err)
	}
	span := testutil.OneSpan(t, tel.spans.Ended(), "GET /api/v1/namespaces/{namespace}/configmaps/{name}")
	if span.Parent().SpanID() != parent.SpanContext().SpanID() || span.SpanKind() != trace.SpanKindClient {
		t.Errorf("request span: parent %v kind %v, want the reconcile span %v and kind client", span.Parent().SpanID(), span.SpanKind(), parent.SpanContext().SpanID())
	}
	attrs := attribute.NewSet(span.Attributes()...)
	for k, want := range map[attribute.Key]string{
		"http.response.status_code": "404", "error.type": "404", "k8s.namespace.name": "demo",
		semconv.AttrRequestName: "missing", semconv.AttrRequestVerb: "get", "url.template": "/api/v1/namespaces/{namespace}/configmaps/{name}",
	} {
		if got := value(attrs, k); got != want {
			t.Errorf("span attribute %s = %q, want %q", k, got, want)
		}
	}
	if span.Status().Code != codes.Error {
		t.Errorf("a 404 client span has status %v, want Error (semantic conventions: 4xx is an error on client spans)", span.Status())
	}
	_, tps := srv.received()
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if tps[0] != want {
		t.Errorf("the API server received traceparent %q, want the request span's %q", tps[0], want)
	}
	for _, p := range tel.requestPoints(t) {
		if len(p.Exemplars) == 0 || p.Exemplars[0].SpanID == nil {
			t.Errorf("the request's point has no exemplar with a span: %+v", p.Exemplars)
		}
	}
}

func TestRetryAfterIsTimedAndTraced(t *testing.T) {
	srv := newAPIServer(t)
	srv.throttle.Store(2)
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})

	// A reconcile attempt's context, as otelqueue hands it to a reconciler.
	work := &clientwork.Work{}
	ctx, parent := tel.tp.Tracer("test").Start(clientwork.NewContext(context.Background(), work), "reconcile")
	_, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, "throttled", metav1.GetOptions{})
	parent.End()
	if err != nil {
		t.Fatalf("client-go should have retried the 429s (Retry-After: 0) and succeeded: %v", err)
	}
	if got := work.Totals(); !got.Used || got.Requests != 3 || got.Throttled != 2 || got.RetryAfterWait <= 0 || got.RequestTime <= 0 {
		t.Errorf("the attempt's client work: %+v; want 3 requests, 2 throttled, and time in requests and in Retry-After waits", got)
	}
	spans := tel.spans.Ended()
	reqs := testutil.SpansNamed(spans, "GET /api/v1/namespaces/{namespace}/configmaps/{name}")
	if len(reqs) != 3 {
		t.Fatalf("%d request spans, want 3 (two 429s, then 200): %v", len(reqs), testutil.SpanNames(spans))
	}
	for i, want := range []string{"429", "429", "200"} {
		if got := value(attribute.NewSet(reqs[i].Attributes()...), "http.response.status_code"); got != want {
			t.Errorf("request %d: status %s, want %s", i, got, want)
		}
	}
	if got := value(attribute.NewSet(reqs[0].Attributes()...), "http.response.header.retry-after"); got != `["0"]` {
		t.Errorf("429 span: retry-after header attribute %s", got)
	}
	waits := testutil.SpansNamed(spans, semconv.SpanRetryAfter)
	if len(waits) != 2 {
		t.Fatalf("%d %q spans, want one before each retry: %v", len(waits), semconv.SpanRetryAfter, testutil.SpanNames(spans))
	}
	for i, w := range waits {
		if w.StartTime().Before(reqs[i].EndTime()) || w.EndTime().After(reqs[i+1].StartTime()) {
			t.Errorf("retry wait %d [%v, %v] is not between the 429's end %v and the retry's start %v",
				i, w.StartTime(), w.EndTime(), reqs[i].EndTime(), reqs[i+1].StartTime())
		}
	}
}

// gateLimiter is a rate limiter whose Wait blocks until the test lets one
// request through, and lasts at least hold: a limiter that made the request
// wait that long.
type gateLimiter struct {
	flowcontrol.RateLimiter
	gate chan struct{}
	hold time.Duration
}

func (g *gateLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	select {
	case <-g.gate:
		time.Sleep(g.hold - time.Since(start))
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestRateLimiterWaitIsTimedAndTraced(t *testing.T) {
	srv := newAPIServer(t)
	tel := newTelemetry(t)
	lim := &gateLimiter{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(), gate: make(chan struct{}), hold: 2 * kubeclient.WaitSpanThreshold}
	cs := tel.clientset(t, &rest.Config{Host: srv.URL, RateLimiter: lim})

	ctx, parent := tel.tp.Tracer("test").Start(context.Background(), "reconcile")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, "cm-1", metav1.GetOptions{})
		done <- err
	}()
	testutil.WaitBlocked(t, "(*gateLimiter).Wait", "select", 1)
	if n, _ := srv.received(); n != 0 {
		t.Fatalf("the request reached the server before the limiter let it through")
	}
	lim.gate <- struct{}{}
	if err := testutil.Receive(t, done, "the Get"); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := tel.spans.Ended()
	wait := testutil.OneSpan(t, spans, semconv.SpanRateLimiter)
	req := testutil.OneSpan(t, spans, "GET /api/v1/namespaces/{namespace}/configmaps/{name}")
	if wait.Parent().SpanID() != parent.SpanContext().SpanID() || wait.EndTime().After(req.StartTime()) {
		t.Errorf("the limiter wait span (parent %v, end %v) should be a child of the reconcile span %v that ends before the request starts (%v)",
			wait.Parent().SpanID(), wait.EndTime(), parent.SpanContext().SpanID(), req.StartTime())
	}
	rm := testutil.Collect(t, tel.reader)
	h := testutil.FindMetric(t, rm, semconv.ScopeKubeclient, semconv.MetricKubernetesClientRateLimiterDuration).Data.(metricdata.Histogram[float64])
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 || h.DataPoints[0].Sum < wait.EndTime().Sub(wait.StartTime()).Seconds()*0.99 {
		t.Errorf("%s: %+v, want one wait at least as long as the span", semconv.MetricKubernetesClientRateLimiterDuration, h.DataPoints)
	}
}

func TestInstrumentRefuses(t *testing.T) {
	if _, err := kubeclient.Instrument(nil); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("Instrument(nil) = %v, want an error that says nil", err)
	}
	cfg, err := kubeclient.Instrument(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubeclient.Instrument(cfg); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("instrumenting an instrumented config: %v, want an error that says it would count twice", err)
	}
	if _, err := kubeclient.Instrument(rest.CopyConfig(cfg)); err == nil {
		t.Errorf("instrumenting a copy of an instrumented config succeeded: it would count twice")
	}
	if _, err := kubeclient.Instrument(&rest.Config{QPS: 5, Burst: -1}); err == nil || !strings.Contains(err.Error(), "Burst") {
		t.Errorf("a negative Burst: %v, want an error that names Burst", err)
	}
	var tp *sdktrace.TracerProvider
	if _, err := kubeclient.Instrument(&rest.Config{}, kubeclient.WithTracerProvider(tp)); err == nil || !strings.Contains(err.Error(), "WithTracerProvider") {
		t.Errorf("a typed nil tracer provider: %v, want an error that names the option", err)
	}
}

// TestInstrumentKeepsEachClientsBudget: every client built from an
// instrumented config has the request budget it has without
// instrumentation. Two clientsets from one config with QPS 1 and Burst 1
// each get their own token bucket, as client-go builds them: each makes a
// request at once, and a second one on the same clientset would have to
// wait (client-go's limiter refuses a wait past the request's deadline at
// once). A RateLimiter the config sets is shared, with and without
// instrumentation, and the instrumented one measures it.
func TestInstrumentKeepsEachClientsBudget(t *testing.T) {
	srv := newAPIServer(t)
	get := func(cs kubernetes.Interface) error {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, "a", metav1.GetOptions{})
		return err
	}
	newCS := func(cfg *rest.Config) kubernetes.Interface {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	orig := &rest.Config{Host: srv.URL, QPS: 1, Burst: 1}
	icfg, err := kubeclient.Instrument(orig, newTelemetry(t).options()...)
	if err != nil {
		t.Fatal(err)
	}
	if orig.RateLimiter != nil || orig.WrapTransport != nil {
		t.Errorf("Instrument changed the config it was given")
	}
	for _, tc := range []struct {
		name string
		cfg  *rest.Config
	}{{"without instrumentation", orig}, {"instrumented", icfg}} {
		a, b := newCS(tc.cfg), newCS(tc.cfg)
		if err := get(a); err != nil {
			t.Errorf("%s: the first clientset's first request: %v", tc.name, err)
		}
		if err := get(b); err != nil {
			t.Errorf("%s: the second clientset's first request: %v (its budget is not its own)", tc.name, err)
		}
		if err := get(a); err == nil {
			t.Errorf("%s: the first clientset's second request within 300ms at QPS 1, Burst 1 was not limited", tc.name)
		}
		la, lb := a.CoreV1().RESTClient().GetRateLimiter(), b.CoreV1().RESTClient().GetRateLimiter()
		if la == nil || lb == nil || la == lb || la.QPS() != 1 {
			t.Errorf("%s: limiters %v and %v, want one of QPS 1 for each clientset", tc.name, la, lb)
		}
	}

	// A limiter of the config's own: shared by its clients either way.
	own := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	shared, err := kubeclient.Instrument(&rest.Config{Host: srv.URL, RateLimiter: own})
	if err != nil {
		t.Fatal(err)
	}
	a, b := newCS(shared), newCS(shared)
	if err := get(a); err != nil {
		t.Errorf("the shared limiter's first request: %v", err)
	}
	if err := get(b); err == nil {
		t.Errorf("a second clientset's request on the config's own limiter (QPS 1, Burst 1, one token used) was not limited")
	}
	if shared.RateLimiter == own || shared.RateLimiter.QPS() != 1 {
		t.Errorf("the config's own limiter: %v, want it wrapped (measured) with its QPS 1", shared.RateLimiter)
	}

	// QPS -1: no client-side limit, as client-go.
	none, err := kubeclient.Instrument(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	if l := newCS(none).CoreV1().RESTClient().GetRateLimiter(); l != nil {
		t.Errorf("QPS -1: a limiter %v, want none", l)
	}
}

// TestInstrumentedAgainBehindAWrapper: a config instrumented, then wrapped
// by a RoundTripper of the user's (which hides the first instrumentation
// from Instrument), then instrumented again, counts each request once, in
// the metric and in the server's figures, both unsampled and under a span.
func TestInstrumentedAgainBehindAWrapper(t *testing.T) {
	srv := newAPIServer(t)
	tel := newTelemetry(t)
	first, err := kubeclient.Instrument(&rest.Config{Host: srv.URL, QPS: -1}, tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	first.Wrap(func(next http.RoundTripper) http.RoundTripper { return userRoundTripper{next} })
	cs := tel.clientset(t, first) // Instrument again: accepted, it cannot see the first
	before := kubeclient.ServerStats(tel.mp).Requests
	if _, err := cs.CoreV1().ConfigMaps("demo").Get(context.Background(), "cm-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, span := tel.tp.Tracer("t").Start(context.Background(), "reconcile")
	if _, err := cs.CoreV1().ConfigMaps("demo").Get(ctx, "cm-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	span.End()
	var n uint64
	for _, p := range tel.requestPoints(t) {
		n += p.Count
	}
	if n != 2 {
		t.Errorf("%s counted %d requests, want the 2 made", semconv.MetricHTTPClientRequestDuration, n)
	}
	if got := kubeclient.ServerStats(tel.mp).Requests - before; got != 2 {
		t.Errorf("the server's figures counted %d round trips, want 2", got)
	}
	if spans := testutil.SpansNamed(tel.spans.Ended(), "GET /api/v1/namespaces/{namespace}/configmaps/{name}"); len(spans) != 1 {
		t.Errorf("%d client spans for the traced request, want 1", len(spans))
	}
}

type userRoundTripper struct{ next http.RoundTripper }

func (u userRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return u.next.RoundTrip(req)
}

// TestInstrumentLeavesTheDefaultTransport: Instrument looks for an earlier
// instrumentation through the config's wrappers without handing them the
// process's http.DefaultTransport (a wrapper may configure the transport
// it is given) and without a panic of theirs; a wrapper that returns nil
// below the instrumentation leaves it http.DefaultTransport, as an
// http.Client without a Transport does.
func TestInstrumentLeavesTheDefaultTransport(t *testing.T) {
	srv := newAPIServer(t)
	tel := newTelemetry(t)
	dt := http.DefaultTransport.(*http.Transport)
	before := dt.MaxIdleConnsPerHost
	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		next.(*http.Transport).MaxIdleConnsPerHost = before + 777 // a wrapper that tunes its transport
		return next
	})
	if _, err := kubeclient.Instrument(cfg, tel.options()...); err != nil {
		t.Fatal(err)
	}
	if dt.MaxIdleConnsPerHost != before {
		t.Errorf("Instrument changed http.DefaultTransport: MaxIdleConnsPerHost %d, was %d", dt.MaxIdleConnsPerHost, before)
	}

	panics := &rest.Config{Host: srv.URL, QPS: -1}
	panics.Wrap(func(next http.RoundTripper) http.RoundTripper {
		if _, ok := next.(userRoundTripper); !ok {
			panic("a wrapper that expects its own transport below")
		}
		return next
	})
	if _, err := kubeclient.Instrument(panics, tel.options()...); err != nil {
		t.Errorf("Instrument on a config whose wrapper panics: %v", err)
	}

	nilBelow := &rest.Config{Host: srv.URL, QPS: -1}
	nilBelow.Wrap(func(http.RoundTripper) http.RoundTripper { return nil })
	cs := tel.clientset(t, nilBelow)
	if _, err := cs.CoreV1().ConfigMaps("demo").Get(context.Background(), "cm-1", metav1.GetOptions{}); err != nil {
		t.Errorf("a request through a wrapper that returned nil: %v", err)
	}
}
