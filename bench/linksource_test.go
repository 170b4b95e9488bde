package bench

import (
	"context"
	"fmt"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/controllerruntime/fakecluster"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

// linkSources are the link sources BenchmarkLinkSource compares, on the
// same traced lifecycle.
var linkSources = []struct {
	name string
	// new returns the source (nil for none) over a cache holding the
	// objects of lifecycleKeys requests, and a func that stops the cache.
	new func(tb testing.TB) (otelqueue.LinkSource[reconcile.Request], func())
}{
	// No WithLinkSource: the scheduler-otel-traced-* lifecycle as it is.
	{"none", func(testing.TB) (otelqueue.LinkSource[reconcile.Request], func()) { return nil, func() {} }},
	// A source that returns a constant span context: the observer's part
	// (the call, the dedup, one more link for the SDK to copy).
	{"constant", func(testing.TB) (otelqueue.LinkSource[reconcile.Request], func()) {
		sc := objectWriter(lifecycleKeys)
		return otelqueue.LinkSourceFunc[reconcile.Request](func(context.Context, reconcile.Request) (trace.SpanContext, error) {
			return sc, nil
		}), func() {}
	}},
	// controllerruntime.ObjectLinkSource over a manager cache of every
	// namespace: a lookup in the informer's store and the annotation parse.
	{"object", func(tb testing.TB) (otelqueue.LinkSource[reconcile.Request], func()) {
		return startObjectSource(tb, cache.Options{})
	}},
	// The same over a cache restricted to one namespace
	// (cache.Options.DefaultNamespaces), whose informer hides its store:
	// the lookup is the cache's Get (with client.UnsafeDisableDeepCopy: no
	// copy, but a REST mapping per call).
	{"object-namespaced", func(tb testing.TB) (otelqueue.LinkSource[reconcile.Request], func()) {
		return startObjectSource(tb, cache.Options{DefaultNamespaces: map[string]cache.Config{"default": {}}})
	}},
}

// objectWriter is the span context of the writer of object i: the
// traceparent its annotation carries.
func objectWriter(i int) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0xee, byte(i >> 8), byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13},
		SpanID:     trace.SpanID{0xee, byte(i >> 8), byte(i), 1, 2, 3, 4, 5},
		TraceFlags: trace.FlagsSampled,
	})
}

// requests returns the requests of the n objects default/obj-<i>.
func requests(n int) []reconcile.Request {
	out := make([]reconcile.Request, n)
	for i := range out {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("obj-%d", i)}}
	}
	return out
}

