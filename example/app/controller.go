package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
	"github.com/otelqueue/otelqueue/example/internal/exampletelemetry"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

const (
	queueName = "configmaps"
	// observedAnnotation records the data version the controller last
	// reconciled; writing it is the controller's "status update".
	observedAnnotation = "example.otelqueue.io/observed-version"
	versionKey         = examplecluster.VersionKey
)

var tracer = otel.Tracer("github.com/otelqueue/otelqueue/example/app")

// controller reconciles ConfigMaps: it records the data version it saw in an
// annotation, after a simulated amount of work that can fail.
type controller struct {
	cfg    config
	client kubernetes.Interface
	lister listersv1.ConfigMapLister
	queue  *scheduler.Scheduler[string]
	tp     *traceparent.Reader

	interrupted atomic.Int64 // reconciles cut short by the stop

	mu  sync.Mutex
	rng *rand.Rand
}

// runController runs the informers, the workers, the workload and the
// summary until ctx is done, then stops them in order: no new events, work
// in flight drained, the queue shut down.
func runController(ctx context.Context, cfg config, tel *exampletelemetry.Telemetry, sizer *otelqueue.Sizer) error {
	// The embedded cluster runs until the controller has stopped (the
	// reconciles drained at the stop still write): closed below, not by ctx.
	cluster, err := examplecluster.Connect(context.Background(), cfg.Flags)
	if err != nil {
		return err
	}
	defer cluster.Close()
	client, where := cluster.Client, cluster.Where
	var w *examplecluster.Workload
	if cfg.Generate {
		// Before the informers start: the objects are their initial list.
		// Created as already reconciled, as a restarted controller finds most
		// objects: the initial list costs no simulated work, so that the
		// depth shows the congestion the churn makes, not a backlog of
		// -objects.
		w = &examplecluster.Workload{Cluster: cluster, Namespace: cfg.Namespace, Objects: cfg.Objects,
			Churn: cfg.Churn, Schedule: cfg.ChurnSchedule, BurstEvery: cfg.burstEvery, BurstSize: cfg.burstSize, Tracer: tracer,
			Annotations: map[string]string{observedAnnotation: "0"}}
		if err := w.Seed(ctx); err != nil {
			return examplecluster.StopError(ctx, err)
		}
	}
	// With -shards: the server sends this replica its shard only (or it
	// refuses, or filters on the client: -shard-filter).
	if err := cfg.CheckShard(ctx, cluster); err != nil {
		return err
	}
	queue := scheduler.New(scheduler.Config[string]{Name: queueName})
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(cfg.Shard.TweakListOptions))
	inf := factory.Core().V1().ConfigMaps()
	// The Sizer counts the memory per object of the informer's cache.
	sizer.Caches = []otelqueue.Cache{inf.Informer().GetStore()}
	// WithClientTime: the attempts' time in the instrumented clientset
	// (limiter, requests, Retry-After) for the summary's split.
	// WithChangeDuration: how long after each change the controller had
	// acted on it (workqueue_change_duration_seconds, the SLI of the
	// rules' burn-rate alerts).
	// WithSizer: the workers, cores and memory for the pod, in the
	// summary line and on the inspector's page.
	inst, err := otelqueue.Instrument(queue, otelqueue.WithClientTime(), otelqueue.WithChangeDuration(), otelqueue.WithLateness(), otelqueue.WithSizer(sizer))
	if err != nil {
		return err
	}

	c := &controller{cfg: cfg, client: client, lister: inf.Lister(), queue: queue, tp: traceparent.NewReader(), rng: rand.New(rand.NewPCG(1, 2))}
	// The shard's objects only: all of them when the server filters, the
	// client's filter when it does not (-shard-filter client).
	if _, err := inf.Informer().AddEventHandler(cache.FilteringResourceEventHandler{FilterFunc: cfg.Shard.Contains, Handler: cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initialList bool) {
			trigger := scheduler.TriggerCreate
			if initialList {
				trigger = scheduler.TriggerInitialList
			}
			c.enqueue(obj, trigger)
		},
		UpdateFunc: func(old, obj any) { c.enqueueIfChanged(old, obj) },
	}}); err != nil {
		return fmt.Errorf("adding the event handler: %w", err)
	}

	objects := examplecluster.StoreSize(inf.Informer().GetStore())
	defer examplecluster.InstrumentProcess(objects)()

	// The Runner's "Reconciler error" lines go through failureLog, which
	// logs the first few deliberate failures and limits the lines itself;
	// its adaptive pool's "adaptive workers" lines too, which it passes on.
	ropts := []otelqueue.RunnerOption{otelqueue.WithLogger(slog.New(newFailureLog(slog.Default().Handler(), cfg))), otelqueue.WithLogRateLimit(1, 0)}
	if a := cfg.Adaptive; a.On() {
		// Starting at -workers; the Runner runs MAX goroutines.
		ropts = append(ropts, otelqueue.AdaptiveWorkers{Min: a.Min, Max: a.Max})
	}
	runner, err := otelqueue.NewRunner(queue, cfg.Workers, c.reconcile, ropts...)
	if err != nil {
		return err
	}

	infCtx, stopInformers := context.WithCancel(context.Background())
	defer stopInformers()
	factory.Start(infCtx.Done())
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	synced := factory.WaitForCacheSync(syncCtx.Done())
	cancelSync()
	for typ, ok := range synced {
		if !ok {
			queue.ShutDown()
			if ctx.Err() != nil {
				return fmt.Errorf("stopped before the %v informer synced with the %s", typ, where)
			}
			return fmt.Errorf("the %v informer did not sync with the %s within a minute (is it reachable, and may we list ConfigMaps in %q?)", typ, where, cfg.Namespace)
		}
	}

	log.Printf("controller %q running against the %s, namespace %q, %s", queueName, where, cfg.Namespace, cfg.WorkersText())
	if tel.MetricsURL != "" {
		log.Printf("metrics (Prometheus, with exemplars): %s", tel.MetricsURL)
		log.Printf("queue inspector: %s", tel.InspectorURL)
	}
	if len(tel.OTLP) > 0 {
		log.Printf("exporting %s", strings.Join(tel.OTLP, ", "))
	} else {
		log.Printf("no OTLP export (set OTEL_EXPORTER_OTLP_ENDPOINT to send traces and metrics to a collector)")
	}
	if len(tel.Console) > 0 {
		log.Printf("writing %s to stdout (console exporter)", strings.Join(tel.Console, " and "))
	}

	var wg sync.WaitGroup
	if w != nil {
		wg.Go(func() { w.Run(ctx) })
	}
	wg.Go(func() { _ = sizer.Start(ctx) })
	if cfg.SummaryEvery > 0 {
		busy := func(time.Time) (time.Duration, uint64) {
			rs := runner.Stats()
			return rs.Busy, rs.Reconciles()
		}
		failed := func() uint64 { return runner.Stats().Count(otelqueue.OutcomeError) }
		m := &examplecluster.Meter{Shard: cfg.Shard, Workers: cfg.Workers, Busy: busy, Workload: w, Limiter: cluster.Limiter, Client: inst.ClientStats, Errors: failed, Sizer: sizer}
		if cfg.Adaptive.On() {
			m.Adaptive, m.Range = runner.AdaptiveStats, cfg.Adaptive
		}
		// Read before the workers start: the first line holds the initial
		// list's reconciles, however soon they end.
		first := m.Read(queue.Stats())
		wg.Go(func() { summarize(ctx, cfg.SummaryEvery, queue, m, first) })
	}
	err = runner.Run(ctx) // returns after draining, with the queue shut down
	stopInformers()
	wg.Wait()
	cluster.Close()
	st, rs := queue.Stats(), runner.Stats()
	log.Printf("final: %d adds, %d retries, %d reconciles (%d ok, %d errors, %d panics, %d interrupted by the stop), %d keys left pending",
		st.Adds, st.Retries, rs.Reconciles(), rs.Count(otelqueue.OutcomeSuccess), rs.Count(otelqueue.OutcomeError), rs.Count(otelqueue.OutcomePanic), c.interrupted.Load(), st.Depth+st.Delayed+st.Held)
	return err
}

