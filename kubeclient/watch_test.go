package kubeclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/kubeclient"
)

// watchServer answers ConfigMap watches: in namespace "denied" with 403,
// elsewhere with a stream of one ADDED event that stays open until the
// client goes away or end is closed.
func watchServer(t *testing.T, end <-chan struct{}) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			http.Error(w, "watches only", http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/api/v1/namespaces/denied/configmaps" {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden})
			return
		}
		cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "demo", ResourceVersion: "2"}}
		raw, _ := json.Marshal(cm)
		_ = json.NewEncoder(w).Encode(metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: raw}})
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-end:
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// watchesPoint returns the kubernetes.client.watches point of configmaps,
// and false when there is none.
func watchesPoint(t *testing.T, tel *telemetry) (int64, bool) {
	t.Helper()
	rm := testutil.Collect(t, tel.reader)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != semconv.MetricKubernetesClientWatches {
				continue
			}
			if m.Unit != "{watch}" {
				t.Errorf("%s has unit %q, want {watch}", m.Name, m.Unit)
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if value(p.Attributes, semconv.AttrRequestResource) == "configmaps" {
					return p.Value, true
				}
			}
		}
	}
	return 0, false
}

// TestWatchStreams: a watch stream counts open from its establishment to
// its end, whether the server ends it or the client stops it, in the
// process's WatchStats and the kubernetes.client.watches up-down counter by
// resource; the time of its last data is kept; a watch the server refuses
// is no stream.
func TestWatchStreams(t *testing.T) {
	end := make(chan struct{})
	srv := watchServer(t, end)
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL})
	ctx := context.Background()
	before := kubeclient.ReadWatchStats(tel.mp)

	start := time.Now()
	w, err := cs.CoreV1().ConfigMaps("demo").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("first event: %+v", ev)
	}
	s := kubeclient.ReadWatchStats(tel.mp)
	if s.Open != before.Open+1 || s.Opened != before.Opened+1 || s.LastData.Before(start) {
		t.Errorf("a watch open with an event read: %+v (before %+v), want one more open and opened, data since %v", s, before, start)
	}
	if v, ok := watchesPoint(t, tel); !ok || v != 1 {
		t.Errorf("%s of configmaps: %d (reported %v), want 1", semconv.MetricKubernetesClientWatches, v, ok)
	}

	// The server ends the stream (its watch timeout, a restart).
	close(end)
	for range w.ResultChan() {
	}
	testutil.WaitFor(t, "the stream counted ended", func() bool { return kubeclient.ReadWatchStats(tel.mp).Ended == before.Ended+1 })
	if s := kubeclient.ReadWatchStats(tel.mp); s.Open != before.Open || s.LastEnded.Before(start) {
		t.Errorf("after the server ended the stream: %+v, want %d open and an end since %v", s, before.Open, start)
	}
	if v, ok := watchesPoint(t, tel); !ok || v != 0 {
		t.Errorf("%s of configmaps after the end: %d (reported %v), want 0", semconv.MetricKubernetesClientWatches, v, ok)
	}

	// The client stops a stream; stopping twice counts once.
	srv2 := watchServer(t, make(chan struct{}))
	cs2 := tel.clientset(t, &rest.Config{Host: srv2.URL})
	w, err = cs2.CoreV1().ConfigMaps("demo").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan()
	w.Stop()
	w.Stop()
	testutil.WaitFor(t, "the stopped stream counted ended", func() bool { return kubeclient.ReadWatchStats(tel.mp).Ended == before.Ended+2 })
	if s := kubeclient.ReadWatchStats(tel.mp); s.Open != before.Open || s.Opened != before.Opened+2 {
		t.Errorf("after the client stopped it: %+v, want %d open, %d opened", s, before.Open, before.Opened+2)
	}

	// Refused: no stream.
	if _, err := cs.CoreV1().ConfigMaps("denied").Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a denied watch: %v, want 403", err)
	}
	if s := kubeclient.ReadWatchStats(tel.mp); s.Open != before.Open || s.Opened != before.Opened+2 {
		t.Errorf("after a refused watch: %+v, want %d open, %d opened", s, before.Open, before.Opened+2)
	}
	if v, ok := watchesPoint(t, tel); !ok || v != 0 {
		t.Errorf("%s of configmaps at the end: %d (reported %v), want 0", semconv.MetricKubernetesClientWatches, v, ok)
	}
}

// TestWatchStale: a watch that asked for bookmarks and carries nothing for
// StaleAfter (here 100 ms) counts stale, not open, in WatchStats and
// kubernetes.client.watches, though its stream is still established (a
// stream hung in a proxy, a server that stopped sending); data again makes
// it open; its end counts once. A watch that asked for no bookmarks may be
// silent.
func TestWatchStale(t *testing.T) {
	defer kubeclient.SetStaleAfter(100 * time.Millisecond)()
	send := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		event := func(rv int) {
			cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "demo", ResourceVersion: fmt.Sprint(rv)}}
			raw, _ := json.Marshal(cm)
			_ = json.NewEncoder(w).Encode(metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: raw}})
			w.(http.Flusher).Flush()
		}
		event(1)
		// Only the watch with bookmarks takes sends: the silent one's
		// handler taking one left the test waiting on the other for good.
		more := send
		if r.URL.Query().Get("allowWatchBookmarks") != "true" {
			more = nil
		}
		for rv := 2; ; rv++ {
			select {
			case <-r.Context().Done():
				return
			case <-more:
				event(rv)
			}
		}
	}))
	defer srv.Close()
	tel := newTelemetry(t)
	cs := tel.clientset(t, &rest.Config{Host: srv.URL})
	before := kubeclient.ReadWatchStats(tel.mp)
	w, err := cs.CoreV1().ConfigMaps("demo").Watch(context.Background(), metav1.ListOptions{AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan()
	silent, err := cs.CoreV1().ConfigMaps("demo").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-silent.ResultChan()
	testutil.WaitFor(t, "the silent watch with bookmarks to go stale", func() bool {
		s := kubeclient.ReadWatchStats(tel.mp)
		return s.Stale == before.Stale+1 && s.Open == before.Open+1
	})
	if v, _ := watchesPoint(t, tel); v != 1 {
		t.Errorf("%s with one of two watches stale: %d, want 1 (the one that asked for no bookmarks)", semconv.MetricKubernetesClientWatches, v)
	}
	send <- struct{}{}
	<-w.ResultChan()
	if s := kubeclient.ReadWatchStats(tel.mp); s.Stale != before.Stale || s.Open != before.Open+2 {
		t.Errorf("after an event: %+v, want both open again (before %+v)", s, before)
	}
	if v, _ := watchesPoint(t, tel); v != 2 {
		t.Errorf("%s after an event: %d, want 2", semconv.MetricKubernetesClientWatches, v)
	}
	testutil.WaitFor(t, "stale again", func() bool { return kubeclient.ReadWatchStats(tel.mp).Stale == before.Stale+1 })
	w.Stop()
	silent.Stop()
	testutil.WaitFor(t, "both ended", func() bool { return kubeclient.ReadWatchStats(tel.mp).Ended == before.Ended+2 })
	if s := kubeclient.ReadWatchStats(tel.mp); s.Stale != before.Stale || s.Open != before.Open {
		t.Errorf("after both ended: %+v, want as before %+v", s, before)
	}
	if v, _ := watchesPoint(t, tel); v != 0 {
		t.Errorf("%s after both ended: %d, want 0 (a stale stream's end is not counted twice)", semconv.MetricKubernetesClientWatches, v)
	}
}
