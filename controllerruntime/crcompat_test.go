package controllerruntime_test

// Drop-in compatibility with controller-runtime's priority queue (issue 20).
//
// Each TestCRCompat scenario is a list of steps: one call on a
// priorityqueue.PriorityQueue[string], then what controller-runtime's queue
// shows after it (Len, the depth by priority, what a Get returned), written
// out by hand from controller-runtime v0.25.2's priorityqueue.go. The same
// steps run, as subtests, on controller-runtime's own queue (which checks the
// expectations themselves) and on ours; a failure names the queue. Both run in
// a testing/synctest bubble, so delays, time.Tick and the queues' goroutines
// run on the bubble's fake clock, and synctest.Wait after every call lets
// controller-runtime's asynchronous add buffer settle. FuzzCRCompat
// (crcompat_fuzz_test.go) runs random steps on both queues side by side.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/otelqueue"
)

var _ priorityqueue.PriorityQueue[string] = (*controllerruntime.Queue[string])(nil)

// crLimiter is the rate limiter both queues get, one instance each.
func crLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second)
}

// depth is a queue's ready depth by priority, without the zero entries.
type depth map[int]int

func (d depth) String() string {
	if len(d) == 0 {
		return "{}"
	}
	var b strings.Builder
	for i, p := range slices.Backward(slices.Sorted(maps.Keys(d))) {
		if i != len(d)-1 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d:%d", p, d[p])
	}
	return "{" + b.String() + "}"
}

// crQueueImpl builds one of the two queues under test, named name, with its
// depth by priority.
type crQueueImpl struct {
	name string
	new  func(t *testing.T, name string) (priorityqueue.PriorityQueue[string], func() depth)
}

var crQueueImpls = []crQueueImpl{
	{name: "controller-runtime", new: newCRQueue},
	{name: "otelqueue", new: newOtelQueue},
}

// newCRQueue is controller-runtime's priority queue with its default
// metrics provider: the one that records workqueue_depth with a priority
// label. A provider of our own cannot: controller-runtime type-asserts
// metrics.MetricsProviderWithPriority from its internal package, whose
// method returns the internal named type metrics.DepthMetricWithPriority,
// which no type outside controller-runtime can name, so none can implement
// it. The depth is read from ctrlmetrics.Registry, relative to the values
// the queue's series had when it was built (the fuzz test reuses a name).
func newCRQueue(t *testing.T, name string) (priorityqueue.PriorityQueue[string], func() depth) {
	base := crDepthSeries(t, name)
	q := priorityqueue.New(name, func(o *priorityqueue.Opts[string]) { o.RateLimiter = crLimiter() })
	return q, func() depth {
		d := depth{}
		for label, v := range crDepthSeries(t, name) {
			n := int(v - base[label])
			if n == 0 {
				continue
			}
			p, err := strconv.Atoi(label)
			if err != nil {
				t.Fatalf("controller-runtime's workqueue_depth{name=%q} has priority=%q (%v)", name, label, err)
			}
			d[p] = n
		}
		return d
	}
}

// crDepthSeries returns controller-runtime's workqueue_depth gauges of the
// queue name, by priority label.
func crDepthSeries(t *testing.T, name string) map[string]float64 {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering controller-runtime's metrics: %v", err)
	}
	series := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var queue, prio string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "name":
					queue = l.GetValue()
				case "priority":
					prio = l.GetValue()
				}
			}
			if queue == name {
				series[prio] = m.GetGauge().GetValue()
			}
		}
	}
	return series
}

// newOtelQueue is our queue as controller-runtime gets it from
// NewTypedQueue, instrumented (on providers that export nothing).
func newOtelQueue(t *testing.T, name string) (priorityqueue.PriorityQueue[string], func() depth) {
	wq := controllerruntime.NewTypedQueue[string](
		otelqueue.WithMeterProvider(sdkmetric.NewMeterProvider()),
		otelqueue.WithTracerProvider(tracenoop.NewTracerProvider()),
	)(name, crLimiter())
	q, ok := wq.(*controllerruntime.Queue[string])
	if !ok {
		t.Fatalf("NewTypedQueue returned a %T", wq)
	}
	return q, func() depth {
		d := depth{}
		for _, pd := range q.DepthByPriority(nil) {
			if pd.Depth != 0 {
				d[pd.Priority] += pd.Depth
			}
		}
		return d
	}
}

