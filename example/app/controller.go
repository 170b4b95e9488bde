package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/otelqueue/otelqueue/internal/exampletelemetry"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

const (
	queueName = "configmaps"
	// observedAnnotation records the data version the controller last
	// reconciled; writing it is the controller's "status update".
	observedAnnotation = "example.otelqueue.io/observed-version"
	versionKey         = "version"
)

var tracer = otel.Tracer("github.com/otelqueue/otelqueue/example/app")

// controller reconciles ConfigMaps: it records the data version it saw in an
// annotation, after a simulated amount of work that can fail.
type controller struct {
	cfg    config
	client kubernetes.Interface
	lister listersv1.ConfigMapLister
	queue  *scheduler.Scheduler[string]
	tp     *otelqueue.TraceparentReader

	mu  sync.Mutex
	rng *rand.Rand
}

func newClient(cfg config) (kubernetes.Interface, string, error) {
	if cfg.kubeconfig == "" {
		return fake.NewClientset(), "embedded fake cluster", nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("-kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", fmt.Errorf("client for %s: %w", rc.Host, err)
	}
	return c, "cluster at " + rc.Host, nil
}

// runController runs the informers, the workers, the workload and the
// summary until ctx is done, then stops them in order: no new events, work
// in flight drained, the queue shut down.
func runController(ctx context.Context, cfg config, tel *exampletelemetry.Telemetry) error {
	client, where, err := newClient(cfg)
	if err != nil {
		return err
	}
	queue := scheduler.New(scheduler.Config[string]{Name: queueName})
	if _, err := otelqueue.Instrument(queue); err != nil {
		return err
	}

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.namespace))
	inf := factory.Core().V1().ConfigMaps()
	c := &controller{cfg: cfg, client: client, lister: inf.Lister(), queue: queue, tp: otelqueue.NewTraceparentReader(), rng: rand.New(rand.NewPCG(1, 2))}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj) },
		UpdateFunc: func(old, obj any) { c.enqueueIfChanged(old, obj) },
	}); err != nil {
		return fmt.Errorf("adding the event handler: %w", err)
	}

	runner, err := otelqueue.NewRunner(queue, cfg.workers, c.reconcile)
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
			return fmt.Errorf("the %v informer did not sync with the %s within a minute (is it reachable, and may we list ConfigMaps in %q?)", typ, where, cfg.namespace)
		}
	}

	log.Printf("controller %q running against the %s, namespace %q, %d workers", queueName, where, cfg.namespace, cfg.workers)
	if tel.MetricsURL != "" {
		log.Printf("metrics (Prometheus, with exemplars): %s", tel.MetricsURL)
	}
	if len(tel.OTLP) > 0 {
		log.Printf("exporting %s", strings.Join(tel.OTLP, ", "))
	} else {
		log.Printf("no OTLP export (set OTEL_EXPORTER_OTLP_ENDPOINT to send traces and metrics to a collector)")
	}

	var wg sync.WaitGroup
	if cfg.generate {
		w := &workload{cfg: cfg, client: client}
		if err := w.seed(ctx); err != nil {
			queue.ShutDown()
			return err
		}
		wg.Go(func() { w.run(ctx) })
	}
	if cfg.summaryEvery > 0 {
		wg.Go(func() { summarize(ctx, cfg.summaryEvery, queue, runner) })
	}
	err = runner.Run(ctx) // returns after draining, with the queue shut down
	stopInformers()
	wg.Wait()
	st, rs := queue.Stats(), runner.Stats()
	log.Printf("final: %d adds, %d retries, %d reconciles (%d ok, %d errors, %d panics), %d keys left pending",
		st.Adds, st.Retries, rs.Success+rs.Error+rs.Requeue+rs.RequeueAfter+rs.Panic, rs.Success, rs.Error, rs.Panic, st.Depth+st.Delayed+st.Held)
	return err
}

// enqueue adds the object's key with the trace context its writer left in
// the tracing.k8s.io/traceparent annotation, so that the attempt's trace
// links to the write that caused it.
func (c *controller) enqueue(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		log.Printf("cannot key %T: %v", obj, err)
		return
	}
	ctx := context.Background()
	if o, ok := obj.(otelqueue.Annotated); ok {
		ctx = c.tp.ContextWith(ctx, o)
	}
	c.queue.AddContext(ctx, key)
}

// enqueueIfChanged ignores updates that only carry the controller's own
// status annotation, so that reconciles do not trigger themselves.
func (c *controller) enqueueIfChanged(old, obj any) {
	o, ok1 := old.(*corev1.ConfigMap)
	n, ok2 := obj.(*corev1.ConfigMap)
	if ok1 && ok2 && maps.Equal(o.Data, n.Data) {
		return
	}
	c.enqueue(obj)
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

	latency, fail := c.draw()
	_, work := tracer.Start(ctx, "simulated work", trace.WithAttributes(attribute.Int64("work.latency_us", latency.Microseconds())))
	select {
	case <-time.After(latency):
	case <-ctx.Done():
		work.End()
		return otelqueue.Result{}, ctx.Err()
	}
	work.End()
	if fail {
		return otelqueue.Result{}, errSimulated
	}

	version := cm.Data[versionKey]
	if cm.Annotations[observedAnnotation] == version {
		return otelqueue.Result{}, nil
	}
	upd := cm.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[observedAnnotation] = version
	if _, err := c.client.CoreV1().ConfigMaps(ns).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return otelqueue.Result{}, fmt.Errorf("recording the observed version of %s: %w", key, err)
	}
	return otelqueue.Result{}, nil
}

// draw picks a reconcile latency (log-normal around -latency) and whether
// this reconcile fails.
func (c *controller) draw() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := float64(c.cfg.latency) * math.Exp(c.cfg.spread*c.rng.NormFloat64())
	return time.Duration(l), c.rng.Float64() < c.cfg.errorRate
}

// workload writes ConfigMaps at the configured churn rate, with bursts.
type workload struct {
	cfg    config
	client kubernetes.Interface
	n      int
}

func (w *workload) name(i int) string { return fmt.Sprintf("demo-%04d", i) }

// seed creates the namespace's ConfigMaps (those that already exist are kept).
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
	rng := rand.New(rand.NewPCG(3, 4))
	var tick <-chan time.Time
	if w.cfg.churn > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / w.cfg.churn))
		defer t.Stop()
		tick = t.C
	}
	var burst <-chan time.Time
	if w.cfg.burstEvery > 0 && w.cfg.burstSize > 0 {
		t := time.NewTicker(w.cfg.burstEvery)
		defer t.Stop()
		burst = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			w.update(ctx, rng.IntN(w.cfg.objects))
		case <-burst:
			for range w.cfg.burstSize {
				w.update(ctx, rng.IntN(w.cfg.objects))
			}
		}
	}
}

// update bumps one ConfigMap's version, inside a span for the write.
func (w *workload) update(ctx context.Context, i int) {
	ctx, span := tracer.Start(ctx, "workload update", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	cms := w.client.CoreV1().ConfigMaps(w.cfg.namespace)
	cm, err := cms.Get(ctx, w.name(i), metav1.GetOptions{})
	if err != nil {
		if ctx.Err() == nil {
			log.Printf("workload: %v", err)
		}
		return
	}
	w.n++
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[versionKey] = strconv.Itoa(w.n)
	otelqueue.InjectTraceparent(ctx, cm) // the reconcile this write causes links here
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
		log.Printf("workload: %v", err)
	}
}
