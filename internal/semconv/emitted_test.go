// This file is an external test (package semconv_test), not package
// semconv: the packages it runs (otelqueue, kubeclient, procstat,
// traceparent) import package semconv for their names, and a test of
// package semconv itself may not import them (go: import cycle not
// allowed in test). So it reads semconv/registry.yaml with a small reader
// of its own, of the fields it checks, rather than with registry_test.go's
// loadRegistry, whose shape checks TestGenerated runs.

package semconv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv/registry"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/procstatfs"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/procstat"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/shard"
	"github.com/otelqueue/otelqueue/traceparent"
)

// notEmitted lists, by registry id, the metrics and spans of the registry
// this test cannot make on any machine, with why. Everything else must be
// emitted at least once by the run below.
//
// None today: the CPU quota metrics (otelqueue.cpu.limit, periods,
// throttled_periods, throttled_time), which need a cgroup CPU quota, are
// read from a fake cgroup v2 file system (internal/procstatfs), and
// otelqueue.cpu.run_delay from a fake schedstat in it.
var notEmitted = map[string]string{}

// attrsNotEmitted lists, as "<registry id of a metric, span or event>
// <attribute>", the attributes a group references that this test cannot
// make appear on it, with why.
var attrsNotEmitted = map[string]string{}

// TestEmittedNamesAreInTheRegistry runs everything that emits telemetry in
// otelqueue's packages, on the real OpenTelemetry SDK, and checks what it
// emitted against semconv/registry.yaml, both ways: every metric (name,
// instrument kind, unit, value type, description, buckets, attributes),
// span (name, kind, attributes, events, links' attributes) and span event
// of the packages' scopes is in the registry as emitted, and every metric,
// span and event of the registry, with each attribute it references, was
// emitted (but for notEmitted and attrsNotEmitted).
func TestEmittedNamesAreInTheRegistry(t *testing.T) {
	begin := time.Now()
	reg, err := registry.Load(registry.Path)
	if err != nil {
		t.Fatal(err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(recorder))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Errorf("MeterProvider.Shutdown: %v", err)
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Errorf("TracerProvider.Shutdown: %v", err)
		}
	})

	var collections []metricdata.ResourceMetrics
	emitEverything(t, mp, tp, func() { collections = append(collections, testutil.Collect(t, reader)) })
	if t.Failed() {
		return // the run went wrong: what it emitted says nothing
	}

	c := newRegistryCheck(t, reg)
	for _, rm := range collections {
		c.metrics(rm)
	}
	c.spans(recorder.Ended())
	c.everyNameEmitted()
	t.Logf("%d collections, %d spans checked in %v", len(collections), len(recorder.Ended()), time.Since(begin))
}

