package controllerruntime_test

// These tests run a real controller-runtime manager whose events come from a
// source.Channel, with the metrics and health servers off. By default the
// manager is on the fake cluster, whose rest.Config points at a closed port,
// so nothing ever dials out; the TestAPIServer variants put it on a real
// API server (startOnCluster).

import (
	"context"
	"errors"
	"github.com/otelqueue/otelqueue/inspect"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/traceparent"
)

// logLines keeps what the manager's logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	l.lines = append(l.lines, prefix+" "+args)
	l.mu.Unlock()
}

func (l *logLines) find(substr ...string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, s := range substr {
			all = all && strings.Contains(line, s)
		}
		if all {
			return line, true
		}
	}
	return "", false
}

// running is a started manager with one controller fed by a channel.
type running struct {
	events chan event.GenericEvent
	logs   *logLines
	otq    *controllerruntime.Controller[reconcile.Request]
}

// startConfig is what startOptions change in startController.
type startConfig struct {
	// cluster is where the manager runs; by default a new fake cluster.
	cluster *cluster
	// controller is the manager's default controller configuration.
	controller config.Controller
	// options returns the controller's Options; by default NewQueue set to
	// the Controller's, and SkipNameValidation.
	options func(mgr manager.Manager, otq *controllerruntime.Controller[reconcile.Request]) controller.Options
	// queueOptions are added to the Controller's otelqueue options.
	queueOptions []otelqueue.Option
}

type startOption func(*startConfig)

// startOnCluster runs startController's manager on c.
func startOnCluster(c *cluster) startOption {
	return func(sc *startConfig) { sc.cluster = c }
}

// startController starts a manager (on the fake cluster unless an option
// says otherwise) with one controller named name, built by builder.ControllerManagedBy with the Controller's
// NewQueue and wrapped reconciler, watching a channel through
// EnqueueRequestForObject. The manager stops when the test ends.
func startController(t *testing.T, tel *telemetry, name string, r reconcile.Reconciler, opts ...startOption) *running {
	t.Helper()
	sc := startConfig{options: func(_ manager.Manager, otq *controllerruntime.Controller[reconcile.Request]) controller.Options {
		return controller.Options{NewQueue: otq.NewQueue, SkipNameValidation: ptr.To(true)}
	}}
	for _, o := range opts {
		o(&sc)
	}
	if sc.cluster == nil {
		sc.cluster = fakeCluster(t)
	}
	run := &running{events: make(chan event.GenericEvent), logs: new(logLines)}
	mgr := sc.cluster.newManager(t, manager.Options{
		LeaderElection: false,
		Logger:         funcr.New(run.logs.add, funcr.Options{}),
		Controller:     sc.controller,
	})
	qopts := append([]otelqueue.Option{otelqueue.WithTracerProvider(tel.tp), otelqueue.WithMeterProvider(tel.mp)}, sc.queueOptions...)
	if os.Getenv("OTELQUEUE_TEST_ADAPTIVE") != "" && len(sc.queueOptions) == 0 {
		// make test runs the package once so: an adaptive pool that never
		// decides (its interval is a day), whose limit is the ceiling,
		// MaxConcurrentReconciles, gates controller-runtime's goroutines.
		qopts = append(qopts, otelqueue.AdaptiveWorkers{Min: 1, Max: 1 << 10, Start: 1 << 10, Interval: 24 * time.Hour})
	}
	run.otq = controllerruntime.New(qopts...)
	handler := controllerruntime.EnqueueRequestForObject(traceparent.WithMeterProvider(tel.mp))
	err := builder.ControllerManagedBy(mgr).
		Named(name).
		WithOptions(sc.options(mgr, run.otq)).
		WatchesRawSource(source.Channel(run.events, handler)).
		Complete(run.otq.Reconciler(r))
	if err != nil {
		t.Fatalf("builder: %v", err)
	}
	startManager(t, mgr)
	return run
}

func (run *running) send(t *testing.T, obj *corev1.ConfigMap) {
	t.Helper()
	select {
	case run.events <- event.GenericEvent{Object: obj}:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out sending the event: the source did not start")
	}
}

