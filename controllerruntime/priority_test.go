package controllerruntime_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

// TestHandlerPrioritiesMatchControllerRuntime sends every kind of event
// through controller-runtime's own handler.EnqueueRequestForObject into
// controller-runtime's own priority queue, and through ours into our
// queue and into controller-runtime's: each request must come out with the
// same priority (the initial list and resyncs low, real changes 0).
func TestHandlerPrioritiesMatchControllerRuntime(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	obj := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
	}
	type eventFunc func(ctx context.Context, h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request])
	events := map[string]eventFunc{
		"initial-list": func(ctx context.Context, h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: obj("initial-list", "1"), IsInInitialList: true}, q)
		},
		"created": func(ctx context.Context, h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: obj("created", "1")}, q)
		},
		"resync": func(ctx context.Context, h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: obj("resync", "7"), ObjectNew: obj("resync", "7")}, q)
		},
		"updated": func(ctx context.Context, h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: obj("updated", "7"), ObjectNew: obj("updated", "8")}, q)
		},
		"deleted": func(ctx context.Context, h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: obj("deleted", "9")}, q)
		},
		"generic": func(ctx context.Context, h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) {
			h.Generic(ctx, event.GenericEvent{Object: obj("generic", "9")}, q)
		},
	}
	drain := func(q priorityqueue.PriorityQueue[reconcile.Request]) map[string]int {
		got := map[string]int{}
		for q.Len() > 0 {
			r, p, _ := q.GetWithPriority()
			got[r.Name] = p
			q.Done(r)
		}
		return got
	}
	run := func(h handler.EventHandler, q priorityqueue.PriorityQueue[reconcile.Request]) map[string]int {
		defer q.ShutDown()
		for _, send := range events {
			send(context.Background(), h, q)
		}
		return drain(q)
	}

	want := run(&handler.EnqueueRequestForObject{}, priorityqueue.New[reconcile.Request]("oracle"))
	if want["initial-list"] != handler.LowPriority || want["resync"] != handler.LowPriority || want["updated"] != 0 || len(want) != len(events) {
		t.Fatalf("controller-runtime's own handler and queue gave %v: the oracle changed", want)
	}
	ours := controllerruntime.EnqueueRequestForObject(traceparent.WithMeterProvider(tel.mp))
	for name, q := range map[string]priorityqueue.PriorityQueue[reconcile.Request]{
		"our queue":                newQueue(t, tel, "ours"),
		"controller-runtime queue": priorityqueue.New[reconcile.Request]("theirs"),
	} {
		if got := run(ours, q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("our handler on %s: priorities %v, controller-runtime's %v", name, got, want)
		}
	}
}

// TestHandlerTriggers: our handler, and controller-runtime's own wrapped in
// WithTraceContext, tell the queue what each event was, for the attempt's
// workqueue.trigger: the initial list, a create, a resync, an update, a
// delete, a generic event.
func TestHandlerTriggers(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	obj := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
	}
	send := func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		ctx := context.Background()
		h.Create(ctx, event.CreateEvent{Object: obj("initial-list", "1"), IsInInitialList: true}, q)
		h.Create(ctx, event.CreateEvent{Object: obj("created", "1")}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: obj("resync", "7"), ObjectNew: obj("resync", "7")}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: obj("updated", "7"), ObjectNew: obj("updated", "8")}, q)
		h.Delete(ctx, event.DeleteEvent{Object: obj("deleted", "9")}, q)
		h.Generic(ctx, event.GenericEvent{Object: obj("generic", "9")}, q)
	}
	want := map[string]scheduler.Trigger{
		"initial-list": scheduler.TriggerInitialList, "created": scheduler.TriggerCreate, "resync": scheduler.TriggerResync,
		"updated": scheduler.TriggerUpdate, "deleted": scheduler.TriggerDelete, "generic": scheduler.TriggerGeneric,
	}
	for name, h := range map[string]handler.EventHandler{
		"ours": controllerruntime.EnqueueRequestForObject(traceparent.WithMeterProvider(tel.mp)),
		"controller-runtime's in WithTraceContext": controllerruntime.WithTraceContext[client.Object, reconcile.Request](
			&handler.EnqueueRequestForObject{}, traceparent.WithMeterProvider(tel.mp)),
	} {
		q := newQueue(t, tel, "triggers")
		send(h, q)
		got := map[string]scheduler.Trigger{}
		for q.Len() > 0 {
			it, err := q.GetContext(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got[it.Key.Name] = it.Trigger
			q.Done(it.Key)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: triggers %v, want %v", name, got, want)
		}
		q.ShutDown()
	}
}