// emitEverything runs every instrumented package once, calling collect at
// the moments the observable instruments report the most: while the
// Runners run (workqueue.workers, the adaptive pool's changes), with a
// watch open, while a queue is standby; and once every Runner has returned
// (every record made). Everything it starts is stopped when it returns.
func emitEverything(t *testing.T, mp *sdkmetric.MeterProvider, tp *sdktrace.TracerProvider, collect func()) {
	t.Helper()
	ctx := context.Background()
	discard := slog.New(slog.DiscardHandler)

	// procstat, on a fake cgroup v2 with a quota of half a core, so that
	// the quota and throttling metrics are reported on any machine, and a
	// thread's schedstat, for the run delay.
	pinst, err := procstat.Instrument(procstat.WithMeterProvider(mp),
		procstat.WithCachedObjects(func() int64 { return 42 }), fakeCgroup())
	if err != nil {
		t.Fatal(err)
	}
	defer stop(t, "procstat", pinst.Stop)

	// shard: a replica's shard.
	sh, err := shard.New(1, 3, "uid")
	if err != nil {
		t.Fatal(err)
	}
	shreg, err := sh.Instrument(mp)
	if err != nil {
		t.Fatal(err)
	}
	defer stop(t, "shard", shreg.Unregister)

	// traceparent: an object whose annotation is no trace context.
	const annotation = "example.com/traceparent"
	tpReader := traceparent.NewReader(traceparent.WithMeterProvider(mp), traceparent.WithAnnotations(annotation))
	obj := &metav1.ObjectMeta{Name: "cm", Namespace: "demo", Annotations: map[string]string{annotation: "00-not-a-trace-context"}}
	if sc := tpReader.SpanContext(obj); sc.IsValid() || tpReader.Invalid() != 1 {
		t.Fatalf("an invalid traceparent annotation read as %v, %d invalid; want no context, 1 invalid", sc, tpReader.Invalid())
	}

	// otelqueue's MetricsProvider, on a plain client-go queue.
	cq := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "client-go", MetricsProvider: otelqueue.NewMetricsProvider(
			otelqueue.WithMeterProvider(mp), otelqueue.WithControllerName("client-go-controller"))})
	defer cq.ShutDown()
	cq.Add("a")
	k, _ := cq.Get()
	cq.Done(k)

	// kubeclient: a client of a loopback API server, whose rate limiter
	// holds every request 2 ms (a wait that makes a span).
	api := newFakeAPIServer()
	defer api.Close()
	cfg, err := kubeclient.Instrument(&rest.Config{Host: api.URL, RateLimiter: slowLimiter{flowcontrol.NewFakeAlwaysRateLimiter()}},
		kubeclient.WithMeterProvider(mp), kubeclient.WithTracerProvider(tp), kubeclient.WithPropagators(propagation.TraceContext{}))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A watch that asks for bookmarks, as an informer's, outside any
	// reconcile.
	w, err := cs.CoreV1().ConfigMaps("demo").Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := testutil.Receive(t, w.ResultChan(), "the watch's first event"); ev.Type != watch.Added {
		t.Fatalf("the watch's first event: %+v, want ADDED", ev)
	}

	// otelqueue: a queue with every option (a link source among them),
	// standby at first, whose Runner's reconciles end in every outcome and
	// use the client; and a queue whose Runner has an adaptive pool.
	q, inst, elected := newEmittedQueue(t, mp, tp)
	defer q.ShutDown()
	defer stop(t, "the instrumentation of queue "+q.Name(), inst.Stop)
	aq, ainst := newAdaptiveQueue(t, mp, tp)
	defer aq.ShutDown()
	defer stop(t, "the instrumentation of queue "+aq.Name(), ainst.Stop)

	keys := addEmittedKeys(q)
	collect() // standby, keys waiting
	q.clock.Step(time.Second)
	close(elected)
	if inst.Standby() {
		t.Fatal("the queue is still standby after its channel was closed")
	}

	r := newEmittedRunner(t, q, cs, discard)
	runCtx, cancel := context.WithCancel(ctx)
	runs := make(chan error, 2)
	var running int
	defer func() {
		cancel()
		for range running {
			if err := testutil.Receive(t, runs, "a Runner's Run to return"); err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}()
	running++
	go func() { runs <- r.Run(runCtx) }()
	ar := newAdaptiveRunner(t, aq, discard)
	running++
	go func() { runs <- ar.run.Run(runCtx) }()

	q.settle(t)
	for _, k := range keys {
		if !r.succeeded(k) {
			t.Errorf("key %q of queue %s never reconciled successfully", k, q.Name())
		}
	}
	ar.changeWorkers(t)
	collect() // the Runners running, the watch open

	// Every Run returned: every attempt's spans ended and its records made.
	cancel()
	for ; running > 0; running-- {
		if err := testutil.Receive(t, runs, "a Runner's Run to return"); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	w.Stop()
	testutil.WaitFor(t, "the watch to end", func() bool { return kubeclient.ReadWatchStats(mp).Open == 0 })
	collect()
}

// stop calls a Stop method, reporting its error.
func stop(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Errorf("stopping %s: %v", what, err)
	}
}

// fakeCgroup makes procstat read a cgroup v2 with a quota of half a core,
// 90 of its 120 periods throttled for 4.5 s in all, and one thread that
// waited 2 µs on a run queue.
func fakeCgroup() procstat.Option {
	fsys := fstest.MapFS{
		"proc/self/cgroup":           {Data: []byte("0::/app\n")},
		"proc/self/mountinfo":        {Data: []byte("30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n")},
		"proc/self/task/1/schedstat": {Data: []byte("1000 2000 3\n")},
		"sys/fs/cgroup/app/cpu.max":  {Data: []byte("50000 100000\n")},
		"sys/fs/cgroup/app/cpu.stat": {Data: []byte("usage_usec 3002\nuser_usec 2001\nsystem_usec 1001\n" +
			"nr_periods 120\nnr_throttled 90\nthrottled_usec 4500000\nnr_bursts 0\nburst_usec 0\n")},
	}
	return procstatfs.Option(fsys, "proc/self/cgroup", "proc/self/mountinfo").(procstat.Option)
}

