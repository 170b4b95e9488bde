package scheduler

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/schedhooks"
)

// durObserver is an Observer that is also a schedhooks.DurationObserver
// (taking that path when only is set), and records what it is told.
type durObserver struct {
	only                     bool
	mu                       sync.Mutex
	waits                    []schedhooks.Wait
	works                    []time.Duration
	ended                    []time.Time
	dequeued, done           atomic.Int64
	waitedCalls, workedCalls atomic.Int64
}

func (o *durObserver) Dequeued(ctx context.Context, _ *Item[string]) context.Context {
	o.dequeued.Add(1)
	return ctx
}

func (o *durObserver) Done(context.Context, string, time.Time, time.Time) { o.done.Add(1) }

func (o *durObserver) DurationsOnly() bool { return o.only }

func (o *durObserver) Waited(w schedhooks.Wait) {
	o.waitedCalls.Add(1)
	o.mu.Lock()
	o.waits = append(o.waits, w)
	o.mu.Unlock()
}

func (o *durObserver) Worked(work time.Duration, ended time.Time) {
	o.workedCalls.Add(1)
	o.mu.Lock()
	o.works = append(o.works, work)
	o.ended = append(o.ended, ended)
	o.mu.Unlock()
}

// TestDurationObserver: an Observer whose DurationsOnly is true is told of
// each run by Waited (the wait from the ready time, the priority and the
// reason) and Worked (the work and the end), never by Dequeued and Done;
// one whose DurationsOnly is false, by Dequeued and Done only.
func TestDurationObserver(t *testing.T) {
	s, fc := newFake(t, named())
	obs := &durObserver{only: true}
	s.SetObserver(obs)
	s.Add("a")
	s.AddAfter("b", 2*time.Second)
	s.AddWithOptions(context.Background(), AddOptions{Priority: 5}, "c")
	waitTimer(t, fc)
	fc.Step(3 * time.Second)
	for _, want := range []string{"c", "a", "b"} {
		it, err := s.GetContext(context.Background())
		if err != nil || it.Key != want {
			t.Fatalf("GetContext = %q, %v; want %q", it.Key, err, want)
		}
		if it.DequeuedAt.IsZero() || it.DequeuedAt.Before(it.ReadyAt) {
			t.Errorf("%s: Item times not filled: %+v", want, it)
		}
		fc.Step(time.Second)
		s.Done(want)
	}
	want := []schedhooks.Wait{
		{Wait: 3 * time.Second, Priority: 5, Reason: uint8(WaitImmediate)},
		{Wait: 4 * time.Second, Reason: uint8(WaitImmediate)},
		{Wait: 3 * time.Second, Reason: uint8(WaitDelayed)}, // ready at 2s, taken at 5s
	}
	obs.mu.Lock()
	for i, w := range want {
		if i >= len(obs.waits) || obs.waits[i] != w {
			t.Errorf("Waited calls %+v, want %+v", obs.waits, want)
			break
		}
	}
	for i, w := range obs.works {
		if w != time.Second || !obs.ended[i].Equal(t0.Add(time.Duration(4+i)*time.Second)) {
			t.Errorf("Worked #%d: %v ending %v, want 1s ending %v", i, w, obs.ended[i], t0.Add(time.Duration(4+i)*time.Second))
		}
	}
	obs.mu.Unlock()
	if n, d := obs.dequeued.Load(), obs.done.Load(); n != 0 || d != 0 || len(obs.works) != 3 {
		t.Errorf("Dequeued %d, Done %d, Worked %d times; want 0, 0, 3", n, d, len(obs.works))
	}

	for _, c := range []struct {
		name  string
		other Observer[string]
		d     *durObserver
	}{
		{"DurationsOnly false", &durObserver{}, nil},
		{"observing changes", &changeDurObserver{durObserver{only: true}}, nil},
	} {
		switch o := c.other.(type) {
		case *durObserver:
			c.d = o
		case *changeDurObserver:
			c.d = &o.durObserver
		}
		s.SetObserver(c.other)
		s.Add("d")
		k, _ := s.Get()
		s.Done(k)
		if n, d, w := c.d.dequeued.Load(), c.d.done.Load(), c.d.waitedCalls.Load()+c.d.workedCalls.Load(); n != 1 || d != 1 || w != 0 {
			t.Errorf("%s: Dequeued %d, Done %d, Waited and Worked %d times; want 1, 1, 0", c.name, n, d, w)
		}
	}
}

