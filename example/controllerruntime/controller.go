package main

import (
	"context"
	"fmt"
	"github.com/otelqueue/otelqueue/inspect"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
	"github.com/otelqueue/otelqueue/otelqueue"
)

const (
	controllerName = "configmaps"
	// observedAnnotation records the data version last reconciled.
	observedAnnotation = "example.otelqueue.io/observed-version"
	versionKey         = examplecluster.VersionKey
)

const tracerName = "github.com/otelqueue/otelqueue/example/controllerruntime"

// runManager runs the manager, and the workload when asked, until ctx ends.
func runManager(ctx context.Context, cfg config, sizer *otelqueue.Sizer) error {
	// The embedded cluster runs until the manager has stopped: closed on
	// return, not by ctx.
	cluster, err := examplecluster.Connect(context.Background(), cfg.Flags)
	if err != nil {
		return err
	}
	defer cluster.Close()
	cs, restCfg := cluster.Client, cluster.RestConfig
	logger := funcr.New(func(prefix, args string) { log.Println(prefix, args) }, funcr.Options{})
	logf.SetLogger(logger)

	// The tracer of the providers setupTelemetry installed (a package-level
	// otel.Tracer would stay bound to the first ones ever installed).
	tracer := otel.Tracer(tracerName)
	w := &examplecluster.Workload{Cluster: cluster, Namespace: cfg.Namespace, Objects: cfg.Objects, Churn: cfg.Churn, Schedule: cfg.ChurnSchedule, Tracer: tracer}
	if cfg.Generate {
		// Before the controller starts: these are its initial list.
		if err := w.Seed(ctx); err != nil {
			return examplecluster.StopError(ctx, err)
		}
	}
	mopts := manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"}, // /metrics is served by setupTelemetry
		HealthProbeBindAddress: "0",
		Logger:                 logger,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{cfg.Namespace: {}}},
	}
	if cfg.LeaderElect {
		// Replicas: the one that holds the Lease runs the controller.
		// Released when the manager stops: run returns right after, so
		// that a standby takes over at once rather than after the lease
		// duration.
		mopts.LeaderElection = true
		mopts.LeaderElectionID = cfg.LeaderElectionID
		mopts.LeaderElectionNamespace = cfg.Namespace
		mopts.LeaderElectionReleaseOnCancel = true
		mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &cfg.LeaseDuration, &cfg.RenewDeadline, &cfg.RetryPeriod
	}
	if cfg.Shard != nil {
		// With -shards: the server sends this replica its shard only (or
		// it refuses, or filters on the client: -shard-filter); the
		// cache's list and watch ask for the shard and let only its
		// objects through. Each shard elects its own leader.
		if err := cfg.CheckShard(ctx, cluster); err != nil {
			return err
		}
		mopts.Cache.NewInformer = cfg.Shard.NewInformer
		if mopts.LeaderElection {
			mopts.LeaderElectionID = fmt.Sprintf("%s-shard-%d-of-%d", mopts.LeaderElectionID, cfg.ShardIndex, cfg.Shards)
		}
	}
	if cluster.Embedded() {
		// The manager's cache (For's informer) lists and watches the
		// embedded API server through cs, and its REST mapper is static:
		// the server serves no discovery.
		mopts = fakecluster.ManagerOptions(cs, mopts)
	}
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	// For() enqueues with no trace context: the link source finds each
	// attempt's writer in the object's annotation, in the manager's cache.
	// WithClientTime: the attempts' time in the manager's instrumented
	// client, for the summary's split. WithChangeDuration: the SLI of the
	// rules' burn-rate alerts.
	qopts := []otelqueue.Option{
		otelqueue.WithLinkSource(controllerruntime.ObjectLinkSource(mgr.GetCache(), &corev1.ConfigMap{})),
		otelqueue.WithClientTime(),
		otelqueue.WithChangeDuration(),
		// The initial list and resyncs at low priority, real changes at 0.
		otelqueue.WithWaitByPriority(),
		otelqueue.WithLateness(),
		// The workers, cores and memory for the pod (Meter's pod part,
		// the inspector), with the memory per object of the manager's
		// ConfigMap cache.
		otelqueue.WithSizer(sizer),
	}
	cached := controllerruntime.Cache(mgr.GetCache(), &corev1.ConfigMap{})
	sizer.Caches = []otelqueue.Cache{cached}
	workers := cfg.Workers
	if a := cfg.Adaptive; a.On() {
		// controller-runtime runs MAX goroutines (MaxConcurrentReconciles,
		// the pool's ceiling), of which the pool lets its count, starting
		// at -workers, take keys.
		qopts = append(qopts, otelqueue.AdaptiveWorkers{Min: a.Min, Max: a.Max, Start: cfg.Workers})
		workers = a.Max
	}
	otq := controllerruntime.New(qopts...) // the global providers set by setupTelemetry
	// Options sets NewQueue and reports MaxConcurrentReconciles as
	// workqueue_workers, the denominator of the utilization rules.
	// With leader election, the queue is standby until this replica
	// leads (Options passes mgr.Elected()); with -warmup its sources
	// fill it meanwhile.
	opts := otq.Options(mgr, controller.Options{MaxConcurrentReconciles: workers, EnableWarmup: &cfg.Warmup})
	if cfg.controllerRuntimeQueue {
		opts.NewQueue = nil
	}
	if cfg.skipNameValidation {
		opts.SkipNameValidation = &cfg.skipNameValidation
	}
	rec := &reconciler{client: cs, reader: mgr.GetCache(), latency: cfg.Latency, cpu: cfg.ReconcileCPU, tracer: tracer}
	err = builder.ControllerManagedBy(mgr).
		Named(controllerName).
		// The shard's objects only (the embedded cluster's informers,
		// fakecluster's, do not filter).
		For(&corev1.ConfigMap{}, builder.WithPredicates(dataChanged(), predicate.NewPredicateFuncs(func(o client.Object) bool { return cfg.Shard.Contains(o) }))).
		WithOptions(opts).
		Complete(otq.Reconciler(rec))
	if err != nil {
		return fmt.Errorf("building the controller: %w", err)
	}

	// The informer cache's size, otelqueue.cache.objects: what the Sizer
	// counts.
	objects := func() int { return len(cached.List()) }
	defer examplecluster.InstrumentProcess(objects)()

	var wg sync.WaitGroup
	defer wg.Wait()
	if cfg.Generate {
		wg.Go(func() { w.Run(ctx) })
	} else {
		w = nil
	}
	if cfg.SummaryEvery > 0 {
		client := func() otelqueue.ClientStats {
			if q := otq.Queue(); q != nil { // built when the controller starts
				return q.Instrumentation().ClientStats()
			}
			return otelqueue.ClientStats{}
		}
		standby := func() bool {
			q := otq.Queue()
			return q != nil && q.Instrumentation().Standby()
		}
		m := &examplecluster.Meter{Shard: cfg.Shard, Workers: cfg.Workers, Busy: rec.busy.Load, Workload: w, Limiter: cluster.Limiter, Client: client, Errors: rec.failed.Load, Standby: standby, Sizer: sizer}
		if cfg.Adaptive.On() {
			m.Range = cfg.Adaptive
			m.Adaptive = func() (inspect.Pool, bool) {
				if q := otq.Queue(); q != nil {
					return q.Instrumentation().AdaptiveStats()
				}
				return inspect.Pool{}, false
			}
		}
		var elected <-chan struct{}
		if cfg.LeaderElect {
			elected = mgr.Elected()
		}
		wg.Go(func() { summarize(ctx, cfg.SummaryEvery, otq, m, elected) })
	}
	log.Printf("controller %q watching ConfigMaps in %s of the %s with %s", controllerName, cfg.Namespace, cluster.Where, cfg.WorkersText())
	if cfg.LeaderElect {
		log.Printf("leader election: Lease %s/%s (lease %v, renew deadline %v, retry %v), warm-up %t", cfg.Namespace, cfg.LeaderElectionID, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod, cfg.Warmup)
		wg.Go(func() {
			select {
			case <-mgr.Elected():
				log.Printf("leading: this replica holds the Lease %s/%s", cfg.Namespace, cfg.LeaderElectionID)
			case <-ctx.Done():
			}
		})
	}
	// The Sizer reads every interval while the manager runs, on every
	// replica (it is a Runnable that needs no leader election).
	if err := mgr.Add(sizer); err != nil {
		return fmt.Errorf("adding the Sizer to the manager: %w", err)
	}
	err = mgr.Start(ctx)
	if n := rec.interrupted.Load(); n > 0 {
		log.Printf("%d reconciles interrupted by the stop: returned for later, not counted as errors", n)
	}
	return err
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
	cpu     time.Duration // -reconcile-cpu
	tracer  trace.Tracer
	busy    examplecluster.Busy // time in Reconcile, for the utilization

	interrupted atomic.Int64 // reconciles whose ctx ended: see Reconcile
	// failed counts the reconciles that returned an error (errors/s in the
	// summary line); controller-runtime logs each as "Reconciler error".
	failed atomic.Uint64
}