// slowLimiter is a client-side rate limiter that holds every request 2 ms,
// over kubeclient's threshold for a "client rate limiter" span.
type slowLimiter struct{ flowcontrol.RateLimiter }

func (slowLimiter) Wait(ctx context.Context) error {
	timer := time.NewTimer(2 * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fakeAPIServer answers ConfigMap requests on loopback: a watch with one
// ADDED event, then a stream open until the client goes; a GET of
// "throttled" with 429 and Retry-After: 0 once, then as any other; of
// "missing" with 404; of any other name with the ConfigMap.
type fakeAPIServer struct {
	*httptest.Server
	throttle atomic.Int32
	closing  chan struct{}
}

func newFakeAPIServer() *fakeAPIServer {
	s := &fakeAPIServer{closing: make(chan struct{})}
	s.throttle.Store(1)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close ends the watch streams still open and closes the server.
func (s *fakeAPIServer) Close() {
	close(s.closing)
	s.Server.Close()
}

func (s *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	configMap := func(name string) corev1.ConfigMap {
		return corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", ResourceVersion: "1"}}
	}
	if r.URL.Query().Get("watch") == "true" {
		raw, _ := json.Marshal(configMap("a"))
		_ = json.NewEncoder(w).Encode(metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: raw}})
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	status := func(code int, reason metav1.StatusReason) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: string(reason)})
	}
	switch name := path.Base(r.URL.Path); {
	case name == "throttled" && s.throttle.Add(-1) >= 0:
		w.Header().Set("Retry-After", "0")
		status(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	case name == "missing":
		status(http.StatusNotFound, metav1.StatusReasonNotFound)
	default:
		_ = json.NewEncoder(w).Encode(configMap(name))
	}
}

// manualClock is a fake clock whose tickers never tick: an adaptive pool
// on it decides only at the Done of an attempt, so that its changes are
// events of the attempts' "reconcile" spans.
type manualClock struct{ *testingclock.FakeClock }

func newManualClock() *manualClock {
	return &manualClock{testingclock.NewFakeClock(testutil.T0)}
}

func (*manualClock) NewTicker(time.Duration) clock.Ticker { return silentTicker{} }

type silentTicker struct{}

func (silentTicker) C() <-chan time.Time { return nil }
func (silentTicker) Stop()               {}

// emittedQueue is the queue with every option of Instrument, on a fake
// clock.
type emittedQueue struct {
	*scheduler.Scheduler[string]
	clock *manualClock
}

func newEmittedQueue(t *testing.T, mp *sdkmetric.MeterProvider, tp *sdktrace.TracerProvider) (*emittedQueue, *otelqueue.Instrumentation, chan struct{}) {
	t.Helper()
	clk := newManualClock()
	q := scheduler.New(scheduler.Config[string]{
		Name:        "emitted",
		Clock:       clk,
		RateLimiter: testutil.ExpLimiter(10*time.Second, time.Minute),
		MaxLinks:    1, // a key added from 3 contexts drops 2 links
	})
	elected := make(chan struct{})
	inst, err := otelqueue.Instrument(q,
		otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp),
		otelqueue.WithControllerName("emitted-controller"),
		otelqueue.WithClientTime(), otelqueue.WithChangeDuration(), otelqueue.WithWaitByPriority(),
		otelqueue.WithLateness(), otelqueue.WithStandby(elected),
		otelqueue.WithLinkSource(otelqueue.LinkSourceFunc[string](func(_ context.Context, key string) (trace.SpanContext, error) {
			if key == "success" {
				return testutil.RemoteSpanContext(9, true), nil // the object's writer
			}
			return trace.SpanContext{}, nil
		})))
	if err != nil {
		q.ShutDown()
		t.Fatal(err)
	}
	return &emittedQueue{Scheduler: q, clock: clk}, inst, elected
}

// addEmittedKeys adds a key of each kind of add, and returns the keys.
// Their reconciles (newEmittedRunner) do what their names say.
func addEmittedKeys(q *emittedQueue) []string {
	ctx := context.Background()
	for _, k := range []string{"success", "error", "requeue", "requeue-after", "panic", "held", "client"} {
		q.Add(k)
	}
	for range 3 {
		q.Add("coalesced")
	}
	q.AddAfter("delayed", time.Minute)
	q.AddRateLimited("rate-limited")
	q.AddWithOptions(ctx, scheduler.AddOptions{Priority: 10, Trigger: scheduler.TriggerUpdate, Source: "ConfigMap"}, "priority")
	for i := range 3 {
		q.AddContext(trace.ContextWithRemoteSpanContext(ctx, testutil.RemoteSpanContext(byte(i+1), true)), "links")
	}
	return []string{"success", "error", "requeue", "requeue-after", "panic", "held", "client",
		"coalesced", "delayed", "rate-limited", "priority", "links"}
}

