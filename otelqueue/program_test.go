package otelqueue_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// TestProgramsDoNotShareFigures: two programs in one process, each with
// its MeterProvider, its instrumented clients and its queue, read each
// their own API round trips (kubeclient.ServerStats, and what the queue's
// adaptive pool, Sizer and Inspector read), not the process's.
func TestProgramsDoNotShareFigures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"}}`))
	}))
	defer srv.Close()
	type program struct {
		mp   *sdkmetric.MeterProvider
		inst *otelqueue.Instrumentation
		cs   *kubernetes.Clientset
	}
	newProgram := func(name string) *program {
		p := &program{mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))}
		t.Cleanup(func() { _ = p.mp.Shutdown(context.Background()) })
		cfg, err := kubeclient.Instrument(&rest.Config{Host: srv.URL, QPS: -1}, kubeclient.WithMeterProvider(p.mp))
		if err != nil {
			t.Fatal(err)
		}
		if p.cs, err = kubernetes.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		q := scheduler.New(scheduler.Config[string]{Name: name})
		t.Cleanup(q.ShutDown)
		if p.inst, err = otelqueue.Instrument(q, otelqueue.WithMeterProvider(p.mp)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.inst.Stop() })
		return p
	}
	a, b := newProgram("program-a"), newProgram("program-b")
	for range 3 {
		if _, err := a.cs.CoreV1().ConfigMaps("demo").Get(context.Background(), "cm", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.cs.CoreV1().ConfigMaps("demo").Get(context.Background(), "cm", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    *program
		want uint64
	}{{"a", a, 3}, {"b", b, 1}} {
		if got := kubeclient.ServerStats(c.p.mp); got.Requests != c.want || got.Reads.Ended != c.want {
			t.Errorf("program %s: kubeclient.ServerStats %d requests, %d reads, want %d: its own clients' only", c.name, got.Requests, got.Reads.Ended, c.want)
		}
		if got := otelqueue.APIServerOf(c.p.inst); got.Requests != c.want {
			t.Errorf("program %s: its queue reads %d API round trips, want %d: its own clients' only", c.name, got.Requests, c.want)
		}
	}
}
