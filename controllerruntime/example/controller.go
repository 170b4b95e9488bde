package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/controllerruntime/fakecluster"
	"github.com/otelqueue/otelqueue/otelqueue"
)

const (
	controllerName = "configmaps"
	// observedAnnotation records the data version last reconciled.
	observedAnnotation = "example.otelqueue.io/observed-version"
	versionKey         = "version"
)

const tracerName = "github.com/otelqueue/otelqueue/controllerruntime/example"

// runManager runs the manager, and the workload when asked, until ctx ends.
func runManager(ctx context.Context, cfg config) error {
	cs, restCfg, embedded, err := newClient(cfg)
	if err != nil {
		return err
	}
	logger := funcr.New(func(prefix, args string) { log.Println(prefix, args) }, funcr.Options{})
	logf.SetLogger(logger)

	// The tracer of the providers setupTelemetry installed (a package-level
	// otel.Tracer would stay bound to the first ones ever installed).
	tracer := otel.Tracer(tracerName)
	w := &workload{cfg: cfg, client: cs, tracer: tracer}
	if cfg.generate {
		// Before the controller starts: these are its initial list.
		if err := w.seed(ctx); err != nil {
			return err
		}
	}
	mopts := manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"}, // /metrics is served by setupTelemetry
		HealthProbeBindAddress: "0",
		Logger:                 logger,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{cfg.namespace: {}}},
	}
	if embedded {
		// The manager's cache (For's informer) lists and watches the fake
		// clientset.
		mopts = fakecluster.ManagerOptions(cs, mopts)
	}
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	// For() enqueues with no trace context: the link source finds each
	// attempt's writer in the object's annotation, in the manager's cache.
	otq := controllerruntime.New( // the global providers set by setupTelemetry
		otelqueue.WithLinkSource(controllerruntime.ObjectLinkSource(mgr.GetCache(), &corev1.ConfigMap{})))
	opts := controller.Options{NewQueue: otq.NewQueue, MaxConcurrentReconciles: cfg.workers}
	if cfg.skipNameValidation {
		opts.SkipNameValidation = &cfg.skipNameValidation
	}
	err = builder.ControllerManagedBy(mgr).
		Named(controllerName).
		For(&corev1.ConfigMap{}, builder.WithPredicates(dataChanged())).
		WithOptions(opts).
		Complete(otq.Reconciler(&reconciler{client: cs, reader: mgr.GetCache(), latency: cfg.latency, tracer: tracer}))
	if err != nil {
		return fmt.Errorf("building the controller: %w", err)
	}

	if cfg.generate {
		go w.run(ctx)
	}
	if cfg.summaryEvery > 0 {
		go summarize(ctx, cfg.summaryEvery, otq)
	}
	where := cfg.kubeconfig
	if embedded {
		where = "the embedded fake cluster"
	}
	log.Printf("controller %q watching ConfigMaps in %s of %s with %d workers", controllerName, cfg.namespace, where, cfg.workers)
	return mgr.Start(ctx)
}

// newClient returns the clientset and the manager's rest.Config: the fake
// clientset and a config that is never dialled by default (the manager's
// own cache and client are not used), or those of -kubeconfig.
func newClient(cfg config) (kubernetes.Interface, *rest.Config, bool, error) {
	if cfg.kubeconfig == "" {
		return fakeCluster(), &rest.Config{Host: "http://127.0.0.1:1"}, true, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, nil, false, fmt.Errorf("-kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, false, fmt.Errorf("client for %s: %w", cfg.kubeconfig, err)
	}
	return cs, rc, false, nil
}

// fakeCluster is client-go's fake clientset that sets a new resource
// version on every create and update, as an API server does (the fake
// stores what it is given): controller-runtime tells changes from resyncs
// by it.
func fakeCluster() *fake.Clientset {
	cs := fake.NewClientset()
	var version atomic.Int64
	stamp := func(action k8stesting.Action) (bool, runtime.Object, error) {
		if a, ok := action.(interface{ GetObject() runtime.Object }); ok {
			if m, err := meta.Accessor(a.GetObject()); err == nil {
				m.SetResourceVersion(strconv.FormatInt(version.Add(1), 10))
			}
		}
		return false, nil, nil // the tracker stores the stamped object
	}
	cs.PrependReactor("create", "*", stamp)
	cs.PrependReactor("update", "*", stamp)
	return cs
}

// dataChanged passes creates, deletes, resyncs and updates that change the
// data: not the controller's own annotation writes.
func dataChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.ConfigMap)
		n, ok2 := e.ObjectNew.(*corev1.ConfigMap)
		return !ok1 || !ok2 || o.ResourceVersion == n.ResourceVersion || o.Data[versionKey] != n.Data[versionKey]
	}}
}