// changeDurObserver is a durObserver that keeps changes: the scheduler
// makes ChangeDone from Done's report, so it takes the Observer's path.
type changeDurObserver struct{ durObserver }

func (o *changeDurObserver) ObservesChanges() bool { return true }

func (o *changeDurObserver) ChangeDone(context.Context, string, time.Time, time.Time) {}

// nextObserver records Done and NextRun.
type nextObserver struct {
	recObserver[string]
	next []time.Duration
}

func (o *nextObserver) NextRun(_ context.Context, _ string, ended, next time.Time, _ Trigger) {
	o.mu.Lock()
	o.next = append(o.next, next.Sub(ended))
	o.mu.Unlock()
}

// TestDurationObserverReplaced: a run a DurationObserver was told of, done
// after an Observer of the other path replaced it, gets that one's Done
// (and NextRun for the key's next run), with the run's start and context.
func TestDurationObserverReplaced(t *testing.T) {
	s, fc := newFake(t, named())
	s.SetObserver(&durObserver{only: true})
	s.Add("a")
	type ctxKey struct{}
	it, err := s.GetContext(context.WithValue(context.Background(), ctxKey{}, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	obs := &nextObserver{recObserver: *newRecObserver[string]()}
	s.SetObserver(obs)
	s.AddAfter("a", 2*time.Second) // runs again 2s after its Done
	fc.Step(time.Second)
	s.Done(it.Key)
	_, done := obs.calls()
	if len(done) != 1 || done[0].ctx.Value(ctxKey{}) != "worker" || !done[0].started.Equal(t0) || done[0].ended.Sub(done[0].started) != time.Second {
		t.Fatalf("Done calls %+v, want one from %v for 1s in the worker's context", done, t0)
	}
	if len(obs.next) != 1 || obs.next[0] != time.Second {
		t.Errorf("NextRun in %v, want [1s] (added for 2s, 1s before the Done)", obs.next)
	}
}

// TestDurationObserverConcurrent runs workers and goroutines that call Done
// for keys they did not get (a misuse) on the durations-only path: under
// the race detector, every run handed out is told of once by Waited and
// once by Worked.
func TestDurationObserverConcurrent(t *testing.T) {
	const keys, workers, rogues, adds = 8, 4, 2, 20000
	s := New(Config[string]{Name: "durations"})
	obs := &durObserver{only: true}
	s.SetObserver(obs)
	var runs atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k, shutdown := s.Get()
				if shutdown {
					return
				}
				runs.Add(1)
				s.Done(k)
			}
		})
	}
	stop := make(chan struct{})
	var rogueWG sync.WaitGroup
	for r := range rogues {
		rogueWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 5))
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := string(rune('a' + rng.IntN(keys)))
				s.Done(k)
				_, _ = s.ProcessingContext(k)
			}
		})
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range adds {
		s.Add(string(rune('a' + rng.IntN(keys))))
	}
	close(stop)
	rogueWG.Wait()
	s.ShutDownWithDrain()
	wg.Wait()
	if w, d := obs.waitedCalls.Load(), obs.workedCalls.Load(); w != runs.Load() || d != w {
		t.Errorf("Waited %d, Worked %d times for %d runs; want one of each per run", w, d, runs.Load())
	}
	if n := obs.dequeued.Load() + obs.done.Load(); n != 0 {
		t.Errorf("Dequeued and Done called %d times on the durations-only path", n)
	}
}