// writeConfigMap stands for a client that writes a ConfigMap in its own
// trace: it returns the object, annotated with the writer span's
// traceparent, and that span's context.
func writeConfigMap(t *testing.T, tel *telemetry, name string) (*corev1.ConfigMap, trace.SpanContext) {
	t.Helper()
	ctx, span := tel.tp.Tracer("test/writer").Start(context.Background(), "write configmap")
	defer span.End()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if !traceparent.Inject(ctx, cm) {
		t.Fatal("traceparent.Inject wrote nothing")
	}
	return cm, span.SpanContext()
}

func childrenOf(spans []sdktrace.ReadOnlySpan, parent trace.SpanContext) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Parent().TraceID() == parent.TraceID() && s.Parent().SpanID() == parent.SpanID() {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestManagerTrace follows one event through a real manager: the reconcile
// trace, its link to the object's writer, the reconciler's ctx, the
// exemplar, and the metric names in both Prometheus registries.
func TestManagerTrace(t *testing.T) { testManagerTrace(t, fakeCluster(t)) }

// TestAPIServerManagerTrace is TestManagerTrace with the manager on a real
// API server, and the event's object as that server stored it.
func TestAPIServerManagerTrace(t *testing.T) { testManagerTrace(t, apiServerCluster(t)) }

func testManagerTrace(t *testing.T, c *cluster) {
	testutil.NoOTelErrors(t)
	tel, reg := newPromTelemetry(t)
	name := c.controllerName("configmaps")

	type seen struct {
		req         reconcile.Request
		cancellable bool
	}
	done := make(chan seen, 1)
	run := startController(t, tel, name, reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		_, span := tel.tp.Tracer("test/reconciler").Start(ctx, "update status")
		span.End()
		logf.FromContext(ctx).Info("reconciled by the test")
		done <- seen{req: req, cancellable: ctx.Done() != nil}
		return reconcile.Result{}, nil
	}), startOnCluster(c))

	cm, writer := writeConfigMap(t, tel, "settings")
	cm.Namespace = c.namespace
	cm, err := c.cs.CoreV1().ConfigMaps(c.namespace).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run.send(t, cm)
	got := testutil.Receive(t, done, "the reconcile")
	if got.req.String() != c.key("settings") {
		t.Errorf("reconciled %v, want %s", got.req, c.key("settings"))
	}
	if !got.cancellable {
		t.Error("the reconciler's ctx lost the controller's cancellation")
	}
	if line, ok := run.logs.find("reconciled by the test"); !ok {
		t.Error("the reconciler's log line is missing")
	} else if !strings.Contains(line, "reconcileID") || !strings.Contains(line, `"controller"="`+name+`"`) {
		t.Errorf("the reconciler's logger lost controller-runtime's values: %s", line)
	}
	// Done ends the attempt's spans before it records the work duration
	// (otelqueue's observer): wait for the record, the last of them.
	testutil.WaitFor(t, "the attempt's work duration", func() bool {
		metrics, _, _ := testutil.ScopeMetrics(tel.collect(t), semconv.ScopeOtelqueue)
		for _, m := range metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == semconv.MetricWorkDuration {
				return len(h.DataPoints) == 1 && h.DataPoints[0].Count == 1
			}
		}
		return false
	})
	if n := len(testutil.SpansNamed(tel.sr.Ended(), "process "+name)); n != 1 {
		t.Fatalf("%d ended root spans after the work duration was recorded, want 1", n)
	}

	spans := tel.sr.Ended()
	root := testutil.OneSpan(t, spans, "process "+name)
	if root.Parent().IsValid() {
		t.Errorf("root span has parent %v, want a new root", root.Parent())
	}
	var linked bool
	for _, l := range root.Links() {
		if l.SpanContext.TraceID() == writer.TraceID() && l.SpanContext.SpanID() == writer.SpanID() {
			linked = true
		}
	}
	if !linked {
		t.Errorf("root span links %v, want one to the writer %v", root.Links(), writer)
	}
	if got := attr(root, string(semconv.AttrKey)); got != c.key("settings") {
		t.Errorf("root span key = %q, want %s", got, c.key("settings"))
	}

	children := childrenOf(spans, root.SpanContext())
	names := testutil.SpanNames(children)
	slices.Sort(names)
	if !slices.Equal(names, []string{semconv.SpanQueued, semconv.SpanReconcile}) {
		t.Fatalf("root's children = %q, want queued and reconcile", names)
	}
	rec := testutil.OneSpan(t, spans, semconv.SpanReconcile)
	user := testutil.OneSpan(t, spans, "update status")
	if user.Parent().SpanID() != rec.SpanContext().SpanID() || user.SpanContext().TraceID() != root.SpanContext().TraceID() {
		t.Errorf("the reconciler's span has parent %v, want the reconcile span %v", user.Parent(), rec.SpanContext())
	}
	if got := attr(rec, string(semconv.AttrResult)); got != otelqueue.OutcomeSuccess.String() {
		t.Errorf("reconcile result = %q, want success", got)
	}
	if st := rec.Status(); st.Code == codes.Error {
		t.Errorf("reconcile status = %v, want not an error", st)
	}

	// The queue-wait histogram points, through its exemplar, to this trace.
	rm := tel.collect(t)
	h, ok := testutil.FindMetric(t, rm, semconv.ScopeOtelqueue, semconv.MetricQueueDuration).Data.(metricdata.Histogram[float64])
	if !ok || len(h.DataPoints) != 1 {
		t.Fatalf("queue duration: %+v", h)
	}
	var exemplar bool
	for _, ex := range h.DataPoints[0].Exemplars {
		tid := root.SpanContext().TraceID()
		if string(ex.TraceID) == string(tid[:]) {
			exemplar = true
		}
	}
	if !exemplar {
		t.Errorf("queue duration exemplars %+v, none in trace %v", h.DataPoints[0].Exemplars, root.SpanContext().TraceID())
	}

	// Through the OTel Prometheus exporter: controller-runtime's names and
	// labels.
	families := gather(t, reg)
	for _, want := range []string{
		"workqueue_depth", "workqueue_adds_total", "workqueue_retries_total",
		"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
		"workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
	} {
		mf, ok := families[want]
		if !ok {
			t.Errorf("OTel Prometheus bridge has no %s (has %v)", want, sortedKeys(families))
			continue
		}
		if !hasLabels(mf, map[string]string{"name": name, "controller": name}) {
			t.Errorf("%s has no series with name=%q controller=%q", want, name, name)
		}
	}
	if mf := families["workqueue_adds_total"]; mf != nil && len(mf.GetMetric()) == 1 {
		if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 1 {
			t.Errorf("workqueue_adds_total = %v, want 1", v)
		}
	}

	// controller-runtime's registry: its reconcile metrics, no workqueue_*
	// for this queue.
	crFamilies := gather(t, ctrlmetrics.Registry)
	if mf := crFamilies["controller_runtime_reconcile_total"]; !hasLabels(mf, map[string]string{"controller": name, "result": "success"}) {
		t.Errorf("controller-runtime's registry has no controller_runtime_reconcile_total{controller=%q,result=success}", name)
	}
	for fname, mf := range crFamilies {
		if strings.HasPrefix(fname, "workqueue_") && hasLabels(mf, map[string]string{"name": name}) {
			t.Errorf("controller-runtime's registry has %s{name=%q}: counted twice", fname, name)
		}
	}
}