// startObjectSource fills a fake cluster with lifecycleKeys ConfigMaps,
// each annotated with its writer's traceparent (and a few bytes of data),
// starts a cache over it with opts, and returns ObjectLinkSource over it.
func startObjectSource(tb testing.TB, opts cache.Options) (otelqueue.LinkSource[reconcile.Request], func()) {
	cs := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	for i, r := range requests(lifecycleKeys) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name},
			Data:       map[string]string{"version": "1"},
		}
		traceparent.Inject(trace.ContextWithSpanContext(ctx, objectWriter(i)), cm)
		if _, err := cs.CoreV1().ConfigMaps(r.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:1"}, fakecluster.ManagerOptions(cs, manager.Options{Cache: opts}).Cache)
	if err != nil {
		tb.Fatal(err)
	}
	src := controllerruntime.ObjectLinkSource(c, &corev1.ConfigMap{})
	// Creates the informer before the cache starts, as For() does.
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Start(ctx); err != nil {
			tb.Error(err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("the cache did not sync")
	}
	return src, func() { cancel(); <-done }
}

// startLinkSourceLifecycle is the scheduler-otel-traced-* lifecycle with
// reconcile.Request keys and src as the link source (none when nil).
func startLinkSourceLifecycle(tb testing.TB, sampler sdktrace.Sampler, sampled bool, src otelqueue.LinkSource[reconcile.Request]) (func(reconcile.Request) reconcile.Request, func()) {
	s := scheduler.New(scheduler.Config[reconcile.Request]{Name: queueName})
	opts := []otelqueue.Option{
		otelqueue.WithMeterProvider(newMeterProvider(queueName)),
		otelqueue.WithTracerProvider(newTracerProvider(queueName, sampler)),
	}
	if src != nil {
		opts = append(opts, otelqueue.WithLinkSource(src))
	}
	if _, err := otelqueue.Instrument(s, opts...); err != nil {
		tb.Fatal(err)
	}
	ctx, bg := enqueueContext(sampled), context.Background()
	step := func(key reconcile.Request) reconcile.Request {
		s.AddContext(ctx, key)
		it, _ := s.GetContext(bg)
		s.Done(it.Key)
		return it.Key
	}
	return step, s.ShutDown
}

// BenchmarkLinkSource measures one traced Add -> Get -> Done per op, as
// BenchmarkLifecycle's scheduler-otel-traced-* variants, with each link
// source of linkSources, so that the cost per attempt of a link source
// (variant=X minus variant=none, same run, same sampling) can be read off:
// benchstat -col /variant puts the sources side by side.
// The cache holds lifecycleKeys small ConfigMaps: a heap of a few MB.
func BenchmarkLinkSource(b *testing.B) {
	keys := requests(lifecycleKeys)
	for _, sampling := range []struct {
		name    string
		sampler sdktrace.Sampler
		sampled bool
	}{
		{"traced-unsampled", sdktrace.NeverSample(), false},
		{"traced-sampled", sdktrace.AlwaysSample(), true},
	} {
		for _, ls := range linkSources {
			b.Run("sampling="+sampling.name+"/variant="+ls.name, func(b *testing.B) {
				src, stopSource := ls.new(b)
				defer stopSource()
				step, stop := startLinkSourceLifecycle(b, sampling.sampler, sampling.sampled, src)
				defer stop()
				timeSteps(b, step, keys)
			})
		}
	}
}

// TestLinkSourceWiring checks that each source of BenchmarkLinkSource
// does what its name says: every sampled attempt links to the enqueue and,
// with a source, to the object's writer.
func TestLinkSourceWiring(t *testing.T) {
	keys := requests(lifecycleKeys)
	for _, ls := range linkSources {
		t.Run(ls.name, func(t *testing.T) {
			src, stopSource := ls.new(t)
			defer stopSource()
			rec := newLinkRecorder()
			s := scheduler.New(scheduler.Config[reconcile.Request]{Name: queueName})
			defer s.ShutDown()
			opts := []otelqueue.Option{otelqueue.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))}
			if src != nil {
				opts = append(opts, otelqueue.WithLinkSource(src))
			}
			if _, err := otelqueue.Instrument(s, opts...); err != nil {
				t.Fatal(err)
			}
			ctx := enqueueContext(true)
			for i := range 4 {
				s.AddContext(ctx, keys[i])
				it, _ := s.GetContext(context.Background())
				s.Done(it.Key)
				var root sdktrace.ReadOnlySpan
				select {
				case root = <-rec.roots: // Done ended it
				default:
					t.Fatalf("attempt %d: no root span ended", i)
				}
				links := root.Links()
				want := 2
				if src == nil {
					want = 1
				}
				if len(links) != want {
					t.Fatalf("attempt %d: root has %d links, want %d", i, len(links), want)
				}
				if last := links[len(links)-1].SpanContext; src != nil && ls.name != "constant" && last.TraceID() != objectWriter(i).TraceID() {
					t.Errorf("attempt %d: looked-up link to trace %v, want the object's writer %v", i, last.TraceID(), objectWriter(i).TraceID())
				}
			}
		})
	}
}

// linkRecorder passes on the root spans that end.
type linkRecorder struct{ roots chan sdktrace.ReadOnlySpan }

func newLinkRecorder() *linkRecorder {
	return &linkRecorder{roots: make(chan sdktrace.ReadOnlySpan, 16)}
}

func (r *linkRecorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *linkRecorder) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Name() == "process "+queueName {
		r.roots <- s
	}
}
func (r *linkRecorder) Shutdown(context.Context) error   { return nil }
func (r *linkRecorder) ForceFlush(context.Context) error { return nil }