// Reconcile records the data version of the ConfigMap. A reconcile that the
// stop interrupts (its ctx ends) is no error: it returns the key for later
// without one, so that controller-runtime logs no "Reconciler error" and
// counts no error for it; the stopping queue drops the key, and the next
// start lists the object again. Returned as an error, each such
// cancellation would count in controller_runtime_reconcile_total{result="error"}
// and log a line, and controller-runtime's workers hand out keys with the
// cancelled ctx until the queue is shut down (TestStop...).
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, err error) {
	defer r.busy.Start()()
	defer func() {
		if err != nil {
			r.failed.Add(1)
		}
	}()
	if ctx.Err() != nil {
		return r.interrupt()
	}
	cm := &corev1.ConfigMap{}
	err = r.reader.Get(ctx, req.NamespacedName, cm)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	_, span := r.tracer.Start(ctx, "work")
	if cm.Annotations[observedAnnotation] != cm.Data[versionKey] {
		examplecluster.BurnCPU(ctx, r.cpu) // -reconcile-cpu: for a change, not for an object up to date
	}
	select {
	case <-time.After(r.latency):
	case <-ctx.Done():
	}
	span.End()
	if ctx.Err() != nil {
		return r.interrupt()
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
	if err != nil && ctx.Err() != nil {
		return r.interrupt() // e.g. waiting for the client's rate limiter
	}
	return reconcile.Result{}, client.IgnoreNotFound(err) // a conflict is retried
}

// interrupt counts a reconcile cut short by the stop and asks for the key
// again, without an error.
func (r *reconciler) interrupt() (reconcile.Result, error) {
	r.interrupted.Add(1)
	return reconcile.Result{RequeueAfter: time.Second}, nil
}