// TestHandlerSources: the handlers say which watch an event came from, as
// the kind of its object (scheduler.AddOptions.Source, the span's
// workqueue.trigger.source): For's ConfigMap through our handler, a
// Watches' Secret mapped to its ConfigMap through WithTraceContext, and an
// unstructured object's kind from its GroupVersionKind.
func TestHandlerSources(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	ctx := context.Background()
	q := newQueue(t, tel, "sources")
	defer q.ShutDown()

	forCM := controllerruntime.EnqueueRequestForObject(traceparent.WithMeterProvider(tel.mp))
	forCM.Update(ctx, event.UpdateEvent{
		ObjectOld: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "for", ResourceVersion: "1"}},
		ObjectNew: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "for", ResourceVersion: "2"}},
	}, q)
	watches := controllerruntime.WithTraceContext(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: "watched-" + o.GetName()}}}
	}), traceparent.WithMeterProvider(tel.mp))
	watches.Delete(ctx, event.DeleteEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}}}, q)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	u.SetNamespace("default")
	u.SetName("widget")
	controllerruntime.WithTraceContext[client.Object, reconcile.Request](&handler.EnqueueRequestForObject{}, traceparent.WithMeterProvider(tel.mp)).
		Create(ctx, event.CreateEvent{Object: u}, q)

	want := map[string]string{"for": "ConfigMap", "watched-s": "Secret", "widget": "Widget"}
	wantTrigger := map[string]scheduler.Trigger{"for": scheduler.TriggerUpdate, "watched-s": scheduler.TriggerDelete, "widget": scheduler.TriggerCreate}
	got := map[string]string{}
	for q.Len() > 0 {
		it, err := q.GetContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got[it.Key.Name] = it.Source
		if it.Trigger != wantTrigger[it.Key.Name] {
			t.Errorf("%s: trigger %v, want %v", it.Key.Name, it.Trigger, wantTrigger[it.Key.Name])
		}
		q.Done(it.Key)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sources %v, want %v", got, want)
	}
}

// TestManagerPriorities runs a controller on a real client-go informer over
// the fake clientset: the informer's initial list is enqueued at low
// priority, and a change made while the only worker is busy is reconciled
// before the rest of that list; the depth is reported by priority; the
// changed object's reconcile still links to its writer.
func TestManagerPriorities(t *testing.T) { testManagerPriorities(t, fakeCluster(t)) }

// TestAPIServerManagerPriorities is TestManagerPriorities with the informer
// over a real API server, and the manager on it.
func TestAPIServerManagerPriorities(t *testing.T) {
	testManagerPriorities(t, apiServerCluster(t))
}