// opKind is a call on a PriorityQueue.
type opKind uint8

const (
	opAddWithOpts opKind = iota
	opAdd
	opAddAfter
	opAddRateLimited
	opGet
	opDone
	opForget
	opSleep
	opShutDown
	numOpKinds
)

// op is one call: AddWithOpts(AddOpts{After, RateLimited, Priority}, keys...),
// Add(keys[0]), AddAfter(keys[0], after), AddRateLimited(keys[0]),
// GetWithPriority(), Done(keys[0]), Forget(keys[0]), time.Sleep(after) or
// ShutDown().
type op struct {
	kind        opKind
	keys        []string
	after       time.Duration
	rateLimited bool
	priority    *int
}

func (o op) String() string {
	switch o.kind {
	case opAddWithOpts:
		var opts []string
		if o.after != 0 {
			opts = append(opts, "After: "+o.after.String())
		}
		if o.rateLimited {
			opts = append(opts, "RateLimited: true")
		}
		if o.priority != nil {
			opts = append(opts, "Priority: "+strconv.Itoa(*o.priority))
		}
		return fmt.Sprintf("AddWithOpts({%s}, %s)", strings.Join(opts, ", "), strings.Join(o.keys, ", "))
	case opAdd:
		return "Add(" + o.keys[0] + ")"
	case opAddAfter:
		return fmt.Sprintf("AddAfter(%s, %v)", o.keys[0], o.after)
	case opAddRateLimited:
		return "AddRateLimited(" + o.keys[0] + ")"
	case opGet:
		return "GetWithPriority()"
	case opDone:
		return "Done(" + o.keys[0] + ")"
	case opForget:
		return "Forget(" + o.keys[0] + ")"
	case opSleep:
		return "time.Sleep(" + o.after.String() + ")"
	case opShutDown:
		return "ShutDown()"
	}
	return fmt.Sprintf("op(%d)", o.kind)
}

func addOpts(o priorityqueue.AddOpts, keys ...string) op {
	return op{kind: opAddWithOpts, keys: keys, after: o.After, rateLimited: o.RateLimited, priority: o.Priority}
}
func add(key string) op { return op{kind: opAdd, keys: []string{key}} }
func addAfter(key string, after time.Duration) op {
	return op{kind: opAddAfter, keys: []string{key}, after: after}
}
func addRateLimited(key string) op { return op{kind: opAddRateLimited, keys: []string{key}} }
func get() op                      { return op{kind: opGet} }
func done(key string) op           { return op{kind: opDone, keys: []string{key}} }
func forget(key string) op         { return op{kind: opForget, keys: []string{key}} }
func sleep(d time.Duration) op     { return op{kind: opSleep, after: d} }
func shutDown() op                 { return op{kind: opShutDown} }

// got is what a GetWithPriority returned.
type got struct {
	key      string
	priority int
	shutdown bool
}

func (g got) String() string {
	if g.shutdown {
		return fmt.Sprintf("(%q, %d, shutdown)", g.key, g.priority)
	}
	return fmt.Sprintf("%s@%d", g.key, g.priority)
}

// side is one queue under test, with at most one GetWithPriority in flight
// in a goroutine of its own (so a Get that blocks blocks no test).
type side struct {
	name     string
	q        priorityqueue.PriorityQueue[string]
	depth    func() depth
	getc     chan got
	pending  bool // a Get is blocked
	inflight map[string]bool
	down     bool
}

func newSide(t *testing.T, impl crQueueImpl, queueName string) *side {
	q, d := impl.new(t, queueName)
	s := &side{name: impl.name, q: q, depth: d, getc: make(chan got, 1), inflight: map[string]bool{}}
	t.Cleanup(s.shutDown) // inside the bubble: the queues' goroutines end
	return s
}

func (s *side) shutDown() {
	if !s.down { // controller-runtime's ShutDown panics when called twice
		s.down = true
		s.q.ShutDown()
	}
}