// TestManagerRetryLinksPreviousAttempt: an error makes controller-runtime
// requeue the request rate-limited; the failed attempt's reconcile span has
// the error, and the retry's trace links to it.
func TestManagerRetryLinksPreviousAttempt(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	const name = "retries"
	var calls int
	var mu sync.Mutex
	done := make(chan struct{}, 2)
	run := startController(t, tel, name, reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		done <- struct{}{}
		if n == 1 {
			return reconcile.Result{}, errors.New("boom")
		}
		return reconcile.Result{}, nil
	}))
	cm, _ := writeConfigMap(t, tel, "flaky")
	run.send(t, cm)
	testutil.Receive(t, done, "the first reconcile")
	testutil.Receive(t, done, "the retry")
	testutil.WaitFor(t, "both attempts' root spans", func() bool {
		return len(testutil.SpansNamed(tel.sr.Ended(), "process "+name)) == 2
	})
	spans := tel.sr.Ended()
	roots := testutil.SpansNamed(spans, "process "+name)
	first, second := roots[0], roots[1]
	if attr(first, string(semconv.AttrAttempt)) != "1" || attr(second, string(semconv.AttrAttempt)) != "2" {
		t.Errorf("attempts = %s, %s; want 1, 2", attr(first, string(semconv.AttrAttempt)), attr(second, string(semconv.AttrAttempt)))
	}
	recs := testutil.SpansNamed(spans, semconv.SpanReconcile)
	var failed sdktrace.ReadOnlySpan
	for _, s := range recs {
		if s.SpanContext().TraceID() == first.SpanContext().TraceID() {
			failed = s
		}
	}
	if failed == nil {
		t.Fatal("no reconcile span in the first attempt's trace")
	}
	if failed.Status().Code != codes.Error || attr(failed, string(semconv.AttrResult)) != otelqueue.OutcomeError.String() {
		t.Errorf("failed reconcile: status %v, result %q; want error, error", failed.Status(), attr(failed, string(semconv.AttrResult)))
	}
	var linked bool
	for _, l := range second.Links() {
		if l.SpanContext.TraceID() == failed.SpanContext().TraceID() && l.SpanContext.SpanID() == failed.SpanContext().SpanID() {
			linked = true
		}
	}
	if !linked {
		t.Errorf("retry links %v, want one to the failed reconcile span %v", second.Links(), failed.SpanContext())
	}
	// The inspector lists the failure, with its error and its trace.
	failures := inspectedFailures(t, name)
	if len(failures) != 1 || failures[0].Key != "default/flaky" || failures[0].Error != "boom" ||
		failures[0].Outcome != "error" || failures[0].TraceID != failed.SpanContext().TraceID().String() {
		t.Errorf("the inspector's failures: %+v, want default/flaky's boom in trace %s", failures, failed.SpanContext().TraceID())
	}
}

