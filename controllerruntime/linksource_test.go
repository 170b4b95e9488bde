package controllerruntime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/controllerruntime/fakecluster"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/traceparent"
)

// forController is a running manager on a cluster whose controller was
// wired by a test, with ObjectLinkSource over the manager's cache for
// ConfigMaps.
type forController struct {
	c    *cluster
	tel  *telemetry
	name string
}

// startForController starts a manager on c with one controller named name:
// builder.ControllerManagedBy, Named, the queue of controllerruntime.New
// with ObjectLinkSource(cache, ConfigMap), then whatever wire adds (For,
// Owns, Watches), and a reconciler that does nothing. The manager stops
// when the test ends.
func startForController(t *testing.T, c *cluster, name string, wire func(*builder.Builder, manager.Manager) *builder.Builder) *forController {
	t.Helper()
	tel := newTelemetry(t)
	fc := &forController{c: c, tel: tel, name: name}
	mgr := c.newManager(t, manager.Options{})
	src := controllerruntime.ObjectLinkSource(mgr.GetCache(), &corev1.ConfigMap{},
		traceparent.WithMeterProvider(tel.mp))
	otq := controllerruntime.New(otelqueue.WithTracerProvider(tel.tp), otelqueue.WithMeterProvider(tel.mp), otelqueue.WithLinkSource(src))
	b := builder.ControllerManagedBy(mgr).
		Named(name).
		WithOptions(controller.Options{NewQueue: otq.NewQueue, SkipNameValidation: ptr.To(true)})
	err := wire(b, mgr).Complete(otq.Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})))
	if err != nil {
		t.Fatalf("builder: %v", err)
	}
	startManager(t, mgr)
	return fc
}

// startManager starts mgr and stops it when the test ends, failing the test
// if it stopped with an error.
func startManager(t *testing.T, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := testutil.Receive(t, errc, "the manager to stop"); err != nil {
			t.Errorf("manager.Start: %v", err)
		}
	})
}

// traced runs write in a writer's span and returns that span's context: a
// client that writes an object in its own trace.
func (fc *forController) traced(t *testing.T, what string, write func(ctx context.Context) error) trace.SpanContext {
	t.Helper()
	ctx, span := fc.tel.tp.Tracer("test/writer").Start(context.Background(), what)
	defer span.End()
	if err := write(ctx); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return span.SpanContext()
}

// createConfigMap creates name in the test's namespace with annotations
// and returns it as the cluster stored it; with a traced ctx,
// traceparent.Inject adds the writer's traceparent. It asks for the UID
// uid-<name>, which the fake keeps and the API server replaces by its own
// (TestAPIServerObjectIdentity): use the returned object's.
func (fc *forController) createConfigMap(ctx context.Context, name string, annotations map[string]string) (*corev1.ConfigMap, error) {
	ns := fc.c.namespace
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Annotations: annotations}}
	traceparent.Inject(ctx, cm)
	return fc.c.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
}

// create is createConfigMap for a test that needs no more than the error.
func (fc *forController) create(ctx context.Context, name string, annotations map[string]string) error {
	_, err := fc.createConfigMap(ctx, name, annotations)
	return err
}

// roots waits until n attempts of the object called name (in the test's
// namespace) have ended and returns their root spans in the order they
// ended.
func (fc *forController) roots(t *testing.T, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	key := fc.c.key(name)
	var out []sdktrace.ReadOnlySpan
	testutil.WaitFor(t, "attempts of "+key, func() bool {
		out = out[:0]
		for _, s := range testutil.SpansNamed(fc.tel.sr.Ended(), "process "+fc.name) {
			if attr(s, string(semconv.AttrKey)) == key {
				out = append(out, s)
			}
		}
		return len(out) >= n
	})
	if len(out) != n {
		t.Fatalf("%d attempts of %s, want %d", len(out), key, n)
	}
	return out
}

// assertLinked checks that root links to exactly want, by span and by
// workqueue.link kind, in order.
func assertLinked(t *testing.T, root sdktrace.ReadOnlySpan, want ...link) {
	t.Helper()
	got := root.Links()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		gotAttrs, wantAttrs := attribute.NewSet(got[i].Attributes...), attribute.NewSet(semconv.AttrLinkKind.String(want[i].kind))
		ok = got[i].SpanContext.TraceID() == want[i].sc.TraceID() && got[i].SpanContext.SpanID() == want[i].sc.SpanID() &&
			gotAttrs.Equals(&wantAttrs)
	}
	if !ok {
		t.Errorf("attempt of %s links %v, want %v", attr(root, string(semconv.AttrKey)), got, want)
	}
}

type link struct {
	sc   trace.SpanContext
	kind string
}

// invalidTraceparents returns workqueue.traceparent.invalid (0 if not reported).
func invalidTraceparents(t *testing.T, tel *telemetry) int64 {
	t.Helper()
	for _, sm := range tel.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == semconv.MetricTraceparentInvalid {
				var n int64
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					n += dp.Value
				}
				return n
			}
		}
	}
	return 0
}