// settle lets the Runner reconcile every key, stepping the clock past the
// delays and backoffs until none is left waiting.
func (q *emittedQueue) settle(t *testing.T) {
	t.Helper()
	for i := 0; ; i++ {
		testutil.WaitFor(t, "the ready keys of queue "+q.Name()+" reconciled", func() bool {
			st := q.Stats()
			return st.Depth == 0 && st.InFlight == 0 && st.Held == 0
		})
		if q.Stats().Delayed == 0 {
			return
		}
		if i == 10 {
			t.Fatalf("queue %s: keys still delayed after %d steps of a minute: %+v", q.Name(), i, q.Stats())
		}
		q.clock.Step(time.Minute)
	}
}

// emittedRunner is the Runner of the emitted queue, and its reconciles'
// attempts by key.
type emittedRunner struct {
	*otelqueue.Runner[string]
	mu       sync.Mutex
	attempts map[string]int
	ok       map[string]bool // the keys whose reconcile succeeded
}

func (r *emittedRunner) attempt(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts[key]++
	return r.attempts[key]
}

func (r *emittedRunner) success(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok[key] = true
}

func (r *emittedRunner) succeeded(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok[key]
}

// newEmittedRunner returns the Runner of q: the first attempt of "error"
// fails, of "requeue" asks for a requeue, of "requeue-after" for one after
// a minute, of "panic" panics, of "held" adds its key again (held while
// it runs); "client" makes requests with the attempt's context; every
// other attempt succeeds.
func newEmittedRunner(t *testing.T, q *emittedQueue, cs kubernetes.Interface, logger *slog.Logger) *emittedRunner {
	t.Helper()
	r := &emittedRunner{attempts: map[string]int{}, ok: map[string]bool{}}
	reconcile := func(ctx context.Context, key string) (otelqueue.Result, error) {
		first := r.attempt(key) == 1
		switch {
		case key == "error" && first:
			return otelqueue.Result{}, errors.New("the reconcile failed")
		case key == "requeue" && first:
			return otelqueue.Result{Requeue: true}, nil
		case key == "requeue-after" && first:
			return otelqueue.Result{RequeueAfter: time.Minute}, nil
		case key == "panic" && first:
			panic("the reconcile panicked")
		case key == "held" && first:
			q.Add(key)
		case key == "client":
			clientRequests(ctx, t, cs)
		}
		r.success(key)
		return otelqueue.Result{}, nil
	}
	var err error
	r.Runner, err = otelqueue.NewRunner(q.Scheduler, 2, reconcile, otelqueue.WithRunnerClock(q.clock), otelqueue.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// clientRequests makes, with a reconcile's context, a GET answered 200,
// one answered 404, and one answered 429 with Retry-After then 200.
func clientRequests(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	cms := cs.CoreV1().ConfigMaps("demo")
	if _, err := cms.Get(ctx, "cm", metav1.GetOptions{}); err != nil {
		t.Errorf("GET of a ConfigMap: %v", err)
	}
	if _, err := cms.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("GET of a missing ConfigMap: %v, want NotFound", err)
	}
	if _, err := cms.Get(ctx, "throttled", metav1.GetOptions{}); err != nil {
		t.Errorf("GET of a ConfigMap answered 429 with Retry-After, then 200: %v", err)
	}
}

// newAdaptiveQueue returns a queue on a manualClock, instrumented.
func newAdaptiveQueue(t *testing.T, mp *sdkmetric.MeterProvider, tp *sdktrace.TracerProvider) (*emittedQueue, *otelqueue.Instrumentation) {
	t.Helper()
	clk := newManualClock()
	q := scheduler.New(scheduler.Config[string]{Name: "adaptive", Clock: clk})
	inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp))
	if err != nil {
		q.ShutDown()
		t.Fatal(err)
	}
	return &emittedQueue{Scheduler: q, clock: clk}, inst
}