// inspectedFailures returns the failures an Inspector shows for the queue
// named name.
func inspectedFailures(t *testing.T, name string) []inspect.Failure {
	t.Helper()
	for _, q := range (&otelqueue.Inspector{}).Page().Queues {
		if q.Name == name {
			return q.Failures
		}
	}
	t.Fatalf("the queue %q is not on the inspector's page", name)
	return nil
}

// TestManagerPanic: a panic in the reconciler is recorded on the reconcile
// span and still handled by controller-runtime (recovered and retried).
func TestManagerPanic(t *testing.T) {
	testutil.NoOTelErrors(t)
	tel := newTelemetry(t)
	const name = "panics"
	var once sync.Once
	done := make(chan struct{}, 1)
	run := startController(t, tel, name, reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		once.Do(func() { panic("kaboom") })
		done <- struct{}{}
		return reconcile.Result{}, nil
	}))
	cm, _ := writeConfigMap(t, tel, "fragile")
	run.send(t, cm)
	testutil.Receive(t, done, "the reconcile after the panic")
	testutil.WaitFor(t, "both attempts' root spans", func() bool {
		return len(testutil.SpansNamed(tel.sr.Ended(), "process "+name)) == 2
	})
	var results []string
	for _, s := range testutil.SpansNamed(tel.sr.Ended(), semconv.SpanReconcile) {
		results = append(results, attr(s, string(semconv.AttrResult)))
		if attr(s, string(semconv.AttrResult)) == otelqueue.OutcomePanic.String() && s.Status().Code != codes.Error {
			t.Errorf("panicked reconcile status = %v, want error", s.Status())
		}
	}
	if !slices.Equal(results, []string{otelqueue.OutcomePanic.String(), otelqueue.OutcomeSuccess.String()}) {
		t.Errorf("reconcile results = %q, want panic, success", results)
	}
	if f := inspectedFailures(t, name); len(f) != 1 || f[0].Outcome != "panic" || !strings.Contains(f[0].Error, "kaboom") {
		t.Errorf("the inspector's failures: %+v, want the panic", f)
	}
}

func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func sortedKeys(m map[string]*dto.MetricFamily) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// hasLabels reports whether mf has a series with all the labels given.
func hasLabels(mf *dto.MetricFamily, want map[string]string) bool {
	return series(mf, want) != nil
}

// series returns the first series of mf with all the labels given, or nil.
func series(mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && got[k] == v
		}
		if ok {
			return m
		}
	}
	return nil
}