// TestObjectLinkSourceFor: a controller built with For() and nothing else of
// ours but the queue and its link source: the attempt caused by a traced
// write links to the writer; an object without the annotation, one with a
// malformed annotation (counted), and a deleted object give no link and no
// error.
func TestObjectLinkSourceFor(t *testing.T) { testObjectLinkSourceFor(t, fakeCluster(t)) }

// TestAPIServerObjectLinkSourceFor is TestObjectLinkSourceFor on a real API
// server: the cache's informers list and watch kube-apiserver.
func TestAPIServerObjectLinkSourceFor(t *testing.T) {
	testObjectLinkSourceFor(t, apiServerCluster(t))
}

func testObjectLinkSourceFor(t *testing.T, c *cluster) {
	testutil.NoOTelErrors(t)
	fc := startForController(t, c, "for-configmaps", func(b *builder.Builder, _ manager.Manager) *builder.Builder {
		return b.For(&corev1.ConfigMap{})
	})

	writer := fc.traced(t, "create settings", func(ctx context.Context) error {
		return fc.create(ctx, "settings", nil)
	})
	assertLinked(t, fc.roots(t, "settings", 1)[0], link{writer, "lookup"})

	if err := fc.create(context.Background(), "plain", nil); err != nil {
		t.Fatal(err)
	}
	assertLinked(t, fc.roots(t, "plain", 1)[0])

	if err := fc.create(context.Background(), "broken", map[string]string{traceparent.Annotation: "00-not-a-traceparent"}); err != nil {
		t.Fatal(err)
	}
	assertLinked(t, fc.roots(t, "broken", 1)[0])
	if n := invalidTraceparents(t, fc.tel); n != 1 {
		t.Errorf("workqueue.traceparent.invalid = %d, want 1 (the malformed annotation)", n)
	}

	// Deleted: the attempt that the delete causes finds nothing in the cache.
	gone := fc.traced(t, "create gone", func(ctx context.Context) error { return fc.create(ctx, "gone", nil) })
	assertLinked(t, fc.roots(t, "gone", 1)[0], link{gone, "lookup"})
	if err := c.cs.CoreV1().ConfigMaps(c.namespace).Delete(context.Background(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	assertLinked(t, fc.roots(t, "gone", 2)[1])
}

// TestObjectLinkSourceOwns: with For(ConfigMap).Owns(Secret), a traced write
// of an owned Secret enqueues its owner; the attempt links to the owner's
// last writer (the key's object), not to the Secret's writer. Watching the
// Secrets with WithTraceContext(EnqueueRequestForOwner) instead links to
// both: the Secret's writer through the enqueue, the owner's through the
// lookup.
func TestObjectLinkSourceOwns(t *testing.T) { testObjectLinkSourceOwns(t, fakeCluster) }

// TestAPIServerObjectLinkSourceOwns is TestObjectLinkSourceOwns on a real
// API server, which validates the owner reference (the owner's UID is the
// one it assigned); no garbage collector runs there, nor on the fake.
func TestAPIServerObjectLinkSourceOwns(t *testing.T) {
	apiServerConfig(t) // skips here, rather than in each case
	testObjectLinkSourceOwns(t, apiServerCluster)
}

// testObjectLinkSourceOwns runs each case on a cluster of its own, from
// newCluster.
func testObjectLinkSourceOwns(t *testing.T, newCluster func(testing.TB) *cluster) {
	for _, tc := range []struct {
		name string
		wire func(*builder.Builder, manager.Manager) *builder.Builder
		// secretWriter: whether the Secret's writer is linked (by the enqueue).
		secretWriter bool
	}{
		{"Owns", func(b *builder.Builder, _ manager.Manager) *builder.Builder {
			return b.For(&corev1.ConfigMap{}).Owns(&corev1.Secret{})
		}, false},
		{"Watches with WithTraceContext", func(b *builder.Builder, mgr manager.Manager) *builder.Builder {
			return b.For(&corev1.ConfigMap{}).Watches(&corev1.Secret{}, controllerruntime.WithTraceContext(
				handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &corev1.ConfigMap{}, handler.OnlyControllerOwner())))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.NoOTelErrors(t)
			c := newCluster(t)
			fc := startForController(t, c, "owns", tc.wire)
			var app *corev1.ConfigMap
			owner := fc.traced(t, "create owner", func(ctx context.Context) (err error) {
				app, err = fc.createConfigMap(ctx, "app", nil)
				return err
			})
			assertLinked(t, fc.roots(t, "app", 1)[0], link{owner, "lookup"})

			secretWriter := fc.traced(t, "create secret", func(ctx context.Context) error {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: "app-secret",
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "v1", Kind: "ConfigMap", Name: "app", UID: app.UID,
						Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
					}}}}
				traceparent.Inject(ctx, s)
				_, err := c.cs.CoreV1().Secrets(c.namespace).Create(ctx, s, metav1.CreateOptions{})
				return err
			})
			second := fc.roots(t, "app", 2)[1]
			if tc.secretWriter {
				assertLinked(t, second, link{secretWriter, "enqueue"}, link{owner, "lookup"})
			} else {
				assertLinked(t, second, link{owner, "lookup"})
			}
		})
	}
}