// adaptiveRunner is a Runner with an adaptive pool over a backlog of keys
// whose reconciles take fake time, until fast is set.
type adaptiveRunner struct {
	run  *otelqueue.Runner[string]
	q    *emittedQueue
	fast atomic.Bool
}

const (
	adaptiveKeys = 300
	adaptiveWork = 100 * time.Millisecond
)

func newAdaptiveRunner(t *testing.T, q *emittedQueue, logger *slog.Logger) *adaptiveRunner {
	t.Helper()
	a := &adaptiveRunner{q: q}
	pool := otelqueue.WithAdaptiveWorkers(1, 8)
	pool.Interval, pool.Logger = time.Second, logger
	var err error
	a.run, err = otelqueue.NewRunner(q.Scheduler, 2, func(ctx context.Context, _ string) (otelqueue.Result, error) {
		if !a.fast.Load() {
			select {
			case <-q.clock.After(adaptiveWork):
			case <-ctx.Done():
			}
		}
		return otelqueue.Result{}, nil
	}, pool, otelqueue.WithRunnerClock(q.clock), otelqueue.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	for i := range adaptiveKeys {
		q.Add(fmt.Sprintf("key-%d", i))
	}
	return a
}

// changeWorkers steps the clock by the work of a reconcile each time every
// reconcile the pool lets run waits for it, until the pool changed its
// count (at an attempt's Done: the ticker never ticks), then lets the rest
// of the backlog run at once.
func (a *adaptiveRunner) changeWorkers(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, "the adaptive pool", func() bool { _, ok := a.run.AdaptiveStats(); return ok })
	for {
		if st, _ := a.run.AdaptiveStats(); st.Changes > 0 {
			break
		}
		done := int(a.run.Stats().Reconciles())
		if done == adaptiveKeys {
			t.Fatalf("the adaptive pool made no change in a backlog of %d keys", adaptiveKeys)
		}
		testutil.WaitFor(t, "the reconciles the pool lets run", func() bool {
			st := a.run.Stats()
			want := min(a.q.MaxInFlight(), adaptiveKeys-int(st.Reconciles()))
			return want == 0 || (a.q.clock.Waiters() == want && st.ActiveWorkers == want)
		})
		a.q.clock.Step(adaptiveWork)
	}
	a.fast.Store(true)
	testutil.WaitFor(t, "the backlog of queue "+a.q.Name()+" reconciled", func() bool {
		a.q.clock.Step(adaptiveWork) // for the reconciles that waited before fast
		return a.run.Stats().Reconciles() == adaptiveKeys
	})
}

// packages are the packages whose telemetry the test runs and checks.
var packages = []string{"otelqueue", "kubeclient", "procstat", "traceparent", "shard"}

// registryCheck checks emitted telemetry against the registry, and keeps
// what was emitted for the reverse check.
type registryCheck struct {
	t            *testing.T
	reg          *registry.Registry
	scopes       map[string]bool
	attrs        map[string]registry.Attribute // defined in attribute groups, by id
	metricByName map[string]registry.Group
	eventByName  map[string]registry.Group
	reported     map[string]bool // the errors reported, once each

	emitted      map[string]bool            // registry ids of the groups emitted
	emittedAttrs map[string]map[string]bool // registry id -> attribute keys emitted on it
}

func newRegistryCheck(t *testing.T, reg *registry.Registry) *registryCheck {
	c := &registryCheck{t: t, reg: reg, scopes: map[string]bool{}, attrs: map[string]registry.Attribute{},
		metricByName: map[string]registry.Group{}, eventByName: map[string]registry.Group{}, reported: map[string]bool{},
		emitted: map[string]bool{}, emittedAttrs: map[string]map[string]bool{}}
	for _, s := range reg.Scopes {
		c.scopes[s.Name] = true
	}
	for _, g := range reg.Groups {
		switch g.Type {
		case "attribute_group":
			for _, a := range g.Attributes {
				c.attrs[a.ID] = a
			}
		case "metric":
			c.metricByName[g.MetricName] = g
		case "event":
			c.eventByName[g.Name] = g
		}
	}
	return c
}

// errorf reports an error once, however many data points or spans show it.
func (c *registryCheck) errorf(format string, args ...any) {
	c.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if !c.reported[msg] {
		c.reported[msg] = true
		c.t.Error(msg)
	}
}

func (c *registryCheck) sawAttr(id, key string) {
	if c.emittedAttrs[id] == nil {
		c.emittedAttrs[id] = map[string]bool{}
	}
	c.emittedAttrs[id][key] = true
}

