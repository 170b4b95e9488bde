package otelqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/otelqueuesdk"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

var linkLookup = []attribute.KeyValue{semconv.AttrLinkKind.String("lookup")}

// writers is a LinkSource over a map of key to span context, standing for
// the objects' annotations in a cache; it records the keys it was asked for.
type writers struct {
	mu    sync.Mutex
	by    map[string]trace.SpanContext
	asked []string
}

func newWriters() *writers { return &writers{by: map[string]trace.SpanContext{}} }

func (w *writers) set(key string, sc trace.SpanContext) {
	w.mu.Lock()
	w.by[key] = sc
	w.mu.Unlock()
}

func (w *writers) SpanContext(_ context.Context, key string) (trace.SpanContext, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = append(w.asked, key)
	return w.by[key], nil
}

func (w *writers) askedFor() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.asked...)
}

// process takes key, marks it done, and returns its attempt's root span.
func (e *env) process(t *testing.T, key string, attempt int) sdktrace.ReadOnlySpan {
	t.Helper()
	e.getKey(t, key)
	e.q.Done(key)
	root, _, _ := attemptSpans(t, e.sr.Ended(), key, attempt)
	return root
}

// TestLinkSourceLinksPlainAdds: keys added with no context link to what the
// source finds for them, marked workqueue.link=lookup; a key it finds
// nothing for has no link; enqueue links come first.
func TestLinkSourceLinksPlainAdds(t *testing.T) {
	src := newWriters()
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithLinkSource[string](src)}})
	_, writerA := remoteCtx(1, false)
	src.set("a", writerA)

	e.q.Add("a")
	assertLinks(t, e.process(t, "a", 1), sdktrace.Link{SpanContext: writerA, Attributes: linkLookup})

	e.q.Add("none")
	assertLinks(t, e.process(t, "none", 1))

	_, writerB := remoteCtx(2, true)
	src.set("b", writerB)
	enq, enqSC := e.enqueuer(t, "handler")
	e.q.AddContext(enq, "b")
	assertLinks(t, e.process(t, "b", 1),
		sdktrace.Link{SpanContext: enqSC, Attributes: linkEnqueue},
		sdktrace.Link{SpanContext: writerB, Attributes: linkLookup})

	if got := strings.Join(src.askedFor(), ","); got != "a,none,b" {
		t.Errorf("the source was asked for %s, want a,none,b", got)
	}
}

// TestLinkSourceDeduplicates: a span context the attempt already links to
// (an enqueue's, whatever its flags, or the previous attempt's) or that is
// its parent is not linked again.
func TestLinkSourceDeduplicates(t *testing.T) {
	t.Run("enqueue", func(t *testing.T) {
		src := newWriters()
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithLinkSource[string](src)}})
		enq, enqSC := e.enqueuer(t, "handler") // sampled
		// As the annotation reader gives it: the same span, not sampled.
		src.set("a", enqSC.WithTraceFlags(0).WithRemote(true))
		e.q.AddContext(enq, "a")
		assertLinks(t, e.process(t, "a", 1), sdktrace.Link{SpanContext: enqSC, Attributes: linkEnqueue})
	})
	t.Run("coalesced enqueue", func(t *testing.T) {
		src := newWriters()
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithLinkSource[string](src)}})
		enq1, sc1 := e.enqueuer(t, "handler 1")
		enq2, sc2 := e.enqueuer(t, "handler 2")
		src.set("a", sc2)
		e.q.AddContext(enq1, "a")
		e.q.AddContext(enq2, "a")
		assertLinks(t, e.process(t, "a", 1),
			sdktrace.Link{SpanContext: sc1, Attributes: linkEnqueue},
			sdktrace.Link{SpanContext: sc2, Attributes: linkEnqueue})
	})
	t.Run("previous attempt", func(t *testing.T) {
		src := newWriters()
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithLinkSource[string](src)}})
		e.q.Add("a")
		it := e.getKey(t, "a")
		prev := trace.SpanContextFromContext(it.Context()) // its reconcile span
		src.set("a", prev)
		e.q.AddRateLimited("a")
		e.q.Done("a")
		e.step(time.Second) // the backoff
		assertLinks(t, e.process(t, "a", 2), sdktrace.Link{SpanContext: prev, Attributes: linkPrevious})
	})
	t.Run("parent", func(t *testing.T) {
		src := newWriters()
		e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithEnqueuerAsParent(), otelqueue.WithLinkSource[string](src)}})
		enq, enqSC := e.enqueuer(t, "handler")
		src.set("a", enqSC)
		e.q.AddContext(enq, "a")
		root := e.process(t, "a", 1)
		if root.Parent().SpanID() != enqSC.SpanID() {
			t.Errorf("root's parent = %v, want the enqueuer %v", root.Parent().SpanID(), enqSC.SpanID())
		}
		assertLinks(t, root)
	})
}

// TestLinkSourceSampling: the link is there when the sampler decides, so
// otelqueuesdk.LinkSampled samples an attempt whose looked-up writer was
// sampled, and only that one.
func TestLinkSourceSampling(t *testing.T) {
	src := newWriters()
	e := newEnv(t, envConfig{
		sampler: otelqueuesdk.LinkSampled(sdktrace.NeverSample()),
		opts:    []otelqueue.Option{otelqueue.WithLinkSource[string](src)},
	})
	_, sampled := remoteCtx(1, true)
	_, unsampled := remoteCtx(2, false)
	src.set("sampled", sampled)
	src.set("unsampled", unsampled)
	e.q.Add("sampled")
	e.q.Add("unsampled")
	for range 2 {
		it := e.get(t)
		e.q.Done(it.Key)
	}
	roots := testutil.SpansNamed(e.sr.Ended(), "process "+queueName)
	if len(roots) != 1 {
		t.Fatalf("%d attempts recorded, want 1 (the sampled writer's)", len(roots))
	}
	if k := attrMap(roots[0].Attributes())[semconv.AttrKey].AsString(); k != "sampled" {
		t.Errorf("recorded the attempt of %q, want the sampled writer's", k)
	}
	assertLinks(t, roots[0], sdktrace.Link{SpanContext: sampled, Attributes: linkLookup})
}

