// Command clientgo is the client-go controller of the consumer test: built in
// a fresh module against otelqueue fetched with go get, it reconciles the
// ConfigMaps of a fake cluster through an instrumented scheduler and a
// Runner, whose reconciles read each ConfigMap again through a client
// instrumented by kubeclient (from a loopback HTTP server standing in for
// the API server), and checks the metrics, traces and client attribution it
// got. It exits 0 and prints "ok" when everything was there.
package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"example.com/consumer/check"
	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

const objects = 5

func main() { check.Main("clientgo", time.Minute, run) }

func run(ctx context.Context, sdk *check.SDK) error {

	mp, tp := sdk.MeterProvider, sdk.TracerProvider

	queue := scheduler.New(scheduler.Config[string]{Name: "configmaps"})
	inst, err := otelqueue.Instrument(queue, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp), otelqueue.WithClientTime())
	if err != nil {
		return err
	}
	defer inst.Stop()

	cs := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(cs, 0)
	tracing := traceparent.NewReader()
	enqueue := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			queue.AddContext(tracing.ContextWith(ctx, cm), cm.Namespace+"/"+cm.Name)
		}
	}
	if _, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}

	// The reconciler's client, instrumented: its requests count for the queue.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","namespace":"default"}}`))
	}))
	defer api.Close()
	cfg, err := kubeclient.Instrument(&rest.Config{Host: api.URL}, kubeclient.WithMeterProvider(mp), kubeclient.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	keys := check.NewKeys(objects)
	runner, err := otelqueue.NewRunner(queue, 2, func(ctx context.Context, key string) (otelqueue.Result, error) {
		ctx, span := tp.Tracer("consumer").Start(ctx, "sync "+key)
		defer span.End()
		if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, "cm", metav1.GetOptions{}); err != nil {
			return otelqueue.Result{}, err
		}
		keys.Reconciled(key)
		return otelqueue.Result{}, nil
	})
	if err != nil {
		return err
	}

	// The writer's trace goes on the object, as traceparent.Inject
	// documents: the reconcile trace links to it.
	wctx, writer := tp.Tracer("consumer").Start(ctx, "write configmaps")
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%d", i)}}
		traceparent.Inject(wctx, cm)
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	writer.End()

	factory.Start(ctx.Done())
	defer factory.Shutdown()
	names, err := sdk.Run(ctx, keys, runner.Run)
	if err != nil {
		return err
	}
	linked := 0
	for _, s := range sdk.Spans.Ended() {
		for _, l := range s.Links() {
			if l.SpanContext.TraceID() == writer.SpanContext().TraceID() {
				linked++
			}
		}
	}
	if linked < objects {
		return fmt.Errorf("%d attempts link to the writer's trace, want %d", linked, objects)
	}
	if st := inst.ClientStats(); st.Requests < objects || st.Attempts < objects {
		return fmt.Errorf("kubeclient: %d requests of %d attempts counted for the queue, want %d of each at least", st.Requests, st.Attempts, objects)
	}
	fmt.Printf("ok: otelqueue %s reconciled %d ConfigMaps; spans %v\n", otelqueue.Version, objects, names)
	return nil
}
