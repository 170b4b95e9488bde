package scheduler

import (
	"context"
	"testing"
	"time"
)

func TestObserver(t *testing.T) {
	s, fc := newFake(t, named())
	obs := newRecObserver[string]()
	s.SetObserver(obs)

	type ctxKey struct{}
	getCtx := context.WithValue(context.Background(), ctxKey{}, "worker")

	s.AddContext(spanCtx(1), "a")
	s.Add("b")
	fc.Step(time.Second)

	// GetContext: Dequeued gets the worker's context and the item.
	itA, err := s.GetContext(getCtx)
	if err != nil {
		t.Fatal(err)
	}
	// Get: Dequeued gets context.Background.
	keyB, _ := s.Get()
	deq, done := obs.calls()
	if len(deq) != 2 || len(done) != 0 {
		t.Fatalf("Dequeued, Done called %d, %d times; want 2, 0", len(deq), len(done))
	}
	if deq[0].ctx.Value(ctxKey{}) != "worker" {
		t.Errorf("Dequeued got a context other than GetContext's")
	}
	if deq[1].ctx != context.Background() {
		t.Errorf("Dequeued for Get got %v, want context.Background()", deq[1].ctx)
	}
	checkItem(t, deq[0].item, Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: t0, DequeuedAt: t0.Add(time.Second), Origin: span(1)})
	checkItem(t, deq[1].item, Item[string]{Key: keyB, EnqueuedAt: t0, ReadyAt: t0, DequeuedAt: t0.Add(time.Second)})
	// Item.Context is what Dequeued returned.
	if itA.Context() != deq[0].ret {
		t.Errorf("Item.Context() is not the context Dequeued returned")
	}

	fc.Step(2 * time.Second)
	s.Done("a")
	s.Done("a") // not processed any more: no second call
	s.Done("unknown")
	fc.Step(time.Second)
	s.Done("b")

	_, done = obs.calls()
	if len(done) != 2 {
		t.Fatalf("Done called %d times, want 2", len(done))
	}
	for i, want := range []doneCall[string]{
		{ctx: deq[0].ret, key: "a", started: t0.Add(time.Second), ended: t0.Add(3 * time.Second)},
		{ctx: deq[1].ret, key: "b", started: t0.Add(time.Second), ended: t0.Add(4 * time.Second)},
	} {
		got := done[i]
		if got.ctx != want.ctx || got.key != want.key || !got.started.Equal(want.started) || !got.ended.Equal(want.ended) {
			t.Errorf("Done call %d = %s [t0+%v, t0+%v], want %s [t0+%v, t0+%v] in Dequeued's context",
				i, got.key, got.started.Sub(t0), got.ended.Sub(t0), want.key, want.started.Sub(t0), want.ended.Sub(t0))
		}
	}
}

func TestObserverOncePerRun(t *testing.T) {
	s, fc := newFake(t, named())
	obs := newRecObserver[string]()
	s.SetObserver(obs)
	s.Add("a")
	mustGetKey(t, s, "a")
	s.Add("a") // held
	fc.Step(time.Second)
	s.Done("a")
	mustGetKey(t, s, "a")
	s.Done("a")
	deq, done := obs.calls()
	if len(deq) != 2 || len(done) != 2 {
		t.Fatalf("Dequeued, Done called %d, %d times; want 2, 2", len(deq), len(done))
	}
	if deq[1].item.Reason != WaitHeld {
		t.Errorf("second run Reason = %v, want held", deq[1].item.Reason)
	}
	// No Get when none is ready, no call.
	if _, ok := tryGet(t, s); ok {
		t.Fatal("got a key from an empty queue")
	}
	if deq, _ := obs.calls(); len(deq) != 2 {
		t.Errorf("Dequeued called %d times, want 2", len(deq))
	}
}