// TestObjectLinkSourceDeduplicates: with controller-runtime's For() handler
// replaced by EnqueueRequestForObject, which already links to the writer
// through the enqueue, the looked-up writer (the same span) is not linked
// a second time.
func TestObjectLinkSourceDeduplicates(t *testing.T) {
	testutil.NoOTelErrors(t)
	fc := startForController(t, fakeCluster(t), "dedup", func(b *builder.Builder, _ manager.Manager) *builder.Builder {
		return b.Watches(&corev1.ConfigMap{}, controllerruntime.EnqueueRequestForObject())
	})
	writer := fc.traced(t, "create settings", func(ctx context.Context) error { return fc.create(ctx, "settings", nil) })
	assertLinked(t, fc.roots(t, "settings", 1)[0], link{writer, "enqueue"})
}

// TestObjectLinkSourceCacheNotRunning: before the cache started, while its
// informer has not synced, and after it stopped, a lookup returns no link
// and no error at once (it never waits for the sync).
func TestObjectLinkSourceCacheNotRunning(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts cache.Options
	}{
		{"all namespaces", cache.Options{}}, // the informer's store is read
		{"one namespace", cache.Options{DefaultNamespaces: map[string]cache.Config{"default": {}}}}, // read with Get
	} {
		t.Run(tc.name, func(t *testing.T) { objectLinkSourceCacheNotRunning(t, tc.opts) })
	}
}

func objectLinkSourceCacheNotRunning(t *testing.T, opts cache.Options) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	cs := fake.NewClientset()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
	wctx, span := tel.tp.Tracer("test/writer").Start(ctx, "create settings")
	traceparent.Inject(wctx, cm)
	span.End()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer's first list waits for the test: the cache has started
	// but not synced.
	listing, release := make(chan struct{}, 1), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // should the test fail before
	cs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case listing <- struct{}{}:
		default:
		}
		<-release
		return false, nil, nil
	})
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:1"}, fakecluster.ManagerOptions(cs, manager.Options{Cache: opts}).Cache)
	if err != nil {
		t.Fatal(err)
	}
	src := controllerruntime.ObjectLinkSource(c, &corev1.ConfigMap{}, traceparent.WithMeterProvider(tel.mp))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "settings"}}
	lookup := func(what string) trace.SpanContext {
		t.Helper()
		res := make(chan trace.SpanContext, 1)
		go func() {
			sc, err := src.SpanContext(ctx, req)
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			res <- sc
		}()
		return testutil.Receive(t, res, "the lookup "+what)
	}
	if sc := lookup("before the cache started"); sc.IsValid() {
		t.Errorf("before the cache started: link to %v, want none", sc)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- c.Start(cctx) }()
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	testutil.Receive(t, listing, "the informer's list")
	if sc := lookup("while the informer lists"); sc.IsValid() {
		t.Errorf("while the informer lists: link to %v, want none", sc)
	}
	unblock()
	if !c.WaitForCacheSync(cctx) {
		t.Fatal("the cache did not sync")
	}
	if sc := lookup("once synced"); sc.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("once synced: link to %v, want the writer %v", sc.SpanID(), span.SpanContext().SpanID())
	}
	// Workers look up concurrently.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if sc, err := src.SpanContext(ctx, req); err != nil || sc.SpanID() != span.SpanContext().SpanID() {
					t.Errorf("concurrent lookup: %v, %v; want the writer", sc.SpanID(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	cancel()
	if err := testutil.Receive(t, stopped, "the cache to stop"); err != nil {
		t.Fatalf("cache.Start: %v", err)
	}
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the informer to stop", inf.IsStopped)
	if sc := lookup("after the cache stopped"); sc.IsValid() {
		t.Errorf("after the cache stopped: link to %v, want none", sc)
	}
}

// TestObjectLinkSourceNil: a nil cache or object is reported and gives a
// source that never links.
func TestObjectLinkSourceNil(t *testing.T) {
	testutil.TakeOTelErrors()
	src := controllerruntime.ObjectLinkSource(nil, &corev1.ConfigMap{})
	if errs := testutil.TakeOTelErrors(); len(errs) != 1 {
		t.Errorf("otel.Handle got %v, want one error", errs)
	}
	sc, err := src.SpanContext(context.Background(), reconcile.Request{})
	if sc.IsValid() || err != nil {
		t.Errorf("SpanContext = %v, %v; want no link and no error", sc, err)
	}
}

// A controller built with For(), as kubebuilder scaffolds it: For()'s
// handler enqueues with no trace context, and ObjectLinkSource links each
// attempt to the writer of the object, read from the manager's cache.
func ExampleObjectLinkSource() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	otq := controllerruntime.New(otelqueue.WithLinkSource(
		controllerruntime.ObjectLinkSource(mgr.GetCache(), &corev1.ConfigMap{})))
	err = builder.ControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}).
		WithOptions(controller.Options{NewQueue: otq.NewQueue}).
		Complete(otq.Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		})))
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
