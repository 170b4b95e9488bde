package scheduler

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestConcurrentProducersAndWorkers runs many producers and workers on the
// real clock with short delays. It checks that no key is ever processed by
// two workers at once, that every key is processed after its last add, and
// that ShutDownWithDrain returns.
func TestConcurrentProducersAndWorkers(t *testing.T) {
	const (
		keys      = 64
		producers = 6
		workers   = 6
		opsEach   = 4000
	)
	s := New(Config[int]{
		Name:        "concurrent",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[int](50*time.Microsecond, 2*time.Millisecond),
		MaxLinks:    3,
	})
	defer s.ShutDown()
	obs := newRecObserver[int]()
	for k := range keys {
		obs.setSpan(k, span(k))
	}
	s.SetObserver(obs)

	// version[k] is bumped before every add of k; processed[k] is the
	// highest version a worker saw after taking k. A key whose last add was
	// lost ends with processed < version.
	var (
		mu        sync.Mutex
		version   [keys]int
		processed [keys]int
		running   [keys]bool
		overlaps  atomic.Int64
		runs      atomic.Int64
	)
	bump := func(k int) {
		mu.Lock()
		version[k]++
		mu.Unlock()
	}
	var producing atomic.Bool
	producing.Store(true)

	process := func(k int, ctx context.Context, rng *rand.Rand) {
		mu.Lock()
		if running[k] {
			overlaps.Add(1)
		}
		running[k] = true
		processed[k] = max(processed[k], version[k])
		mu.Unlock()
		runs.Add(1)
		if rng.IntN(4) == 0 {
			runtime.Gosched()
		}
		// Sometimes fail and retry, sometimes add again while processing.
		switch n := rng.IntN(10); {
		case n == 0 && producing.Load():
			bump(k)
			s.AddRateLimitedContext(ctx, k)
		case n == 1 && producing.Load():
			bump(k)
			s.Add(k)
		default:
			s.Forget(k)
		}
		mu.Lock()
		running[k] = false
		mu.Unlock()
		s.Done(k)
	}

	var workersWG sync.WaitGroup
	for w := range workers {
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				if w%2 == 0 {
					k, shutdown := s.Get()
					if shutdown {
						return
					}
					process(k, context.Background(), rng)
					continue
				}
				it, err := s.GetContext(context.Background())
				if errors.Is(err, ErrShutDown) {
					return
				}
				if err != nil {
					t.Errorf("GetContext: %v", err)
					return
				}
				process(it.Key, it.Context(), rng)
			}
		}()
	}

	var producersWG sync.WaitGroup
	for p := range producers {
		producersWG.Add(1)
		go func() {
			defer producersWG.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 2))
			for i := range opsEach {
				k := rng.IntN(keys)
				bump(k)
				ctx := spanCtx(p*opsEach + i)
				switch rng.IntN(6) {
				case 0:
					s.Add(k)
				case 1:
					s.AddContext(ctx, k)
				case 2:
					s.AddAfter(k, time.Duration(rng.IntN(2000))*time.Microsecond)
				case 3:
					s.AddAfterContext(ctx, k, time.Duration(rng.IntN(500))*time.Microsecond-100*time.Microsecond)
				case 4:
					s.AddRateLimited(k)
				case 5:
					s.AddRateLimitedContext(ctx, k)
				}
				if i%64 == 0 {
					_ = s.Len()
					_ = s.Stats()
					// Reads the context a worker publishes without the lock.
					_, _ = s.ProcessingContext(k)
				}
				// Let the workers keep up, so that adds meet keys in every
				// state rather than coalescing into a few runs.
				runtime.Gosched()
			}
		}()
	}
	producersWG.Wait()
	producing.Store(false)

	// Every key gets processed after its last add.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		var behind []int
		for k := range keys {
			if processed[k] < version[k] {
				behind = append(behind, k)
			}
		}
		mu.Unlock()
		if len(behind) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys never processed after their last add: %v (Stats %+v)", behind, s.Stats())
		}
		time.Sleep(time.Millisecond)
	}

	drained := make(chan struct{})
	go func() {
		s.ShutDownWithDrain()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		s.ShutDown()
		t.Fatal("ShutDownWithDrain did not return")
	}
	workersWG.Wait()

	if n := overlaps.Load(); n != 0 {
		t.Errorf("a key was processed by two workers at once %d times", n)
	}
	st := s.Stats()
	if st.InFlight != 0 || st.Held != 0 || st.Depth != 0 {
		t.Errorf("Stats after drain = %+v, want nothing in flight, held or ready", st)
	}
	deq, done := obs.calls()
	if int64(len(deq)) != runs.Load() || len(done) != len(deq) {
		t.Errorf("Observer: %d Dequeued, %d Done for %d runs", len(deq), len(done), runs.Load())
	}
	t.Logf("runs %d, %+v", runs.Load(), st)
}

// pairingObserver counts, per context it returned from Dequeued, the Done
// calls made with it; Dequeued yields now and then, so that Dones from
// other goroutines often come while it runs.
type pairingObserver struct {
	mu      sync.Mutex
	dones   map[context.Context]int
	unknown int // Done with a context Dequeued did not return
	n       int
}

type runMarker struct{}

func (o *pairingObserver) Dequeued(ctx context.Context, _ *Item[int]) context.Context {
	o.mu.Lock()
	o.n++
	n := o.n
	ret := context.WithValue(ctx, runMarker{}, n)
	o.dones[ret] = 0
	o.mu.Unlock()
	if n%3 == 0 {
		runtime.Gosched()
	}
	return ret
}

func (o *pairingObserver) Done(ctx context.Context, _ int, started, ended time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.dones[ctx]; !ok {
		o.unknown++
		return
	}
	o.dones[ctx]++
}

// TestConcurrentDoneFromOtherGoroutines runs workers while other goroutines
// call Done for random keys (a misuse: Done of a key they did not get), so
// that some Dones come while the Observer's Dequeued runs. Under the race
// detector, it checks that the handoff of the run's context is race free and
// that the Observer sees exactly one Done for every Dequeued.
func TestConcurrentDoneFromOtherGoroutines(t *testing.T) {
	const (
		keys    = 8
		workers = 4
		rogues  = 2
		adds    = 20000
	)
	s := New(Config[int]{Name: "rogue-done"})
	obs := &pairingObserver{dones: map[context.Context]int{}}
	s.SetObserver(obs)

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, shutdown := s.Get()
				if shutdown {
					return
				}
				runtime.Gosched()
				s.Done(k)
			}
		}()
	}
	stop := make(chan struct{})
	var rogueWG sync.WaitGroup
	for r := range rogues {
		rogueWG.Add(1)
		go func() {
			defer rogueWG.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.Done(rng.IntN(keys))
				_, _ = s.ProcessingContext(rng.IntN(keys))
				s.AddRateLimited(rng.IntN(keys)) // reads the run's context
			}
		}()
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range adds {
		s.Add(rng.IntN(keys))
	}
	close(stop)
	rogueWG.Wait()
	s.ShutDownWithDrain()
	wg.Wait()

	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.unknown != 0 {
		t.Errorf("%d Done calls with a context Dequeued did not return", obs.unknown)
	}
	for ctx, n := range obs.dones {
		if n != 1 {
			t.Errorf("run %v: %d Done calls, want 1", ctx.Value(runMarker{}), n)
		}
	}
	if st := s.Stats(); st.InFlight != 0 {
		t.Errorf("Stats after drain = %+v, want nothing in flight", st)
	}
	t.Logf("%d runs", len(obs.dones))
}