// attribute checks an attribute kv emitted on what (a description) of
// group id, which references refs: that the group references it, and that
// its type and value are the registry's.
func (c *registryCheck) attribute(what, id string, refs map[string]bool, kv attribute.KeyValue) {
	c.t.Helper()
	key := string(kv.Key)
	c.sawAttr(id, key)
	if !refs[key] {
		c.errorf("%s has the attribute %q, which the registry does not list for %s: add {ref: %s} to its attributes in semconv/registry.yaml, or fix the code",
			what, key, id, key)
	}
	c.attributeValue(what, kv)
}

// attributeValue checks the type and value of an attribute emitted on
// what against its definition in the registry's attribute groups.
func (c *registryCheck) attributeValue(what string, kv attribute.KeyValue) {
	c.t.Helper()
	key := string(kv.Key)
	def, ok := c.attrs[key]
	if !ok {
		c.errorf("%s has the attribute %q, which no attribute group of the registry defines: add it to semconv/registry.yaml, or fix the code", what, key)
		return
	}
	if got := attributeType(kv.Value.Type()); got != def.Type {
		c.errorf("%s has the attribute %q of type %s, the registry says %s: fix the code or semconv/registry.yaml", what, key, got, def.Type)
	}
	if len(def.Values) > 0 && kv.Value.Type() == attribute.STRING && !slices.Contains(def.Values, kv.Value.AsString()) {
		c.errorf("%s has the attribute %s=%q, which is not among the registry's values %q: add the value to semconv/registry.yaml, or fix the code",
			what, key, kv.Value.AsString(), def.Values)
	}
}

// attributeType is the registry's name of an attribute type.
func attributeType(t attribute.Type) string {
	switch t {
	case attribute.STRING:
		return "string"
	case attribute.INT64:
		return "int"
	case attribute.FLOAT64:
		return "double"
	case attribute.BOOL:
		return "boolean"
	case attribute.STRINGSLICE:
		return "string[]"
	}
	return strings.ToLower(t.String())
}

// metrics checks the metrics of the registry's scopes in rm.
func (c *registryCheck) metrics(rm metricdata.ResourceMetrics) {
	c.t.Helper()
	for _, sm := range rm.ScopeMetrics {
		if !c.scopes[sm.Scope.Name] {
			continue // not otelqueue's
		}
		for _, m := range sm.Metrics {
			c.metric(sm.Scope.Name, m)
		}
	}
}

// metric checks one emitted metric of scope.
func (c *registryCheck) metric(scope string, m metricdata.Metrics) {
	c.t.Helper()
	kind, valueType, points, bounds := describe(m.Data)
	g, ok := c.metricByName[m.Name]
	if !ok {
		c.errorf("metric %q (scope %s: %s %s, unit %q, %q) is not in the registry: add it to semconv/registry.yaml, or fix the code",
			m.Name, scope, valueType, kind, m.Unit, m.Description)
		return
	}
	what := fmt.Sprintf("metric %s", m.Name)
	if pkg := path.Base(scope); pkg != g.Package {
		c.errorf("%s is emitted by package %s (scope %s), the registry says package %s: fix semconv/registry.yaml or the code", what, pkg, scope, g.Package)
	}
	if m.Unit != g.Unit {
		c.errorf("%s has unit %q, the registry says %q: fix the code or semconv/registry.yaml", what, m.Unit, g.Unit)
	}
	if kind != g.Instrument {
		c.errorf("%s is a %s, the registry says %s: fix the code or semconv/registry.yaml", what, kind, g.Instrument)
	}
	if valueType != g.ValueType {
		c.errorf("%s has %s values, the registry says %s: fix the code or semconv/registry.yaml", what, valueType, g.ValueType)
	}
	if m.Description != g.Brief {
		c.errorf("%s has the description %q, the registry's brief is %q: fix the code or semconv/registry.yaml", what, m.Description, g.Brief)
	}
	if kind == "histogram" {
		want, err := registryBuckets(g.Buckets)
		if err != nil {
			c.errorf("%s: %v in semconv/registry.yaml", what, err)
		}
		for _, b := range bounds {
			if err == nil && !slices.Equal(b, want) {
				c.errorf("%s has the bucket boundaries %v, the registry says %v (buckets: %v): fix the code or semconv/registry.yaml", what, b, want, g.Buckets)
			}
		}
	}
	refs := g.Refs()
	for _, set := range points {
		for _, kv := range set.ToSlice() {
			c.attribute(what, g.ID, refs, kv)
		}
	}
	if len(points) > 0 {
		c.emitted[g.ID] = true
	}
}

