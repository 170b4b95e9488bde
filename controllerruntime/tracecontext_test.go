package controllerruntime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/traceparent"
)

// ownedSecret is a Secret controlled by ConfigMap owner, written in a traced
// call: it returns the Secret, annotated, and the writer's span context.
func ownedSecret(t *testing.T, tel *telemetry, name, owner, rv string) (*corev1.Secret, trace.SpanContext) {
	t.Helper()
	ctx, span := tel.tp.Tracer("test/writer").Start(context.Background(), "write "+name)
	defer span.End()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, ResourceVersion: rv,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: types.UID("uid-" + owner), Controller: ptr.To(true),
		}},
	}}
	traceparent.Inject(ctx, s)
	return s, span.SpanContext()
}

func ownerHandler(t *testing.T) handler.EventHandler {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	return handler.EnqueueRequestForOwner(clientgoscheme.Scheme, mapper, &corev1.ConfigMap{}, handler.OnlyControllerOwner())
}

// TestWithTraceContextOwner: controller-runtime's EnqueueRequestForOwner,
// wrapped, enqueues the owner with the link to the writer of the owned
// object and with controller-runtime's priorities, the same as it gives on
// its own priority queue (the oracle).
func TestWithTraceContextOwner(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	initial, scInitial := ownedSecret(t, tel, "s1", "listed", "5")
	oldS, _ := ownedSecret(t, tel, "s2", "changed", "6")
	newS, scChanged := ownedSecret(t, tel, "s2", "changed", "7")
	send := func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		ctx := context.Background()
		h.Create(ctx, event.CreateEvent{Object: initial, IsInInitialList: true}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: oldS, ObjectNew: newS}, q)
	}

	oracle := priorityqueue.New[reconcile.Request]("oracle-owner")
	defer oracle.ShutDown()
	send(ownerHandler(t), oracle)
	want := map[string]int{}
	for oracle.Len() > 0 {
		r, p, _ := oracle.GetWithPriority()
		want[r.Name] = p
		oracle.Done(r)
	}
	if want["listed"] != handler.LowPriority || want["changed"] != 0 {
		t.Fatalf("controller-runtime's handler and queue gave %v: the oracle changed", want)
	}

	q := newQueue(t, tel, "owners")
	send(controllerruntime.WithTraceContext(ownerHandler(t), traceparent.WithMeterProvider(tel.mp)), q)
	links := map[string]trace.SpanContext{"listed": scInitial, "changed": scChanged}
	got := map[string]int{}
	for q.Len() > 0 {
		it, err := q.GetContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got[it.Key.Name] = it.Priority
		if w := links[it.Key.Name]; it.Origin.SpanID() != w.SpanID() || it.Origin.TraceID() != w.TraceID() {
			t.Errorf("%v: origin %v, want the owned object's writer %v", it.Key, it.Origin, w)
		}
		q.Done(it.Key)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("priorities %v, controller-runtime's %v", got, want)
	}
}

// TestWithTraceContextMapFunc: the requests a map function makes from one
// object all link to that object's writer; a plain client-go queue is
// passed through and still gets them.
func TestWithTraceContextMapFunc(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	fanOut := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{req(o.GetName() + "-a"), req(o.GetName() + "-b")}
	})
	h := controllerruntime.WithTraceContext(fanOut, traceparent.WithMeterProvider(tel.mp))
	obj, writer := ownedSecret(t, tel, "src", "unused", "1")

	q := newQueue(t, tel, "mapped")
	h.Generic(context.Background(), event.GenericEvent{Object: obj}, q)
	takeLinked(t, q, 2, writer)

	plain := workqueue.NewTypedRateLimitingQueue(limiter())
	defer plain.ShutDown()
	h.Generic(context.Background(), event.GenericEvent{Object: obj}, plain)
	if n := plain.Len(); n != 2 {
		t.Errorf("plain queue: Len = %d, want 2", n)
	}
}

// TestWithTraceContextAddAfter: a handler's AddAfter and AddRateLimited keep
// the link too, and count as retries as the queue's own do.
func TestWithTraceContextAddAfter(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	h := controllerruntime.WithTraceContext(handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.AddAfter(req(e.Object.GetName()), 0)
			q.AddRateLimited(req("backoff")) // an hour away (limiter)
		},
	}, traceparent.WithMeterProvider(tel.mp))
	obj, writer := ownedSecret(t, tel, "retried", "unused", "1")
	q := newQueue(t, tel, "after")
	h.Generic(context.Background(), event.GenericEvent{Object: obj}, q)
	it, err := q.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if it.Key != req("retried") || it.Origin.SpanID() != writer.SpanID() {
		t.Errorf("got %v with origin %v, want default/retried linked to %v", it.Key, it.Origin, writer)
	}
	q.Done(it.Key)
	if st := q.Stats(); st.Retries != 2 || st.Delayed != 1 {
		t.Errorf("Stats %+v: want 2 retries, 1 delayed", st)
	}
}

// TestWithTraceContextReadsAnnotationOnce: the annotation is read at the
// handler's first add and only then: an event that enqueues nothing (a
// Secret with no owner) does not count its invalid annotation, and one that
// enqueues two requests counts it once.
func TestWithTraceContextReadsAnnotationOnce(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	readerOpts := traceparent.WithMeterProvider(tel.mp)
	bad := func(name string, owned bool) *corev1.Secret {
		s, _ := ownedSecret(t, tel, name, "owner", "1")
		if !owned {
			s.OwnerReferences = nil
		}
		s.Annotations[traceparent.Annotation] = "not a traceparent"
		return s
	}
	q := newQueue(t, tel, "reads")
	ctx := context.Background()
	controllerruntime.WithTraceContext(ownerHandler(t), readerOpts).Generic(ctx, event.GenericEvent{Object: bad("orphan", false)}, q)
	if q.Len() != 0 {
		t.Fatalf("an orphan was enqueued")
	}
	fanOut := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{req(o.GetName() + "-a"), req(o.GetName() + "-b")}
	})
	controllerruntime.WithTraceContext(fanOut, readerOpts).Generic(ctx, event.GenericEvent{Object: bad("src", true)}, q)
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want the 2 mapped requests", q.Len())
	}
	m := testutil.FindMetric(t, tel.collect(t), semconv.ScopeTraceparent, semconv.MetricTraceparentInvalid)
	var total int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		total += dp.Value
	}
	if total != 1 {
		t.Errorf("%s = %d, want 1: read once, and not for the event that enqueued nothing", semconv.MetricTraceparentInvalid, total)
	}
}

// TestWithTraceContextConcurrentAdds: a handler that adds from several
// goroutines during one event (run with -race) gets the link on each.
func TestWithTraceContextConcurrentAdds(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	h := controllerruntime.WithTraceContext(handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() { q.Add(req(fmt.Sprint(e.Object.GetName(), "-", i))) })
			}
			wg.Wait()
		},
	}, traceparent.WithMeterProvider(tel.mp))
	obj, writer := ownedSecret(t, tel, "fan", "unused", "1")
	q := newQueue(t, tel, "concurrent")
	h.Generic(context.Background(), event.GenericEvent{Object: obj}, q)
	takeLinked(t, q, 4, writer)
}

// takeLinked takes n keys from q and checks that each links to writer.
func takeLinked(t *testing.T, q *controllerruntime.Queue[reconcile.Request], n int, writer trace.SpanContext) {
	t.Helper()
	for range n {
		it, err := q.GetContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if it.Origin.SpanID() != writer.SpanID() {
			t.Errorf("%v: origin %v, want %v", it.Key, it.Origin, writer)
		}
		q.Done(it.Key)
	}
}
