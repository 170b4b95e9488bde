package kubeclient_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/kubeclient"
)

// TestServerStats: every instrumented client's round trips count in
// ServerStats, whoever makes them: a 5xx and a refused connection fail for
// the API server, a 404 and the caller's cancellation do not; the time of a
// single-object round trip counts while it is in flight, so that a stalled
// API server reads as slow before its requests end; a list's time does not
// count (it grows with the collection). The metric's error.type tells the
// caller's cancellation ("canceled") from the server's failures.
func TestServerStats(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		w.Header().Set("Content-Type", "application/json")
		switch name {
		case "unavailable":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}`))
		case "missing":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":404,"reason":"NotFound"}`))
		case "stalled":
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"stalled"}}`))
		case "hang":
			entered <- struct{}{}
			<-r.Context().Done()
			return
		case "configmaps": // a list
			_, _ = w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","items":[]}`))
		default:
			_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"` + name + `"}}`))
		}
	}))
	defer srv.Close()
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL, QPS: -1})
	cms := cs.CoreV1().ConfigMaps("demo")
	ctx := context.Background()
	get := func(name string) error {
		_, err := cms.Get(ctx, name, metav1.GetOptions{})
		return err
	}

	before := kubeclient.ServerStats(tel.mp)
	for _, name := range []string{"a", "b", "missing", "unavailable"} {
		_ = get(name)
	}
	mid := kubeclient.ServerStats(tel.mp)
	if d := mid.Requests - before.Requests; d < 4 {
		t.Fatalf("%d round trips counted, want at least 4", d)
	}
	// client-go retries a 503 without Retry-After? It does not: one round trip each.
	if got := mid.Unavailable - before.Unavailable; got != 1 {
		t.Errorf("%d round trips unavailable of a 200, a 200, a 404 and a 503: want 1", got)
	}
	if !mid.LastUnavailable {
		t.Errorf("the last round trip, a 503, not recorded as the last unavailable")
	}
	if got := mid.Reads.Ended - before.Reads.Ended; got != 4 {
		t.Errorf("%d single-object reads, want 4", got)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := kubeclient.ServerStats(tel.mp); got.Reads.Ended != mid.Reads.Ended || got.Reads.Time-mid.Reads.Time > time.Millisecond {
		t.Errorf("a list counted as a single-object round trip: %+v after %+v", got, mid)
	}

	// A round trip in flight: its time grows while it lasts.
	done := make(chan error, 1)
	go func() { done <- get("stalled") }()
	<-entered
	a := kubeclient.ServerStats(tel.mp)
	time.Sleep(50 * time.Millisecond) // the stall the figures must see
	b := kubeclient.ServerStats(tel.mp)
	if a.Reads.InFlight != 1 || b.Reads.InFlight != 1 {
		t.Errorf("in flight: %d then %d, want 1", a.Reads.InFlight, b.Reads.InFlight)
	}
	if u := bottleneck.APIServerBetween(a, b); !u.Known || !u.LatencyKnown || u.Latency < 50*time.Millisecond {
		t.Errorf("a round trip stalled for 50ms: %+v, want a latency of at least 50ms", u)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c := kubeclient.ServerStats(tel.mp)
	if c.Reads.InFlight != 0 {
		t.Errorf("%d in flight after the round trip ended", c.Reads.InFlight)
	}
	// Its end, in a window that holds little of its time: read whole.
	if u := bottleneck.APIServerBetween(b, c); !u.LatencyKnown || u.Latency < 50*time.Millisecond {
		t.Errorf("a round trip stalled for 50ms, ended after the reading before: %+v, want a latency of at least 50ms", u)
	}

	// The caller's cancellation is not the server's failure; a refused
	// connection is.
	// (client-go sends nothing for a context canceled before the request:
	// cancel it in flight.)
	cctx, cancel := context.WithCancel(ctx)
	c0 := kubeclient.ServerStats(tel.mp)
	go func() {
		_, err := cms.Get(cctx, "hang", metav1.GetOptions{})
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a get canceled in flight: %v", err)
	}
	if c := kubeclient.ServerStats(tel.mp); c.Unavailable != c0.Unavailable || c.LastUnavailable {
		t.Errorf("the caller's cancellation counted unavailable: %+v after %+v", c, c0)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	refused := tel.clientset(t, &rest.Config{Host: closed, QPS: -1}).CoreV1().ConfigMaps("demo")
	c1 := kubeclient.ServerStats(tel.mp)
	if _, err := refused.Get(ctx, "a", metav1.GetOptions{}); err == nil {
		t.Fatal("a get from a closed port succeeded")
	}
	if c := kubeclient.ServerStats(tel.mp); c.Unavailable <= c1.Unavailable || !c.LastUnavailable {
		t.Errorf("a refused connection not counted unavailable: %+v after %+v", c, c1)
	}

	types := map[string]bool{}
	for _, p := range errorPoints(t, tel.reader) {
		types[p] = true
	}
	for _, want := range []string{"404", "503", "canceled"} {
		if !types[want] {
			t.Errorf("error.type %q not recorded; recorded %v", want, types)
		}
	}
}

// errorPoints returns the error.type of every http.client.request.duration
// point that has one.
func errorPoints(t *testing.T, r *sdkmetric.ManualReader) []string {
	t.Helper()
	rm := testutil.Collect(t, r)
	m := testutil.FindMetric(t, rm, semconv.ScopeKubeclient, semconv.MetricHTTPClientRequestDuration)
	var out []string
	for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		if v := value(p.Attributes, "error.type"); v != "<absent>" {
			out = append(out, v)
		}
	}
	return out
}
