package controllerruntime_test

import (
	"context"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// TestAPIServerClientAttribution: a reconciler wrapped by the Controller
// receives controller-runtime's ctx, and a client instrumented by package
// kubeclient counts the requests made with it for the attempt's queue
// (ClientStats, workqueue.client.*), given otelqueue.WithClientTime through
// New, on a real API server; the request's span is a child of the
// attempt's "reconcile" span.
func TestAPIServerClientAttribution(t *testing.T) {
	c := apiServerCluster(t)
	tel := newTelemetry(t)
	cfg, err := kubeclient.Instrument(c.config, kubeclient.WithMeterProvider(tel.mp), kubeclient.WithTracerProvider(tel.tp))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.cs.CoreV1().ConfigMaps(c.namespace).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "attributed"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	run := startController(t, tel, c.controllerName("client-attribution"), reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		_, err := cs.CoreV1().ConfigMaps(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		done <- err
		return reconcile.Result{}, err
	}), startOnCluster(c), func(sc *startConfig) {
		sc.queueOptions = []otelqueue.Option{otelqueue.WithClientTime()}
	})
	run.send(t, cm)
	if err := testutil.Receive(t, done, "the reconcile"); err != nil {
		t.Fatalf("the reconciler's Get: %v", err)
	}
	q := run.otq.Queue()
	testutil.WaitFor(t, "the attempt's end", func() bool { return q.Instrumentation().ClientStats().Attempts == 1 })
	st := q.Instrumentation().ClientStats()
	if st.Requests != 1 || st.RequestTime <= 0 || st.Throttled != 0 {
		t.Errorf("ClientStats = %+v, want the one Get of the attempt", st)
	}
	spans := tel.sr.Ended()
	req := testutil.OneSpan(t, spans, "GET /api/v1/namespaces/{namespace}/configmaps/{name}")
	rec := testutil.OneSpan(t, spans, semconv.SpanReconcile)
	if req.Parent().SpanID() != rec.SpanContext().SpanID() {
		t.Errorf("the request span's parent is %v, want the attempt's reconcile span %v", req.Parent().SpanID(), rec.SpanContext().SpanID())
	}
}