func TestObserverTimesAnUnnamedQueue(t *testing.T) {
	// An Observer makes an unnamed queue read the clock.
	s, fc := newFake(t, Config[string]{})
	obs := newRecObserver[string]()
	s.SetObserver(obs)
	s.Add("a")
	fc.Step(time.Second)
	if st := s.Stats(); st.OldestPending != time.Second {
		t.Errorf("OldestPending = %v, want 1s", st.OldestPending)
	}
	it := mustGetKey(t, s, "a")
	checkItem(t, it, Item[string]{Key: "a", EnqueuedAt: t0, ReadyAt: t0, DequeuedAt: t0.Add(time.Second)})
	fc.Step(time.Second)
	if st := s.Stats(); st.LongestRunning != time.Second || st.UnfinishedWork != time.Second {
		t.Errorf("LongestRunning, UnfinishedWork = %v, %v; want 1s, 1s", st.LongestRunning, st.UnfinishedWork)
	}
	if st := s.Stats(); st.Finished != 0 || st.Busy != time.Second {
		t.Errorf("Finished, Busy in flight = %d, %v; want 0, 1s (the run in flight)", st.Finished, st.Busy)
	}
	s.Done("a")
	_, done := obs.calls()
	if len(done) != 1 || !done[0].ended.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("Done calls = %+v, want one ending at t0+2s", done)
	}
	if st := s.Stats(); st.Finished != 1 || st.Busy != time.Second {
		t.Errorf("Finished, Busy = %d, %v; want 1, 1s", st.Finished, st.Busy)
	}

	// Removing it makes the queue untimed again.
	s.SetObserver(nil)
	s.Add("b")
	fc.Step(time.Second)
	if st := s.Stats(); st.OldestPending != 0 {
		t.Errorf("OldestPending without Observer = %v, want 0", st.OldestPending)
	}
	it = mustGetKey(t, s, "b")
	if !it.EnqueuedAt.IsZero() || !it.DequeuedAt.IsZero() {
		t.Errorf("times without Observer = %v, %v; want zero", it.EnqueuedAt, it.DequeuedAt)
	}
	s.Done("b")
	if deq, done := obs.calls(); len(deq) != 1 || len(done) != 1 {
		t.Errorf("removed Observer was called: %d, %d", len(deq), len(done))
	}
	// Finished counts every run; Busy only the timed one ("a", 1s): "b"
	// had no start, and "c", taken untimed and done timed, has none either.
	s.Add("c")
	mustGetKey(t, s, "c")
	s.SetObserver(newRecObserver[string]())
	fc.Step(time.Second)
	s.Done("c")
	if st := s.Stats(); st.Finished != 3 || st.Busy != time.Second {
		t.Errorf("Finished, Busy = %d, %v; want 3, 1s", st.Finished, st.Busy)
	}
}

func TestProcessingContext(t *testing.T) {
	s := New(Config[string]{Name: "pc"})
	defer s.ShutDown()
	type ctxKey struct{}
	s.SetObserver(valueObserver{key: ctxKey{}})
	if _, ok := s.ProcessingContext("a"); ok {
		t.Fatal("ProcessingContext of an unknown key reports true")
	}
	s.Add("a")
	if _, ok := s.ProcessingContext("a"); ok {
		t.Fatal("ProcessingContext of a queued key reports true")
	}
	k, _ := s.Get()
	ctx, ok := s.ProcessingContext(k)
	if !ok || ctx.Value(ctxKey{}) != "a" {
		t.Fatalf("ProcessingContext(%q) = %v, %v; want the Observer's context", k, ctx, ok)
	}
	s.Done(k)
	if _, ok := s.ProcessingContext(k); ok {
		t.Fatal("ProcessingContext after Done reports true")
	}
}

// valueObserver returns a context carrying the key under its context key.
type valueObserver struct{ key any }

func (o valueObserver) Dequeued(ctx context.Context, it *Item[string]) context.Context {
	return context.WithValue(ctx, o.key, it.Key)
}
func (valueObserver) Done(context.Context, string, time.Time, time.Time) {}