// describe returns a metric's instrument kind and value type, as the
// registry names them, the attributes of its points, and a histogram's
// bucket boundaries (of each point).
func describe(data metricdata.Aggregation) (kind, valueType string, points []attribute.Set, bounds [][]float64) {
	sum := func(monotonic bool) string {
		if monotonic {
			return "counter"
		}
		return "updowncounter"
	}
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		return sum(d.IsMonotonic), "int", pointSets(d.DataPoints), nil
	case metricdata.Sum[float64]:
		return sum(d.IsMonotonic), "double", pointSets(d.DataPoints), nil
	case metricdata.Gauge[int64]:
		return "gauge", "int", pointSets(d.DataPoints), nil
	case metricdata.Gauge[float64]:
		return "gauge", "double", pointSets(d.DataPoints), nil
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			points, bounds = append(points, p.Attributes), append(bounds, p.Bounds)
		}
		return "histogram", "int", points, bounds
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			points, bounds = append(points, p.Attributes), append(bounds, p.Bounds)
		}
		return "histogram", "double", points, bounds
	case metricdata.ExponentialHistogram[int64]:
		for _, p := range d.DataPoints {
			points = append(points, p.Attributes)
		}
		return "exponential histogram", "int", points, nil
	case metricdata.ExponentialHistogram[float64]:
		for _, p := range d.DataPoints {
			points = append(points, p.Attributes)
		}
		return "exponential histogram", "double", points, nil
	}
	return fmt.Sprintf("%T", data), "unknown", nil, nil
}

func pointSets[N int64 | float64](points []metricdata.DataPoint[N]) []attribute.Set {
	sets := make([]attribute.Set, 0, len(points))
	for _, p := range points {
		sets = append(sets, p.Attributes)
	}
	return sets
}

// registryBuckets returns a histogram's boundaries in the registry:
// otelqueue's DefaultBuckets for "default" (the test sets no other), or its
// list.
func registryBuckets(b any) ([]float64, error) {
	switch b := b.(type) {
	case string:
		if b == "default" {
			return otelqueue.DefaultBuckets(), nil
		}
	case []any:
		out := make([]float64, 0, len(b))
		for _, v := range b {
			f, ok := v.(float64)
			if !ok {
				return nil, fmt.Errorf("bucket boundary %v is no number", v)
			}
			out = append(out, f)
		}
		return out, nil
	}
	return nil, fmt.Errorf("buckets %v are neither \"default\" nor a list", b)
}

// spanGroup returns the registry span of package pkg whose name matches
// name: one named exactly so, else one whose template matches it
// ({placeholders} match any non-empty text), the most literal first, so
// that "retry after" is not taken for an instance of "{method}".
func (c *registryCheck) spanGroup(pkg, name string) (registry.Group, bool) {
	var templates []registry.Group
	for _, g := range c.reg.Groups {
		if g.Type != "span" || g.Package != pkg {
			continue
		}
		if g.SpanName == name {
			return g, true
		}
		if strings.Contains(g.SpanName, "{") && matchTemplate(g.SpanName, name) {
			templates = append(templates, g)
		}
	}
	if len(templates) == 0 {
		return registry.Group{}, false
	}
	literal := func(g registry.Group) int {
		n := 0
		for s := g.SpanName; ; {
			i := strings.IndexByte(s, '{')
			if i < 0 {
				return n + len(s)
			}
			n += i
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return n
			}
			s = s[i+j+1:]
		}
	}
	sort.SliceStable(templates, func(i, j int) bool { return literal(templates[i]) > literal(templates[j]) })
	return templates[0], true
}

// matchTemplate says whether name is template with each {placeholder}
// replaced by non-empty text (as registry_test.go's).
func matchTemplate(template, name string) bool {
	i := strings.IndexByte(template, '{')
	if i < 0 {
		return template == name
	}
	j := strings.IndexByte(template[i:], '}')
	if j < 0 || !strings.HasPrefix(name, template[:i]) {
		return false
	}
	rest := template[i+j+1:]
	for k := i + 1; k <= len(name); k++ {
		if matchTemplate(rest, name[k:]) {
			return true
		}
	}
	return false
}