// enqueue adds the object's key with the trace context its writer left in
// the otelqueue.github.io/traceparent annotation, so that the attempt's trace
// links to the write that caused it, and the event's trigger and the
// informer's kind, the attempt's workqueue.trigger and
// workqueue.trigger.source.
func (c *controller) enqueue(obj any, trigger scheduler.Trigger) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		log.Printf("cannot key %T: %v", obj, err)
		return
	}
	ctx := context.Background()
	if o, ok := obj.(traceparent.Annotated); ok {
		ctx = c.tp.ContextWith(ctx, o)
	}
	c.queue.AddWithOptions(ctx, scheduler.AddOptions{Trigger: trigger, Source: "ConfigMap"}, key)
}

// enqueueIfChanged ignores updates that only carry the controller's own
// status annotation, so that reconciles do not trigger themselves.
func (c *controller) enqueueIfChanged(old, obj any) {
	o, ok1 := old.(*corev1.ConfigMap)
	n, ok2 := obj.(*corev1.ConfigMap)
	if ok1 && ok2 && maps.Equal(o.Data, n.Data) {
		return
	}
	c.enqueue(obj, scheduler.TriggerUpdate)
}

var errSimulated = errors.New("simulated failure (see -error-rate)")

// reconcile reads the ConfigMap, works for a simulated while, and records the
// version it saw.
func (c *controller) reconcile(ctx context.Context, key string) (otelqueue.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return otelqueue.Result{}, nil // a malformed key never heals
	}
	cm, err := c.lister.ConfigMaps(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return otelqueue.Result{}, nil // deleted: nothing to do
	}
	if err != nil {
		return otelqueue.Result{}, err
	}
	version := cm.Data[versionKey]
	if cm.Annotations[observedAnnotation] == version {
		return otelqueue.Result{}, nil // up to date (the initial list of a restart): nothing to do
	}

	latency, fail := c.draw()
	_, work := tracer.Start(ctx, "simulated work", trace.WithAttributes(attribute.Int64("work.latency_us", latency.Microseconds()),
		attribute.Int64("work.cpu_us", c.cfg.ReconcileCPU.Microseconds())))
	examplecluster.BurnCPU(ctx, c.cfg.ReconcileCPU)
	select {
	case <-time.After(latency):
	case <-ctx.Done():
		work.End()
		return c.interrupt()
	}
	work.End()
	if fail {
		return otelqueue.Result{}, errSimulated
	}

	upd := cm.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[observedAnnotation] = version
	if _, err := c.client.CoreV1().ConfigMaps(ns).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if ctx.Err() != nil {
			return c.interrupt() // e.g. waiting for the client's rate limiter
		}
		return otelqueue.Result{}, fmt.Errorf("recording the observed version of %s: %w", key, err)
	}
	return otelqueue.Result{}, nil
}

// interrupt counts a reconcile cut short by the stop (its ctx ended) and
// returns its key for later without an error: the stopping queue drops it
// and the next start lists the object again. Returned as an error, it would
// count in workqueue.reconcile.results{result="error"}, as
// controller-runtime counts it in controller_runtime_reconcile_total.
func (c *controller) interrupt() (otelqueue.Result, error) {
	c.interrupted.Add(1)
	return otelqueue.Result{RequeueAfter: time.Second}, nil
}

// draw picks a reconcile latency (log-normal around -latency) and whether
// this reconcile fails.
func (c *controller) draw() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := float64(c.cfg.Latency) * math.Exp(c.cfg.spread*c.rng.NormFloat64())
	return time.Duration(l), c.rng.Float64() < c.cfg.errorRate
}