// TestLinkSourceFailures: an error or a panic of the source gives no link,
// goes to otel.Handle naming the queue and the key, and the attempt goes
// on.
func TestLinkSourceFailures(t *testing.T) {
	for name, src := range map[string]otelqueue.LinkSourceFunc[string]{
		"error": func(context.Context, string) (trace.SpanContext, error) {
			return trace.SpanContext{}, errors.New("cache exploded")
		},
		"panic": func(context.Context, string) (trace.SpanContext, error) { panic("cache exploded") },
		"error with a span context": func(context.Context, string) (trace.SpanContext, error) {
			_, sc := remoteCtx(3, true)
			return sc, errors.New("cache exploded")
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithLinkSource[string](src)}})
			e.q.Add("a")
			root := e.process(t, "a", 1)
			assertLinks(t, root)
			errs := testutil.TakeOTelErrors()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "cache exploded") ||
				!strings.Contains(errs[0].Error(), `"`+queueName+`"`) || !strings.Contains(errs[0].Error(), `"a"`) {
				t.Errorf("otel.Handle got %v, want one error naming the queue, the key and the cause", errs)
			}
		})
	}
}

// TestLinkSourceKeyTypeMismatch: a source of another key type is an invalid
// option: Instrument refuses it, naming both key types, and installs nothing.
func TestLinkSourceKeyTypeMismatch(t *testing.T) {
	called := false
	src := otelqueue.LinkSourceFunc[int](func(context.Context, int) (trace.SpanContext, error) {
		called = true
		return trace.SpanContext{}, nil
	})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	defer tp.Shutdown(context.Background())
	q := scheduler.New(scheduler.Config[string]{Name: queueName})
	defer q.ShutDown()
	inst, err := otelqueue.Instrument(q, otelqueue.WithTracerProvider(tp), otelqueue.WithLinkSource[int](src))
	if err == nil {
		inst.Stop()
		t.Fatal("Instrument accepted a link source of int keys for a queue of string keys")
	}
	if !strings.Contains(err.Error(), "keys of type string") || !strings.Contains(err.Error(), "LinkSourceFunc[int]") {
		t.Errorf("Instrument: %v, want an error naming both key types", err)
	}
	q.Add("a")
	it, _ := q.Get()
	q.Done(it)
	if called {
		t.Error("a source of int keys was called for a string queue")
	}
	// The refused instrumentation left the queue free to be instrumented.
	inst, err = otelqueue.Instrument(q, otelqueue.WithTracerProvider(tp))
	if err != nil {
		t.Fatalf("Instrument after a refused one: %v", err)
	}
	inst.Stop()
}

// TestLinkSourceNotCalledWithoutTracing: with a no-op TracerProvider the
// source is never asked (there is no span to link).
func TestLinkSourceNotCalledWithoutTracing(t *testing.T) {
	src := newWriters()
	e := newEnv(t, envConfig{noTracing: true, opts: []otelqueue.Option{otelqueue.WithLinkSource[string](src)}})
	e.q.Add("a")
	e.getKey(t, "a")
	e.q.Done("a")
	if got := src.askedFor(); len(got) != 0 {
		t.Errorf("the source was asked for %v with tracing off", got)
	}
}

// TestLinkSourceNil: WithLinkSource(nil) is ignored.
func TestLinkSourceNil(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithLinkSource[string](nil)}})
	e.q.Add("a")
	assertLinks(t, e.process(t, "a", 1))
}

// A queue whose keys are added with a plain Add (no context) still links
// each attempt to the writer of its object: the link source looks the key
// up, here in a map standing for an informer cache of objects whose
// traceparent annotation a traceparent.Reader reads.
func ExampleWithLinkSource() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	// The objects as an informer cache holds them, one annotated by its writer.
	annotations := map[string]map[string]string{
		"default/web": {traceparent.Annotation: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"default/db":  nil,
	}
	reader := traceparent.NewReader()
	source := otelqueue.LinkSourceFunc[string](func(_ context.Context, key string) (trace.SpanContext, error) {
		a, ok := annotations[key]
		if !ok {
			return trace.SpanContext{}, nil // deleted: no link
		}
		return reader.SpanContext(annotated(a)), nil
	})

	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	defer queue.ShutDown()
	inst, err := otelqueue.Instrument(queue, otelqueue.WithTracerProvider(tp), otelqueue.WithLinkSource[string](source))
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()

	queue.Add("default/web") // no context: a resync, or a handler that knows nothing of traces
	queue.Add("default/db")
	for range 2 {
		key, _ := queue.Get()
		queue.Done(key)
	}
	for _, s := range testutil.SpansNamed(spans.Ended(), "process deployments") {
		key := attrMap(s.Attributes())[semconv.AttrKey].AsString()
		for _, l := range s.Links() {
			fmt.Println(key, "links to trace", l.SpanContext.TraceID(), attrMap(l.Attributes)[semconv.AttrLinkKind].AsString())
		}
		if len(s.Links()) == 0 {
			fmt.Println(key, "has no link")
		}
	}
	// Output:
	// default/web links to trace 0af7651916cd43dd8448eb211c80319c lookup
	// default/db has no link
}

// annotated is an object with annotations only.
type annotated map[string]string

func (a annotated) GetAnnotations() map[string]string { return a }
func (a annotated) SetAnnotations(map[string]string)  {}
