package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// changeObs records the changes a scheduler closes, and the order of its
// ChangeDone and Done calls.
type changeObs struct {
	*recObserver[string]
	on      bool
	callLog // "change <key> <changed> <ended>" and "done <key>"
}

func (o *changeObs) ObservesChanges() bool { return o.on }

func (o *changeObs) ChangeDone(_ context.Context, key string, changed, ended time.Time) {
	o.Add("change " + key + " " + changed.Sub(t0).String() + " " + ended.Sub(t0).String())
}

func (o *changeObs) Done(ctx context.Context, key string, started, ended time.Time) {
	o.Add("done " + key)
	o.recObserver.Done(ctx, key, started, ended)
}

// TestChanges: a change opens at its event's add and closes at the end of
// the run that succeeds, retries and backoffs included; a requeue's run
// closes none; a change added while a run is in flight is the next run's;
// coalesced changes count from the first.
func TestChanges(t *testing.T) {
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	obs := &changeObs{recObserver: newRecObserver[string](), on: true}
	s.SetObserver(obs)
	ctx := context.Background()
	update := AddOptions{Trigger: TriggerUpdate}
	run := func(key string, d time.Duration, during func()) {
		t.Helper()
		mustGetKey(t, s, key)
		fc.Step(d)
		if during != nil {
			during()
		}
		s.Done(key)
	}

	// One change, one run: 2 s of wait, 1 s of work.
	s.AddWithOptions(ctx, update, "a")
	fc.Step(2 * time.Second)
	run("a", time.Second, nil)
	want := []string{"change a 0s 3s", "done a"}
	if got := obs.Take(); !slices.Equal(got, want) {
		t.Fatalf("one change: %q, want %q", got, want)
	}

	// A change that fails twice: closed by the third run, from the first
	// add (t0+3s), backoffs included.
	s.AddWithOptions(ctx, update, "b")
	run("b", time.Second, func() { s.AddRateLimited("b") })
	fc.Step(time.Second) // the backoff
	run("b", time.Second, func() { s.AddRateLimited("b") })
	fc.Step(2 * time.Second) // the second backoff
	run("b", time.Second, nil)
	want = []string{"done b", "done b", "change b 3s 9s", "done b"}
	if got := obs.Take(); !slices.Equal(got, want) {
		t.Fatalf("a change retried: %q, want %q", got, want)
	}

	// A polling controller: the requeue's run acts on no change.
	s.AddAfter("c", time.Second)
	fc.Step(time.Second)
	run("c", time.Second, func() { s.AddAfter("c", time.Second) })
	if got := obs.Take(); !slices.Equal(got, []string{"done c"}) {
		t.Fatalf("a requeue's run: %q, want no change", got)
	}
	fc.Step(time.Second)
	run("c", 0, nil)
	obs.Take()

	// Two changes coalesced count from the first; a change added while the
	// run is in flight is the next run's.
	at := fc.Since(t0)
	s.AddWithOptions(ctx, update, "d")
	fc.Step(time.Second)
	s.AddWithOptions(ctx, update, "d")
	mustGetKey(t, s, "d")
	fc.Step(time.Second)
	s.AddWithOptions(ctx, update, "d") // held
	fc.Step(time.Second)
	s.Done("d")
	run("d", time.Second, nil)
	want = []string{
		"change d " + at.String() + " " + (at + 3*time.Second).String(), "done d",
		"change d " + (at + 2*time.Second).String() + " " + (at + 4*time.Second).String(), "done d",
	}
	if got := obs.Take(); !slices.Equal(got, want) {
		t.Fatalf("coalesced and held changes: %q, want %q", got, want)
	}

	// A failed run whose retry is merged into a change added meanwhile:
	// the earlier change counts.
	at = fc.Since(t0)
	s.AddWithOptions(ctx, update, "e")
	mustGetKey(t, s, "e")
	fc.Step(time.Second)
	s.AddWithOptions(ctx, update, "e") // a second change, held
	s.AddRateLimited("e")              // the run fails
	s.Done("e")
	fc.Step(time.Second)
	run("e", time.Second, nil)
	want = []string{"done e", "change e " + at.String() + " " + (at + 3*time.Second).String(), "done e"}
	if got := obs.Take(); !slices.Equal(got, want) {
		t.Fatalf("a failure with a change held: %q, want %q", got, want)
	}
}

// TestChangesOff: an Observer that does not ask for changes gets no
// ChangeDone, even with the method.
func TestChangesOff(t *testing.T) {
	s, fc := newFake(t, named())
	obs := &changeObs{recObserver: newRecObserver[string]()}
	s.SetObserver(obs)
	s.AddWithOptions(context.Background(), AddOptions{Trigger: TriggerCreate}, "a")
	mustGetKey(t, s, "a")
	fc.Step(time.Second)
	s.Done("a")
	if got := obs.Take(); !slices.Equal(got, []string{"done a"}) {
		t.Fatalf("calls %q, want only Done", got)
	}
}

// blockingChangeObs is a changeObs whose Dequeued waits until release is
// closed, after closing entered.
type blockingChangeObs struct {
	*changeObs
	entered, release chan struct{}
}

func (o *blockingChangeObs) Dequeued(ctx context.Context, it *Item[string]) context.Context {
	ret := o.changeObs.Dequeued(ctx, it)
	close(o.entered)
	<-o.release
	return ret
}

// TestChangeDoneWhileDequeuedRuns: a Done that comes while the Observer's
// Dequeued still runs reports the change the run closed, once, before its
// Done, when the worker reports that Done.
func TestChangeDoneWhileDequeuedRuns(t *testing.T) {
	s, fc := newFake(t, named())
	obs := &blockingChangeObs{changeObs: &changeObs{recObserver: newRecObserver[string](), on: true},
		entered: make(chan struct{}), release: make(chan struct{})}
	s.SetObserver(obs)
	s.AddWithOptions(context.Background(), AddOptions{Trigger: TriggerCreate}, "a")
	fc.Step(time.Second)
	got := make(chan error)
	go func() {
		_, err := s.GetContext(context.Background())
		got <- err
	}()
	<-obs.entered
	fc.Step(2 * time.Second)
	s.Done("a") // early: Dequeued has not returned
	if calls := obs.Take(); len(calls) != 0 {
		t.Fatalf("calls before Dequeued returned: %q, want none", calls)
	}
	close(obs.release)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if calls, want := obs.Take(), []string{"change a 0s 3s", "done a"}; !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}

// TestChangeFailedAtShutDown: a run whose rate-limited add the queue drops
// because it shuts down still failed: its change is not reported closed.
func TestChangeFailedAtShutDown(t *testing.T) {
	s, fc := newFake(t, named())
	obs := &changeObs{recObserver: newRecObserver[string](), on: true}
	s.SetObserver(obs)
	s.AddWithOptions(context.Background(), AddOptions{Trigger: TriggerUpdate}, "a", "b")
	mustGetKey(t, s, "a")
	mustGetKey(t, s, "b")
	fc.Step(time.Second)
	s.ShutDown()
	s.AddRateLimited("a")
	s.AddWithOptions(context.Background(), AddOptions{RateLimited: true}, "b")
	s.Done("a")
	s.Done("b")
	if got, want := obs.Take(), []string{"done a", "done b"}; !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q: failed runs close no change", got, want)
	}
}