// reconciler records the data version it saw in an annotation, after
// working for a while in a span of its own (a child of "reconcile").
type reconciler struct {
	client  kubernetes.Interface
	reader  client.Reader // the manager's cache
	latency time.Duration
	tracer  trace.Tracer
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	err := r.reader.Get(ctx, req.NamespacedName, cm)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	_, span := r.tracer.Start(ctx, "work")
	select {
	case <-time.After(r.latency):
	case <-ctx.Done():
	}
	span.End()
	if err := ctx.Err(); err != nil {
		return reconcile.Result{}, err
	}
	if cm.Annotations[observedAnnotation] == cm.Data[versionKey] {
		return reconcile.Result{}, nil
	}
	cm = cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[observedAnnotation] = cm.Data[versionKey]
	_, err = r.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	return reconcile.Result{}, client.IgnoreNotFound(err) // a conflict is retried
}

// workload creates ConfigMaps and updates them, each write in a span whose
// traceparent the object carries.
type workload struct {
	cfg    config
	client kubernetes.Interface
	tracer trace.Tracer
}

func (w *workload) name(i int) string { return fmt.Sprintf("demo-%04d", i) }

func (w *workload) seed(ctx context.Context) error {
	for i := range w.cfg.objects {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: w.name(i), Namespace: w.cfg.namespace},
			Data:       map[string]string{versionKey: "0"},
		}
		_, err := w.client.CoreV1().ConfigMaps(w.cfg.namespace).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", w.cfg.namespace, cm.Name, err)
		}
	}
	return nil
}

func (w *workload) run(ctx context.Context) {
	if w.cfg.churn <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(3, 4))
	wait.Until(func() { w.update(ctx, rng.IntN(w.cfg.objects)) }, time.Duration(float64(time.Second)/w.cfg.churn), ctx.Done())
}

// update bumps one ConfigMap's data version inside a "workload update" span.
func (w *workload) update(ctx context.Context, i int) {
	ctx, span := w.tracer.Start(ctx, "workload update", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	cms := w.client.CoreV1().ConfigMaps(w.cfg.namespace)
	cm, err := cms.Get(ctx, w.name(i), metav1.GetOptions{})
	if err != nil {
		if ctx.Err() == nil {
			log.Printf("workload: %v", err)
		}
		return
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	n, _ := strconv.Atoi(cm.Data[versionKey])
	cm.Data[versionKey] = strconv.Itoa(n + 1)
	otelqueue.InjectTraceparent(ctx, cm) // the reconcile this write causes links here
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
		log.Printf("workload: %v", err)
	}
}

// summarize prints the queue's numbers every interval, from Stats and
// DepthByPriority.
func summarize(ctx context.Context, every time.Duration, otq *controllerruntime.Controller[reconcile.Request]) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			q := otq.Queue()
			if q == nil {
				continue // the controller has not started
			}
			st := q.Stats()
			log.Printf("queue %s: depth=%d by priority=%v delayed=%d in_flight=%d oldest=%v adds=%d retries=%d",
				q.Name(), st.Depth, q.DepthByPriority(nil), st.Delayed, st.InFlight, st.OldestPending.Round(time.Millisecond), st.Adds, st.Retries)
		}
	}
}
