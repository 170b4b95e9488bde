package scheduler

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m)
}

// t0 is the fake clock's start in every test.
var t0 = testutil.T0

// newFake returns a scheduler of string keys on a fake clock starting at t0.
// The test shuts it down when it ends.
func newFake(t testing.TB, cfg Config[string]) (*Scheduler[string], *testingclock.FakeClock) {
	t.Helper()
	fc := testingclock.NewFakeClock(t0)
	cfg.Clock = fc
	s := New(cfg)
	t.Cleanup(s.ShutDown)
	return s, fc
}

// named is the Config of a timed queue (one that reads the clock).
func named() Config[string] { return Config[string]{Name: "test"} }

// waitTimer waits until the delay loop has set its timer on the fake clock,
// so that a following Step fires it.
func waitTimer(t testing.TB, fc *testingclock.FakeClock) {
	t.Helper()
	testutil.WaitFor(t, "the delay loop's timer", fc.HasWaiters)
}

// cancelled is a context that is already done: GetContext with it never
// blocks, and returns context.Canceled when no key is ready.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// tryGet takes a ready key without blocking; ok is false when none is ready
// (Get would block) or the queue is shut down with none left.
func tryGet[K comparable](t testing.TB, s *Scheduler[K]) (it Item[K], ok bool) {
	t.Helper()
	it, err := s.GetContext(cancelled)
	switch err {
	case nil:
		return it, true
	case context.Canceled, ErrShutDown:
		return it, false
	default:
		t.Fatalf("GetContext: unexpected error %v", err)
		return it, false
	}
}

// mustGet takes a key that must be ready now.
func mustGet[K comparable](t testing.TB, s *Scheduler[K]) Item[K] {
	t.Helper()
	it, ok := tryGet(t, s)
	if !ok {
		t.Fatalf("no key ready (Len %d, Stats %+v)", s.Len(), s.Stats())
	}
	return it
}

// mustGetKey takes a key that must be ready now and must be want.
func mustGetKey[K comparable](t testing.TB, s *Scheduler[K], want K) Item[K] {
	t.Helper()
	it := mustGet(t, s)
	if it.Key != want {
		t.Fatalf("got key %v, want %v", it.Key, want)
	}
	return it
}

// mustBeEmpty checks that no key is ready: Len is 0 and Get would block.
func mustBeEmpty[K comparable](t testing.TB, s *Scheduler[K]) {
	t.Helper()
	if n := s.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
	if it, ok := tryGet(t, s); ok {
		t.Fatalf("got key %v, want none ready", it.Key)
	}
}

// span returns a valid, sampled span context numbered n.
func span(n int) trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	binary.BigEndian.PutUint64(tid[8:], uint64(n)+1)
	tid[0] = 0xab
	binary.BigEndian.PutUint64(sid[:], uint64(n)+1)
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    tid,
		SpanID:     sid,
		TraceFlags: trace.FlagsSampled,
	})
}

// spanCtx returns a context carrying span(n).
func spanCtx(n int) context.Context {
	return trace.ContextWithSpanContext(context.Background(), span(n))
}

func sameSpans(a, b []trace.SpanContext) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// callLog records an Observer's calls as lines, for the tests of the
// optional methods (ChangeDone, NextRun) that check which calls came, and
// in what order.
type callLog = testutil.Log[string]

// recObserver records what the scheduler tells its Observer. Dequeued
// returns a context carrying the span context set for the key with
// processIn, if any, and a marker value.
type recObserver[K comparable] struct {
	mu        sync.Mutex
	processIn map[K]trace.SpanContext
	dequeued  []dequeuedCall[K]
	done      []doneCall[K]
}

type dequeuedCall[K comparable] struct {
	ctx  context.Context // given to Dequeued
	item Item[K]
	ret  context.Context // returned by Dequeued
}

type doneCall[K comparable] struct {
	ctx            context.Context
	key            K
	started, ended time.Time
}

type obsMarker struct{}

func newRecObserver[K comparable]() *recObserver[K] {
	return &recObserver[K]{processIn: make(map[K]trace.SpanContext)}
}

func (o *recObserver[K]) setSpan(key K, sc trace.SpanContext) {
	o.mu.Lock()
	o.processIn[key] = sc
	o.mu.Unlock()
}

func (o *recObserver[K]) Dequeued(ctx context.Context, it *Item[K]) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	ret := context.WithValue(ctx, obsMarker{}, it.Key)
	if sc, ok := o.processIn[it.Key]; ok {
		ret = trace.ContextWithSpanContext(ret, sc)
	}
	o.dequeued = append(o.dequeued, dequeuedCall[K]{ctx: ctx, item: *it, ret: ret})
	return ret
}

func (o *recObserver[K]) Done(ctx context.Context, key K, started, ended time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, doneCall[K]{ctx: ctx, key: key, started: started, ended: ended})
}

func (o *recObserver[K]) calls() ([]dequeuedCall[K], []doneCall[K]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]dequeuedCall[K](nil), o.dequeued...), append([]doneCall[K](nil), o.done...)
}