func testManagerPriorities(t *testing.T, c *cluster) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	name := c.controllerName("prioritized")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var initial []string
	cms := c.cs.CoreV1().ConfigMaps(c.namespace)
	for i := range 6 {
		n := "initial-" + strconv.Itoa(i)
		initial = append(initial, n)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(c.cs, 0, informers.WithNamespace(c.namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()

	var (
		mu    sync.Mutex
		order []string
	)
	started := make(chan string, 1)
	release := make(chan struct{})
	var once sync.Once
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		first := false
		once.Do(func() { first = true })
		if first {
			started <- req.Name
			<-release
		}
		mu.Lock()
		order = append(order, req.Name)
		mu.Unlock()
		return reconcile.Result{}, nil
	})

	mgr := c.newManager(t, manager.Options{})
	otq := controllerruntime.New(otelqueue.WithTracerProvider(tel.tp), otelqueue.WithMeterProvider(tel.mp))
	h := controllerruntime.EnqueueRequestForObject(traceparent.WithMeterProvider(tel.mp))
	err := builder.ControllerManagedBy(mgr).
		Named(name).
		WithOptions(controller.Options{NewQueue: otq.NewQueue, MaxConcurrentReconciles: 1, SkipNameValidation: ptr.To(true)}).
		WatchesRawSource(&source.Informer{Informer: informer, Handler: h}).
		Complete(otq.Reconciler(r))
	if err != nil {
		t.Fatalf("builder: %v", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := testutil.Receive(t, errc, "the manager to stop"); err != nil {
			t.Errorf("manager.Start: %v", err)
		}
	}()

	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // before the manager stops, should the test fail first

	busy := testutil.Receive(t, started, "the first reconcile")
	if !slices.Contains(initial, busy) {
		t.Fatalf("first reconcile %q is not from the initial list", busy)
	}
	q := otq.Queue()
	testutil.WaitFor(t, "the rest of the initial list to be queued", func() bool { return q.Len() == len(initial)-1 })

	// Two real changes while the only worker is busy: an update of an
	// object of the initial list (its pending request is raised) and a new
	// object, written in a traced client call.
	changed := initial[len(initial)-1]
	if changed == busy {
		changed = initial[0]
	}
	wctx, span := tel.tp.Tracer("test/writer").Start(ctx, "update configmap")
	cm, err := cms.Get(wctx, changed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"changed": "yes"}
	if !c.real {
		// The fake clientset keeps the resourceVersion it is given and sets
		// none, so without this the update would look like a resync (same
		// version), which is enqueued at low priority. The API server sets a
		// new one itself, and rejects a made-up one
		// (TestAPIServerResourceVersion).
		cm.ResourceVersion = "2"
	}
	traceparent.Inject(wctx, cm)
	if _, err := cms.Update(wctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writer := span.SpanContext()
	span.End()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: "created"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	wantDepth := map[string]int64{"0": 2, strconv.Itoa(handler.LowPriority): int64(len(initial) - 2)}
	testutil.WaitFor(t, "two requests at priority 0", func() bool {
		got := map[string]int64{}
		for _, dp := range depthPoints(t, tel) {
			p, _ := dp.Attributes.Value(semconv.AttrPriority)
			got[p.AsString()] = dp.Value
		}
		return fmt.Sprint(got) == fmt.Sprint(wantDepth)
	})

	unblock()
	testutil.WaitFor(t, "every request to be reconciled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == len(initial)+1
	})
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	mid := slices.Sorted(slices.Values(got[1:3]))
	if got[0] != busy || !slices.Equal(mid, slices.Sorted(slices.Values([]string{changed, "created"}))) {
		t.Errorf("reconciled %q: want %s, then %s and created (priority 0), then the rest of the initial list", got, busy, changed)
	}

	// The changed object's attempt links to its writer.
	testutil.WaitFor(t, "the attempts' root spans", func() bool {
		return len(testutil.SpansNamed(tel.sr.Ended(), "process "+name)) == len(initial)+1
	})
	linked := false
	for _, root := range testutil.SpansNamed(tel.sr.Ended(), "process "+name) {
		for _, l := range root.Links() {
			linked = linked || l.SpanContext.TraceID() == writer.TraceID() && l.SpanContext.SpanID() == writer.SpanID()
		}
	}
	if !linked {
		t.Error("no attempt links to the writer of the changed object")
	}
}

// depthPoints collects the depth's data points.
func depthPoints(t *testing.T, tel *telemetry) []metricdata.DataPoint[int64] {
	t.Helper()
	m := testutil.FindMetric(t, tel.collect(t), semconv.ScopeOtelqueue, semconv.MetricDepth)
	return m.Data.(metricdata.Sum[int64]).DataPoints
}