// apply makes the call o, but a Sleep, which the caller makes once for
// every queue of the bubble.
func (s *side) apply(o op) {
	switch o.kind {
	case opAddWithOpts:
		s.q.AddWithOpts(priorityqueue.AddOpts{After: o.after, RateLimited: o.rateLimited, Priority: o.priority}, o.keys...)
	case opAdd:
		s.q.Add(o.keys[0])
	case opAddAfter:
		s.q.AddAfter(o.keys[0], o.after)
	case opAddRateLimited:
		s.q.AddRateLimited(o.keys[0])
	case opGet:
		s.pending = true
		go func() {
			k, p, sd := s.q.GetWithPriority()
			s.getc <- got{k, p, sd}
		}()
	case opDone:
		delete(s.inflight, o.keys[0])
		s.q.Done(o.keys[0])
	case opForget:
		s.q.Forget(o.keys[0])
	case opShutDown:
		s.shutDown()
	}
}

// returned is what the Get in flight returned since the last call, nil if
// none returned (none in flight, or it still blocks). Call after
// synctest.Wait.
func (s *side) returned() *got {
	if !s.pending {
		return nil
	}
	select {
	case g := <-s.getc:
		s.pending = false
		if !g.shutdown {
			s.inflight[g.key] = true
		}
		return &g
	default:
		return nil
	}
}

// step is one call and what controller-runtime's queue shows after it.
type step struct {
	op    op
	len   int
	depth depth
	// got is what the Get of this step returns, or, for other calls, what a
	// Get blocked before returns after the call; nil: no Get returns.
	// blocks: the Get of this step blocks.
	got    *got
	blocks bool
}

type stepOpt func(*step)

// s is a step: call o, then expect Len() == n and the depth d.
func s(o op, n int, d depth, opts ...stepOpt) step {
	st := step{op: o, len: n, depth: d}
	for _, f := range opts {
		f(&st)
	}
	return st
}

// returns: a Get returns key at priority.
func returns(key string, priority int) stepOpt {
	return func(st *step) { st.got = &got{key: key, priority: priority} }
}

// returnsShutDown: a Get returns shutdown (no key).
func returnsShutDown() stepOpt { return func(st *step) { st.got = &got{shutdown: true} } }

// blocks: the Get of this step blocks.
func blocks() stepOpt { return func(st *step) { st.blocks = true } }

// runCRCompat runs steps on each queue, in a bubble of its own.
func runCRCompat(t *testing.T, steps []step) {
	for _, impl := range crQueueImpls {
		t.Run(impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newSide(t, impl, "crcompat-"+t.Name())
				synctest.Wait()
				for i, st := range steps {
					q.apply(st.op)
					if st.op.kind == opSleep {
						time.Sleep(st.op.after)
					}
					synctest.Wait()
					at := fmt.Sprintf("step %d, %v", i, st.op)
					g := q.returned()
					switch {
					case st.op.kind == opGet && st.blocks:
						if g != nil {
							t.Fatalf("%s: Get returned %v, controller-runtime's Get blocks", at, g)
						}
					case st.got == nil && g != nil:
						t.Fatalf("%s: a blocked Get returned %v, controller-runtime's still blocks", at, g)
					case st.got != nil && g == nil:
						t.Fatalf("%s: Get blocks, controller-runtime's returns %v", at, st.got)
					case st.got != nil && *g != *st.got:
						t.Fatalf("%s: Get returned %v, controller-runtime's returns %v", at, g, st.got)
					}
					if n := q.q.Len(); n != st.len {
						t.Fatalf("%s: Len() = %d, controller-runtime's is %d", at, n, st.len)
					}
					want := st.depth
					if want == nil {
						want = depth{}
					}
					if d := q.depth(); !maps.Equal(d, want) {
						t.Fatalf("%s: depth by priority %v, controller-runtime's %v", at, d, want)
					}
				}
			})
		})
	}
}

const ms = time.Millisecond

// TestCRCompatReaddWhileInFlight: a key added while it is processed is
// queued at once: Len and the depth count it, and after its Done it comes
// out in the order it was added, before a key added after it.
func TestCRCompatReaddWhileInFlight(t *testing.T) { runCRCompat(t, readdWhileInFlight) }

