package controllerruntime_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/traceparent"
)

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
}

// limiter delays every AddRateLimited by a fixed, long time.
func limiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Hour, time.Hour)
}

// newQueue builds a queue as controller-runtime does, through NewQueue.
func newQueue(t *testing.T, tel *telemetry, name string) *controllerruntime.Queue[reconcile.Request] {
	t.Helper()
	wq := controllerruntime.NewQueue(otelqueue.WithTracerProvider(tel.tp), otelqueue.WithMeterProvider(tel.mp))(name, limiter())
	q, ok := wq.(*controllerruntime.Queue[reconcile.Request])
	if !ok {
		t.Fatalf("NewQueue returned a %T", wq)
	}
	t.Cleanup(q.ShutDown)
	return q
}

// TestQueueIsAPriorityQueue: controller-runtime type-asserts the queue from
// NewQueue to priorityqueue.PriorityQueue and only wraps it otherwise;
// handlers then receive it as it is.
func TestQueueIsAPriorityQueue(t *testing.T) {
	testutil.NoOTelErrors(t)
	q := newQueue(t, newTelemetry(t), "pq")
	if _, ok := any(q).(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
		t.Fatal("Queue does not implement priorityqueue.PriorityQueue")
	}
	if q.Name() != "pq" || q.Instrumentation() == nil {
		t.Errorf("queue name %q, instrumentation %v", q.Name(), q.Instrumentation())
	}
}

// TestAddWithOpts: RateLimited, After and plain adds keep their meaning,
// and priorities order the ready keys as controller-runtime's queue does.
func TestAddWithOpts(t *testing.T) {
	testutil.NoOTelErrors(t)
	q := newQueue(t, newTelemetry(t), "opts")
	high, low := 10, -100
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, req("initial"))
	q.AddWithOpts(priorityqueue.AddOpts{}, req("a"))
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &high}, req("b"))
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour}, req("later"))
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req("backoff"))
	st := q.Stats()
	if st.Depth != 3 || st.Delayed != 2 {
		t.Errorf("depth %d delayed %d, want 3 ready, 2 delayed", st.Depth, st.Delayed)
	}
	if n := q.NumRequeues(req("backoff")); n != 1 {
		t.Errorf("NumRequeues(backoff) = %d, want 1: RateLimited must go through the rate limiter", n)
	}
	for _, want := range []struct {
		key  string
		prio int
	}{{"b", high}, {"a", 0}, {"initial", low}} {
		got, prio, shutdown := q.GetWithPriority()
		if shutdown || got != req(want.key) || prio != want.prio {
			t.Errorf("GetWithPriority = %v, %d, %v; want %s, %d, false", got, prio, shutdown, want.key, want.prio)
		}
		q.Done(got)
	}
	// With RateLimited and After both set the shorter delay wins, as in
	// controller-runtime: here After (1 ns) beats the limiter's hour.
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true, After: time.Nanosecond}, req("limited"))
	k, _, _ := q.GetWithPriority()
	if k != req("limited") {
		t.Errorf("got %v, want limited, due after 1 ns", k)
	}
	q.Done(k)
}

// TestAddWithOptsContext keeps the caller's span context with the key.
func TestAddWithOptsContext(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	q := newQueue(t, tel, "optsctx")
	ctx, span := tel.tp.Tracer("test").Start(context.Background(), "enqueuer")
	span.End()
	q.AddWithOptsContext(ctx, priorityqueue.AddOpts{}, req("a"))
	it, err := q.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if it.Origin.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("origin %v, want the enqueuer %v", it.Origin, span.SpanContext())
	}
	q.Done(it.Key)
}

// TestNewQueueInvalidOption: the error goes to otel.Handle and the queue
// works, uninstrumented.
func TestNewQueueInvalidOption(t *testing.T) {
	testutil.NoOTelErrors(t)
	wq := controllerruntime.NewQueue(otelqueue.WithExplicitBuckets(2, 1))("bad", limiter())
	defer wq.ShutDown()
	if errs := testutil.TakeOTelErrors(); len(errs) != 1 {
		t.Errorf("otel.Handle got %v, want one error", errs)
	}
	q := wq.(*controllerruntime.Queue[reconcile.Request])
	if q.Instrumentation() != nil {
		t.Error("instrumentation installed despite the invalid option")
	}
	q.Add(req("a"))
	if got, _ := q.Get(); got != req("a") {
		t.Errorf("Get = %v", got)
	}
}

// TestControllerReusedReports: one Controller for two controllers is
// reported; the wrapped reconciler follows the last queue.
func TestControllerReusedReports(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	c := controllerruntime.New(otelqueue.WithTracerProvider(tel.tp), otelqueue.WithMeterProvider(tel.mp))
	if c.Queue() != nil {
		t.Error("Queue before NewQueue is not nil")
	}
	c.NewQueue("one", limiter()).ShutDown()
	q2 := c.NewQueue("two", limiter())
	defer q2.ShutDown()
	if errs := testutil.TakeOTelErrors(); len(errs) != 1 {
		t.Errorf("otel.Handle got %v, want one error", errs)
	}
	if c.Queue().Name() != "two" {
		t.Errorf("Queue() is %q, want two", c.Queue().Name())
	}
}