// spans checks the ended spans of the registry's scopes.
func (c *registryCheck) spans(spans []sdktrace.ReadOnlySpan) {
	c.t.Helper()
	for _, s := range spans {
		scope := s.InstrumentationScope().Name
		if !c.scopes[scope] {
			continue // not otelqueue's
		}
		c.span(scope, s)
	}
}

// span checks one ended span of scope.
func (c *registryCheck) span(scope string, s sdktrace.ReadOnlySpan) {
	c.t.Helper()
	pkg := path.Base(scope)
	g, ok := c.spanGroup(pkg, s.Name())
	if !ok {
		var keys []string
		for _, kv := range s.Attributes() {
			keys = append(keys, string(kv.Key))
		}
		c.errorf("span %q (scope %s, kind %s, attributes %q) matches no span of package %s in the registry: add it to semconv/registry.yaml, or fix the code",
			s.Name(), scope, s.SpanKind(), keys, pkg)
		return
	}
	c.emitted[g.ID] = true
	what := fmt.Sprintf("span %q (%s)", s.Name(), g.ID)
	if kind := s.SpanKind().String(); kind != g.SpanKind {
		c.errorf("%s is of kind %s, the registry says %s: fix the code or semconv/registry.yaml", what, kind, g.SpanKind)
	}
	refs := g.Refs()
	for _, kv := range s.Attributes() {
		c.attribute(what, g.ID, refs, kv)
	}
	for _, ev := range s.Events() {
		c.event(what, g, ev)
	}
	for _, l := range s.Links() {
		for _, kv := range l.Attributes {
			c.attributeValue(what+"'s link", kv)
		}
	}
}

// event checks an event of the span what, of registry span g.
func (c *registryCheck) event(what string, g registry.Group, ev sdktrace.Event) {
	c.t.Helper()
	if ev.Name == "exception" {
		// OpenTelemetry's exception event (Span.RecordError).
		for _, kv := range ev.Attributes {
			if !strings.HasPrefix(string(kv.Key), "exception.") {
				c.errorf("%s has an exception event with the attribute %q: want only OpenTelemetry's exception.* attributes; fix the code", what, kv.Key)
			}
		}
		return
	}
	eg, ok := c.eventByName[ev.Name]
	if !ok {
		c.errorf("%s has the event %q, which is not in the registry: add it to semconv/registry.yaml, or fix the code", what, ev.Name)
		return
	}
	c.emitted[eg.ID] = true
	if !slices.Contains(g.Events, eg.ID) {
		c.errorf("%s has the event %q (%s), which the registry does not list among its events %q: add it to its events in semconv/registry.yaml, or fix the code",
			what, ev.Name, eg.ID, g.Events)
	}
	refs := eg.Refs()
	for _, kv := range ev.Attributes {
		c.attribute(fmt.Sprintf("event %q of %s", ev.Name, what), eg.ID, refs, kv)
	}
}

// everyNameEmitted checks that every metric, span and event of the
// registry's packages, and every attribute each references, was emitted,
// but for notEmitted and attrsNotEmitted.
func (c *registryCheck) everyNameEmitted() {
	c.t.Helper()
	for _, g := range c.reg.Groups {
		if g.Type == "attribute_group" || !slices.Contains(packages, g.Package) {
			continue
		}
		if _, ok := notEmitted[g.ID]; ok {
			if c.emitted[g.ID] {
				c.errorf("%s %q (%s) was emitted: remove it from notEmitted in this test", g.Type, g.EmittedName(), g.ID)
			}
			continue
		}
		if !c.emitted[g.ID] {
			c.errorf("%s %q (%s) of package %s is in the registry but was not emitted: make this test emit it, remove it from semconv/registry.yaml if the code no longer emits it, or fix the code",
				g.Type, g.EmittedName(), g.ID, g.Package)
			continue
		}
		for _, a := range g.Attributes {
			_, exempt := attrsNotEmitted[g.ID+" "+a.Ref]
			switch seen := c.emittedAttrs[g.ID][a.Ref]; {
			case exempt && seen:
				c.errorf("the attribute %q of %s was emitted: remove it from attrsNotEmitted in this test", a.Ref, g.ID)
			case !exempt && !seen:
				c.errorf("the attribute %q of %s %q (%s) is in the registry but was never emitted on it: make this test emit it, remove it from the %s's attributes in semconv/registry.yaml, or fix the code",
					a.Ref, g.Type, g.EmittedName(), g.ID, g.Type)
			}
		}
	}
}