var readdWhileInFlight = []step{
	s(add("a"), 1, depth{0: 1}),
	s(get(), 0, nil, returns("a", 0)),
	s(add("a"), 1, depth{0: 1}),
	s(add("b"), 2, depth{0: 2}),
	s(get(), 1, depth{0: 1}, returns("b", 0)), // a, first in line, is skipped while in flight
	s(add("c"), 2, depth{0: 2}),
	s(done("a"), 2, depth{0: 2}),
	s(done("b"), 2, depth{0: 2}),
	s(get(), 1, depth{0: 1}, returns("a", 0)), // a was added before c
	s(get(), 0, nil, returns("c", 0)),
}

// TestCRCompatReaddWhileInFlightDepthAtPriority: the re-added key counts in
// the depth at the priority it was re-added with, and a Get skips it, even
// at the highest priority, until its Done.
func TestCRCompatReaddWhileInFlightDepthAtPriority(t *testing.T) {
	runCRCompat(t, readdWhileInFlightDepthAtPriority)
}

var readdWhileInFlightDepthAtPriority = []step{
	s(add("a"), 1, depth{0: 1}),
	s(get(), 0, nil, returns("a", 0)),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(10)}, "a"), 1, depth{10: 1}),
	s(add("b"), 2, depth{10: 1, 0: 1}),
	s(get(), 1, depth{10: 1}, returns("b", 0)),
	s(done("a"), 1, depth{10: 1}),
	s(get(), 0, nil, returns("a", 10)),
}

// TestCRCompatGetWaitsForInFlightKey: Len counts a key re-added while in
// flight, yet Get blocks until the key's Done, and then returns it.
func TestCRCompatGetWaitsForInFlightKey(t *testing.T) { runCRCompat(t, getWaitsForInFlightKey) }

var getWaitsForInFlightKey = []step{
	s(add("a"), 1, depth{0: 1}),
	s(get(), 0, nil, returns("a", 0)),
	s(add("a"), 1, depth{0: 1}),
	s(get(), 1, depth{0: 1}, blocks()),
	s(done("a"), 0, nil, returns("a", 0)),
}

// TestCRCompatReaddWhileInFlightDelayed: a key added with a delay while it
// is processed becomes ready when the delay ends, still in flight: Len and
// the depth count it from then on.
func TestCRCompatReaddWhileInFlightDelayed(t *testing.T) { runCRCompat(t, readdWhileInFlightDelayed) }

var readdWhileInFlightDelayed = []step{
	s(add("a"), 1, depth{0: 1}),
	s(get(), 0, nil, returns("a", 0)),
	s(addAfter("a", 10*ms), 0, nil),
	s(sleep(9*ms), 0, nil),
	s(sleep(1*ms), 1, depth{0: 1}),
	s(add("b"), 2, depth{0: 2}),
	s(done("a"), 2, depth{0: 2}),
	s(get(), 1, depth{0: 1}, returns("a", 0)),
	s(get(), 0, nil, returns("b", 0)),
}

// TestCRCompatFIFOAtOneReadyTime: keys of one priority that become ready at
// the same instant come out in the order they were added.
func TestCRCompatFIFOAtOneReadyTime(t *testing.T) { runCRCompat(t, fifoAtOneReadyTime) }

var fifoAtOneReadyTime = []step{
	s(addOpts(priorityqueue.AddOpts{After: 10 * ms}, "e", "c", "a", "d", "b"), 0, nil),
	s(sleep(9*ms), 0, nil),
	s(sleep(1*ms), 5, depth{0: 5}),
	s(get(), 4, depth{0: 4}, returns("e", 0)),
	s(get(), 3, depth{0: 3}, returns("c", 0)),
	s(get(), 2, depth{0: 2}, returns("a", 0)),
	s(get(), 1, depth{0: 1}, returns("d", 0)),
	s(get(), 0, nil, returns("b", 0)),
}

// TestCRCompatFIFOAtOneReadyTimeByPriority: keys that become ready at the
// same instant come out highest priority first, then in the order they were
// added; the depth counts each at its priority.
func TestCRCompatFIFOAtOneReadyTimeByPriority(t *testing.T) {
	runCRCompat(t, fifoAtOneReadyTimeByPriority)
}