// TestReconcilerOutsideTheQueue: called for a request the queue is not
// processing, or before the queue exists, the wrapped reconciler runs with
// ctx unchanged.
func TestReconcilerOutsideTheQueue(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	c := controllerruntime.New(otelqueue.WithTracerProvider(tel.tp), otelqueue.WithMeterProvider(tel.mp))
	type key struct{}
	ctx, span := tel.tp.Tracer("test").Start(context.WithValue(context.Background(), key{}, "v"), "caller")
	defer span.End()
	var calls int
	r := c.Reconciler(reconcile.Func(func(got context.Context, _ reconcile.Request) (reconcile.Result, error) {
		calls++
		if got.Value(key{}) != "v" || trace.SpanFromContext(got) != span {
			t.Error("ctx changed")
		}
		return reconcile.Result{}, nil
	}))
	_, _ = r.Reconcile(ctx, req("a")) // no queue yet
	c.NewQueue("outside", limiter()).ShutDown()
	_, _ = r.Reconcile(ctx, req("a")) // not in flight
	if calls != 2 {
		t.Errorf("reconciler called %d times, want 2", calls)
	}
}

// TestHandlerFallsBackToAdd: with a queue that has no AddWithOptions (a plain
// client-go queue) the handler still enqueues, as controller-runtime's
// does.
func TestHandlerFallsBackToAdd(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	q := workqueue.NewTypedRateLimitingQueue(limiter())
	defer q.ShutDown()
	h := controllerruntime.EnqueueRequestForObject(traceparent.WithMeterProvider(tel.mp))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}}
	h.Generic(context.Background(), event.GenericEvent{Object: cm}, q)
	h.Generic(context.Background(), event.GenericEvent{Object: nil}, q) // dropped
	if got, _ := q.Get(); got != req("plain") || q.Len() != 0 {
		t.Errorf("Get = %v, Len = %d; want default/plain, 0", got, q.Len())
	}
}

// TestTypedHandlerEvents: every event kind enqueues the object, through
// AddWithOptions with the annotation's span context.
func TestTypedHandlerEvents(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	q := newQueue(t, tel, "typed")
	h := controllerruntime.TypedEnqueueRequestForObject[*corev1.ConfigMap](traceparent.WithMeterProvider(tel.mp))
	ctx := context.Background()
	cm := func(name string) (*corev1.ConfigMap, trace.SpanContext) {
		wctx, span := tel.tp.Tracer("test/writer").Start(ctx, "write "+name)
		defer span.End()
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		traceparent.Inject(wctx, obj)
		return obj, span.SpanContext()
	}
	created, scCreated := cm("created")
	updated, scUpdated := cm("updated")
	deleted, scDeleted := cm("deleted")
	h.Create(ctx, event.TypedCreateEvent[*corev1.ConfigMap]{Object: created}, q)
	h.Update(ctx, event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: created, ObjectNew: updated}, q)
	h.Delete(ctx, event.TypedDeleteEvent[*corev1.ConfigMap]{Object: deleted}, q)
	h.Update(ctx, event.TypedUpdateEvent[*corev1.ConfigMap]{}, q) // dropped
	want := map[reconcile.Request]trace.SpanContext{req("created"): scCreated, req("updated"): scUpdated, req("deleted"): scDeleted}
	if q.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", q.Len(), len(want))
	}
	for range want {
		it, err := q.GetContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sc := want[it.Key]; it.Origin.TraceID() != sc.TraceID() || it.Origin.SpanID() != sc.SpanID() {
			t.Errorf("%v: origin %v, want its writer %v", it.Key, it.Origin, sc)
		}
		q.Done(it.Key)
	}
}

// TestQueueShutDownLikeControllerRuntime: after ShutDown, Get and
// GetWithPriority hand out nothing more, queued keys or not, even a key
// held while in flight that becomes ready after ShutDown, to a worker
// already waiting: as controller-runtime's priority queue, checked
// alongside as the oracle.
func TestQueueShutDownLikeControllerRuntime(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	for name, q := range map[string]priorityqueue.PriorityQueue[reconcile.Request]{
		"controller-runtime": priorityqueue.New[reconcile.Request]("oracle-stopping"),
		"ours":               newQueue(t, tel, "stopping"),
	} {
		q.Add(req("busy"))
		if got, _, _ := q.GetWithPriority(); got != req("busy") {
			t.Fatalf("%s: got %v", name, got)
		}
		q.Add(req("busy")) // held until its Done
		waiter := make(chan bool, 1)
		go func() {
			_, _, shutdown := q.GetWithPriority()
			waiter <- shutdown
		}()
		// The getter waits (nothing is ready) when ShutDown comes, then the
		// held key becomes ready.
		testutil.WaitBlocked(t, "GetWithPriority", testutil.AnyBlocked, 1)
		q.ShutDown()
		q.Done(req("busy"))
		if !testutil.Receive(t, waiter, name+": the waiting getter") {
			t.Errorf("%s: the waiting getter got a key after ShutDown", name)
		}
		q.Add(req("a")) // ignored
		if got, _, shutdown := q.GetWithPriority(); !shutdown {
			t.Errorf("%s: GetWithPriority after ShutDown = %v, want shutdown", name, got)
		}
		if got, shutdown := q.Get(); !shutdown {
			t.Errorf("%s: Get after ShutDown = %v, want shutdown", name, got)
		}
	}
}