// blockingObserver is a recObserver whose Dequeued waits, after it has
// recorded the call, until release is closed; entered is closed when it
// starts waiting.
type blockingObserver struct {
	*recObserver[string]
	entered, release chan struct{}
}

func (o *blockingObserver) Dequeued(ctx context.Context, it *Item[string]) context.Context {
	ret := o.recObserver.Dequeued(ctx, it)
	close(o.entered)
	<-o.release
	return ret
}

// A Done that comes (from another goroutine) while the Observer's Dequeued
// still runs is reported to the Observer once, by the worker, after
// Dequeued returns, with the context Dequeued returned and the time of the
// Done; the key's next run is not disturbed.
func TestObserverDoneWhileDequeuedRuns(t *testing.T) {
	s, fc := newFake(t, named())
	obs := &blockingObserver{recObserver: newRecObserver[string](), entered: make(chan struct{}), release: make(chan struct{})}
	s.SetObserver(obs)
	s.Add("a")
	fc.Step(time.Second)
	got := make(chan Item[string])
	go func() {
		it, err := s.GetContext(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- it
	}()
	<-obs.entered
	// While Dequeued runs, the run has no context yet.
	if ctx, ok := s.ProcessingContext("a"); ok {
		t.Errorf("ProcessingContext during Dequeued = %v, true; want nil, false", ctx)
	}
	fc.Step(2 * time.Second)
	s.Done("a") // early: Dequeued has not returned
	if _, done := obs.calls(); len(done) != 0 {
		t.Fatalf("Done reported %d times before Dequeued returned, want 0", len(done))
	}
	s.Add("a") // a new run of the key, not held by the old one
	fc.Step(time.Second)
	close(obs.release)
	it := <-got
	deq, done := obs.calls()
	if len(done) != 1 {
		t.Fatalf("Done reported %d times, want 1", len(done))
	}
	want := doneCall[string]{ctx: deq[0].ret, key: "a", started: t0.Add(time.Second), ended: t0.Add(3 * time.Second)}
	if d := done[0]; d.ctx != want.ctx || d.key != want.key || !d.started.Equal(want.started) || !d.ended.Equal(want.ended) {
		t.Errorf("Done = %s [t0+%v, t0+%v], want %s [t0+%v, t0+%v] in Dequeued's context",
			d.key, d.started.Sub(t0), d.ended.Sub(t0), want.key, want.started.Sub(t0), want.ended.Sub(t0))
	}
	if it.Context() != deq[0].ret {
		t.Errorf("Item.Context() is not the context Dequeued returned")
	}
	// The new run is ready and is reported on its own.
	obs.release = nil
	s.SetObserver(obs.recObserver)
	it2 := mustGetKey(t, s, "a")
	if !it2.EnqueuedAt.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("second run EnqueuedAt = t0+%v, want t0+3s", it2.EnqueuedAt.Sub(t0))
	}
	s.Done("a")
	if _, done := obs.calls(); len(done) != 2 {
		t.Errorf("Done reported %d times after the second run, want 2", len(done))
	}
	if st := s.Stats(); st.InFlight != 0 || st.Depth != 0 {
		t.Errorf("Stats = %+v, want nothing in flight or ready", st)
	}
}

// TestSetObserverTypedNil: a typed nil Observer removes the Observer, as
// nil does, rather than having its methods called on a nil receiver.
func TestSetObserverTypedNil(t *testing.T) {
	s, _ := newFake(t, named())
	s.SetObserver(newRecObserver[string]())
	var typedNil *recObserver[string]
	s.SetObserver(typedNil)
	if s.Observer() != nil {
		t.Errorf("Observer() = %v after a typed nil, want nil", s.Observer())
	}
	s.Add("a")
	key, _ := s.Get()
	s.Done(key)
}