var fifoAtOneReadyTimeByPriority = []step{
	s(addOpts(priorityqueue.AddOpts{After: 10 * ms}, "d", "b"), 0, nil),
	s(addOpts(priorityqueue.AddOpts{After: 10 * ms, Priority: ptr.To(1)}, "e", "a"), 0, nil),
	s(addAfter("c", 10*ms), 0, nil),
	s(sleep(10*ms), 5, depth{1: 2, 0: 3}),
	s(get(), 4, depth{1: 1, 0: 3}, returns("e", 1)),
	s(get(), 3, depth{0: 3}, returns("a", 1)),
	s(get(), 2, depth{0: 2}, returns("d", 0)),
	s(get(), 1, depth{0: 1}, returns("b", 0)),
	s(get(), 0, nil, returns("c", 0)),
}

// TestCRCompatEarlierAfterKeepsPlace: a delayed key added again with a
// shorter delay keeps its place among the keys of its priority: made ready
// at the same instant as a key added after it, it comes out first.
func TestCRCompatEarlierAfterKeepsPlace(t *testing.T) { runCRCompat(t, earlierAfterKeepsPlace) }

var earlierAfterKeepsPlace = []step{
	s(addAfter("a", 20*ms), 0, nil),
	s(addAfter("b", 10*ms), 0, nil),
	s(addAfter("a", 10*ms), 0, nil),
	s(sleep(10*ms), 2, depth{0: 2}),
	s(get(), 1, depth{0: 1}, returns("a", 0)),
	s(get(), 0, nil, returns("b", 0)),
}

// TestCRCompatDelayedReaddKeepsPlace: a delayed key added again without a
// delay becomes ready at once with the place of its first add, before a key
// added (ready) in between.
func TestCRCompatDelayedReaddKeepsPlace(t *testing.T) { runCRCompat(t, delayedReaddKeepsPlace) }

var delayedReaddKeepsPlace = []step{
	s(addAfter("a", 10*ms), 0, nil),
	s(add("b"), 1, depth{0: 1}),
	s(add("a"), 2, depth{0: 2}),
	s(get(), 1, depth{0: 1}, returns("a", 0)),
	s(get(), 0, nil, returns("b", 0)),
	s(sleep(10*ms), 0, nil), // a's first delay ends: nothing left to do
}

// TestCRCompatPriorityRaise: a ready key added at a higher priority moves
// to the end of its new priority; at the same or a lower priority it keeps
// its priority and place.
func TestCRCompatPriorityRaise(t *testing.T) { runCRCompat(t, priorityRaise) }

var priorityRaise = []step{
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(1)}, "a", "b"), 2, depth{1: 2}),
	s(add("c"), 3, depth{1: 2, 0: 1}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(1)}, "c"), 3, depth{1: 3}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(1)}, "a"), 3, depth{1: 3}),
	s(add("b"), 3, depth{1: 3}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(-1)}, "a"), 3, depth{1: 3}),
	s(get(), 2, depth{1: 2}, returns("a", 1)),
	s(get(), 1, depth{1: 1}, returns("b", 1)),
	s(get(), 0, nil, returns("c", 1)),
}

// TestCRCompatPriorityRaiseWhileWaiting: a delayed key raised while it
// waits becomes ready at the new priority; raised by an add without delay,
// it is ready at once at the end of its new priority.
func TestCRCompatPriorityRaiseWhileWaiting(t *testing.T) { runCRCompat(t, priorityRaiseWhileWaiting) }

var priorityRaiseWhileWaiting = []step{
	s(addAfter("a", 10*ms), 0, nil),
	s(addOpts(priorityqueue.AddOpts{After: 20 * ms, Priority: ptr.To(10)}, "a"), 0, nil),
	s(add("b"), 1, depth{0: 1}),
	s(addAfter("c", 50*ms), 1, depth{0: 1}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(10)}, "d"), 2, depth{10: 1, 0: 1}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(10)}, "c"), 3, depth{10: 2, 0: 1}),
	s(sleep(9*ms), 3, depth{10: 2, 0: 1}),
	s(sleep(1*ms), 4, depth{10: 3, 0: 1}),
	s(get(), 3, depth{10: 2, 0: 1}, returns("d", 10)),
	s(get(), 2, depth{10: 1, 0: 1}, returns("c", 10)),
	s(get(), 1, depth{0: 1}, returns("a", 10)),
	s(get(), 0, nil, returns("b", 0)),
	s(sleep(50*ms), 0, nil),
}

// TestCRCompatPriorityRaiseWhileWaitingGoesLast: a delayed key raised
// while it waits takes the end of its new priority, behind a key of that
// priority raised before it, though it was added first.
func TestCRCompatPriorityRaiseWhileWaitingGoesLast(t *testing.T) {
	runCRCompat(t, priorityRaiseWhileWaitingGoesLast)
}

var priorityRaiseWhileWaitingGoesLast = []step{
	s(addAfter("a", 10*ms), 0, nil),
	s(addAfter("b", 10*ms), 0, nil),
	s(addOpts(priorityqueue.AddOpts{After: 10 * ms, Priority: ptr.To(1)}, "b"), 0, nil),
	s(addOpts(priorityqueue.AddOpts{After: 10 * ms, Priority: ptr.To(1)}, "a"), 0, nil),
	s(sleep(10*ms), 2, depth{1: 2}),
	s(get(), 1, depth{1: 1}, returns("b", 1)),
	s(get(), 0, nil, returns("a", 1)),
}

// TestCRCompatRateLimitedAfter: with both RateLimited and After, the
// shorter delay wins; Forget resets the limiter's delay.
func TestCRCompatRateLimitedAfter(t *testing.T) { runCRCompat(t, rateLimitedAfter) }

var rateLimitedAfter = []step{
	// The limiter's first delays are 5ms, then 10ms.
	s(addOpts(priorityqueue.AddOpts{After: 100 * ms, RateLimited: true}, "a"), 0, nil),
	s(addOpts(priorityqueue.AddOpts{After: 1 * ms, RateLimited: true}, "b"), 0, nil),
	s(sleep(1*ms), 1, depth{0: 1}),
	s(sleep(4*ms), 2, depth{0: 2}),
	s(get(), 1, depth{0: 1}, returns("b", 0)),
	s(get(), 0, nil, returns("a", 0)),
	s(done("b"), 0, nil),
	s(done("a"), 0, nil),
	s(addOpts(priorityqueue.AddOpts{After: 20 * ms, RateLimited: true}, "a"), 0, nil),
	s(sleep(9*ms), 0, nil),
	s(sleep(1*ms), 1, depth{0: 1}),
	s(get(), 0, nil, returns("a", 0)),
	s(done("a"), 0, nil),
	s(forget("a"), 0, nil), // back to the limiter's first delay
	s(addRateLimited("a"), 0, nil),
	s(sleep(4*ms), 0, nil),
	s(sleep(1*ms), 1, depth{0: 1}),
	s(get(), 0, nil, returns("a", 0)),
}

// TestCRCompatRateLimitedNegativeAfter: RateLimited with a negative After
// adds at once (controller-runtime takes the limiter's delay only when After
// is 0 or longer), though the limiter still counts the failure.
func TestCRCompatRateLimitedNegativeAfter(t *testing.T) { runCRCompat(t, rateLimitedNegativeAfter) }

var rateLimitedNegativeAfter = []step{
	s(addOpts(priorityqueue.AddOpts{After: -1 * ms, RateLimited: true}, "a"), 1, depth{0: 1}),
	s(get(), 0, nil, returns("a", 0)),
}

// TestCRCompatAfterOfReadyKeyKeepsItReady: a delayed or rate-limited add of
// a ready key leaves it ready, in its place, though a higher priority still
// raises it.
func TestCRCompatAfterOfReadyKeyKeepsItReady(t *testing.T) {
	runCRCompat(t, afterOfReadyKeyKeepsItReady)
}

var afterOfReadyKeyKeepsItReady = []step{
	s(add("a"), 1, depth{0: 1}),
	s(add("b"), 2, depth{0: 2}),
	s(addAfter("a", 10*ms), 2, depth{0: 2}),
	s(addRateLimited("a"), 2, depth{0: 2}),
	s(addOpts(priorityqueue.AddOpts{After: 10 * ms, Priority: ptr.To(1)}, "b"), 2, depth{1: 1, 0: 1}),
	s(get(), 1, depth{0: 1}, returns("b", 1)),
	s(get(), 0, nil, returns("a", 0)),
	s(sleep(10*ms), 0, nil),
}

// TestCRCompatIntPriorities: priorities are Go ints: beyond the int32 range
// they keep their order and come back from GetWithPriority as they were
// given, and the depth counts them apart.
func TestCRCompatIntPriorities(t *testing.T) { runCRCompat(t, intPriorities) }

var intPriorities = []step{
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(math.MaxInt32)}, "a"), 1, depth{math.MaxInt32: 1}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(math.MaxInt32 + 1)}, "b"), 2, depth{math.MaxInt32: 1, math.MaxInt32 + 1: 1}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(1 << 40)}, "c"), 3, depth{math.MaxInt32: 1, math.MaxInt32 + 1: 1, 1 << 40: 1}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(math.MinInt32 - 1)}, "d"), 4, depth{math.MaxInt32: 1, math.MaxInt32 + 1: 1, 1 << 40: 1, math.MinInt32 - 1: 1}),
	s(addOpts(priorityqueue.AddOpts{Priority: ptr.To(-1)}, "e"), 5, depth{math.MaxInt32: 1, math.MaxInt32 + 1: 1, 1 << 40: 1, math.MinInt32 - 1: 1, -1: 1}),
	s(get(), 4, depth{math.MaxInt32: 1, math.MaxInt32 + 1: 1, math.MinInt32 - 1: 1, -1: 1}, returns("c", 1<<40)),
	s(get(), 3, depth{math.MaxInt32: 1, math.MinInt32 - 1: 1, -1: 1}, returns("b", math.MaxInt32+1)),
	s(get(), 2, depth{math.MinInt32 - 1: 1, -1: 1}, returns("a", math.MaxInt32)),
	s(get(), 1, depth{math.MinInt32 - 1: 1}, returns("e", -1)),
	s(get(), 0, nil, returns("d", math.MinInt32-1)),
}

// TestCRCompatShutDown: after ShutDown, Get hands out nothing, even keys
// still ready (which Len goes on counting), and adds are ignored; a Get
// blocked at ShutDown returns.
func TestCRCompatShutDown(t *testing.T) { runCRCompat(t, shutDownSteps) }

var shutDownSteps = []step{
	s(add("a"), 1, depth{0: 1}),
	s(add("b"), 2, depth{0: 2}),
	s(addAfter("c", 10*ms), 2, depth{0: 2}),
	s(get(), 1, depth{0: 1}, returns("a", 0)),
	s(shutDown(), 1, depth{0: 1}),
	s(get(), 1, depth{0: 1}, returnsShutDown()),
	s(add("d"), 1, depth{0: 1}),
	s(sleep(10*ms), 1, depth{0: 1}),
	s(done("a"), 1, depth{0: 1}),
}

// TestCRCompatShutDownWakesGet: a Get blocked on an empty queue returns
// shutdown at ShutDown.
func TestCRCompatShutDownWakesGet(t *testing.T) { runCRCompat(t, shutDownWakesGet) }

var shutDownWakesGet = []step{
	s(get(), 0, nil, blocks()),
	s(shutDown(), 0, nil, returnsShutDown()),
}

// crScenarios are the scenarios above, the seeds of FuzzCRCompat.
var crScenarios = [][]step{
	readdWhileInFlight, readdWhileInFlightDepthAtPriority, getWaitsForInFlightKey,
	readdWhileInFlightDelayed, fifoAtOneReadyTime, fifoAtOneReadyTimeByPriority,
	earlierAfterKeepsPlace, delayedReaddKeepsPlace, priorityRaise,
	priorityRaiseWhileWaiting, priorityRaiseWhileWaitingGoesLast, rateLimitedAfter, rateLimitedNegativeAfter,
	afterOfReadyKeyKeepsItReady, intPriorities, shutDownSteps, shutDownWakesGet,
}
