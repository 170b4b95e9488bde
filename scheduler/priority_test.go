package scheduler

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func drainKeys(t *testing.T, s *Scheduler[string]) []string {
	t.Helper()
	var got []string
	for s.Len() > 0 {
		k, p, shut := s.GetWithPriority()
		if shut {
			t.Fatal("GetWithPriority reported shutdown")
		}
		got = append(got, k+":"+strconv.Itoa(p))
		s.Done(k)
	}
	return got
}

func TestPriorityOrdering(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		name string
		ops  func(s *Scheduler[string])
		want []string
	}{
		{"higher priority first, FIFO within one", func(s *Scheduler[string]) {
			s.Add("a")
			s.Add("b")
			s.AddWithOptions(bg, AddOptions{Priority: 5}, "c", "d")
		}, []string{"c:5", "d:5", "a:0", "b:0"}},
		{"raising a ready key moves it to the end of its new priority", func(s *Scheduler[string]) {
			s.AddWithOptions(bg, AddOptions{Priority: 5}, "x")
			s.Add("a")
			s.Add("b")
			s.Add("c")
			s.AddWithOptions(bg, AddOptions{Priority: 5}, "b")
		}, []string{"x:5", "b:5", "a:0", "c:0"}},
		{"a lower priority never lowers a pending key", func(s *Scheduler[string]) {
			s.AddWithOptions(bg, AddOptions{Priority: 3}, "a")
			s.Add("b")
			s.Add("a")
			s.AddWithOptions(bg, AddOptions{Priority: -1}, "a")
		}, []string{"a:3", "b:0"}},
		{"negative priorities run last", func(s *Scheduler[string]) {
			s.AddWithOptions(bg, AddOptions{Priority: -100}, "initial")
			s.Add("event")
		}, []string{"event:0", "initial:-100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config[string]{})
			defer s.ShutDown()
			tc.ops(s)
			if got := drainKeys(t, s); !slices.Equal(got, tc.want) {
				t.Errorf("handed out %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPriorityOfDelayedAndHeldKeys(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Unix(0, 0))
	s := New(Config[string]{Clock: fc})
	defer s.ShutDown()
	bg := context.Background()

	s.AddWithOptions(bg, AddOptions{After: time.Second, Priority: 2}, "delayed")
	s.Add("a")
	fc.Step(time.Second)
	if got := drainKeys(t, s); !slices.Equal(got, []string{"delayed:2", "a:0"}) {
		t.Errorf("after the delay: %q", got)
	}

	s.Add("held")
	k, _ := s.Get()
	s.AddWithOptions(bg, AddOptions{Priority: 7}, k) // while processing
	s.Add("b")
	s.Done(k)
	if got := drainKeys(t, s); !slices.Equal(got, []string{"held:7", "b:0"}) {
		t.Errorf("held key: %q", got)
	}
}

func TestPriorityStaleSlotsAreNotCounted(t *testing.T) {
	s := New(Config[string]{Name: "p"})
	defer s.ShutDown()
	bg := context.Background()
	s.Add("a")
	s.Add("b")
	for p := 1; p <= 5; p++ {
		s.AddWithOptions(bg, AddOptions{Priority: p}, "a")
	}
	if n, st := s.Len(), s.Stats(); n != 2 || st.Depth != 2 || st.Coalesced != 5 {
		t.Fatalf("Len %d, Stats %+v: want 2 ready keys and 5 coalesced adds", n, st)
	}
	if got := drainKeys(t, s); !slices.Equal(got, []string{"a:5", "b:0"}) {
		t.Errorf("handed out %q", got)
	}
	// The entry of "a" is recycled with stale slots still pointing to it;
	// reusing it for new keys must not hand anything out twice.
	for i := 0; i < 10; i++ {
		s.Add("c")
		s.Add("d")
		if got := drainKeys(t, s); !slices.Equal(got, []string{"c:0", "d:0"}) {
			t.Fatalf("round %d: handed out %q", i, got)
		}
	}
}

// TestPriorityModel checks random adds with priorities, interleaved with
// gets, against a model: keys come out by priority, highest first, and
// within a priority in the order they became ready at it; each pending key
// exactly once; DepthByPriority agrees with the model after every step, and
// OldestPending is the age of the oldest of the first keys of each priority.
// Half the rounds use more priorities than the queue keeps while empty, so
// that levels are dropped and created again while others hold keys.
func TestPriorityModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 400; round++ {
		s, fc := newFake(t, named())
		type pend struct {
			prio, seq int
			since     time.Duration // since t0, when it became ready
		}
		model := map[string]pend{}
		spread := 4
		if round%2 == 1 {
			spread = 3 * maxIdleLevels
		}
		seq := 0
		var now time.Duration
		for op := 0; op < 80; op++ {
			if rng.IntN(3) == 0 && len(model) > 0 {
				// Get: the model's first key by priority, then order.
				var want string
				for k, p := range model {
					if w, ok := model[want]; !ok || p.prio > w.prio || p.prio == w.prio && p.seq < w.seq {
						want = k
					}
				}
				k, p, _ := s.GetWithPriority()
				if k != want || p != model[want].prio {
					t.Fatalf("round %d op %d: handed out %s:%d, model %s:%d", round, op, k, p, want, model[want].prio)
				}
				delete(model, k)
				s.Done(k)
			} else {
				key := string(rune('a' + rng.IntN(maxIdleLevels-4)))
				prio := rng.IntN(spread) - spread/2
				s.AddWithOptions(context.Background(), AddOptions{Priority: prio}, key)
				seq++
				if p, ok := model[key]; !ok {
					model[key] = pend{prio, seq, now}
				} else if prio > p.prio {
					model[key] = pend{prio, seq, p.since}
				}
			}
			if d := time.Duration(rng.IntN(3)) * time.Millisecond; d > 0 {
				fc.Step(d)
				now += d
			}
			depths := map[int]int{}
			firsts := map[int]pend{}
			for _, p := range model {
				depths[p.prio]++
				if f, ok := firsts[p.prio]; !ok || p.seq < f.seq {
					firsts[p.prio] = p
				}
			}
			var oldest time.Duration
			for _, f := range firsts {
				oldest = max(oldest, now-f.since)
			}
			if got := s.Stats().OldestPending; got != oldest {
				t.Fatalf("round %d op %d: OldestPending %v, model %v", round, op, got, oldest)
			}
			got := s.DepthByPriority(nil)
			if !slices.IsSortedFunc(got, func(a, b PriorityDepth) int { return b.Priority - a.Priority }) {
				t.Fatalf("round %d op %d: DepthByPriority not highest first: %v", round, op, got)
			}
			for _, d := range got {
				if d.Depth != depths[d.Priority] {
					t.Fatalf("round %d op %d: DepthByPriority %v, model %v", round, op, got, depths)
				}
				delete(depths, d.Priority)
			}
			if len(depths) > 0 {
				t.Fatalf("round %d op %d: DepthByPriority %v misses model priorities %v", round, op, got, depths)
			}
			// With fewer keys than the bound, levels never exceed it.
			if len(got) > maxIdleLevels {
				t.Fatalf("round %d op %d: %d levels kept for %d keys", round, op, len(got), len(model))
			}
		}
		s.ShutDown()
	}
}

// TestPriorityDrainedLevelsDropped checks that the levels of drained
// priorities do not pile up: after keys at 1,000 priorities are drained, at
// most maxIdleLevels are kept, and keys at the most recent of them still
// come out in order.
func TestPriorityDrainedLevelsDropped(t *testing.T) {
	s := New(Config[string]{Name: "levels"})
	defer s.ShutDown()
	bg := context.Background()
	const n = 1000
	for p := range n {
		s.AddWithOptions(bg, AddOptions{Priority: p}, "k"+strconv.Itoa(p))
	}
	if got := len(s.DepthByPriority(nil)); got != n {
		t.Fatalf("%d levels for keys at %d priorities", got, n)
	}
	drainKeys(t, s)
	got := s.DepthByPriority(nil)
	if len(got) > maxIdleLevels {
		t.Fatalf("%d levels kept after draining keys at %d priorities, want at most %d", len(got), n, maxIdleLevels)
	}
	// The most recently drained priorities are the ones kept, at 0.
	for i, d := range got {
		if d.Depth != 0 || d.Priority != len(got)-1-i {
			t.Fatalf("after the drain: %v, want priorities %d down to 0 at depth 0", got, len(got)-1)
		}
	}
	s.AddWithOptions(bg, AddOptions{Priority: 3}, "b")
	s.AddWithOptions(bg, AddOptions{Priority: 5000}, "a")
	s.Add("c")
	if got := drainKeys(t, s); !slices.Equal(got, []string{"a:5000", "b:3", "c:0"}) {
		t.Errorf("handed out %q", got)
	}
	if st := s.Stats(); st.Depth != 0 || st.OldestPending != 0 {
		t.Errorf("drained queue: %+v", st)
	}
}

// TestPriorityRaiseReleasesMemory checks that raising the priority of ready
// keys leaves nothing alive once the queue is drained: the growth of the heap
// in use from before the queue was made to after its drain is the same,
// within 2 MiB, with and without the raise (the stale
// slots of the raise used to keep every dropped entry and its key alive:
// some 30 MiB here).
func TestPriorityRaiseReleasesMemory(t *testing.T) {
	const n = 200_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("default/object-%d", i)
	}
	heapInUse := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// heapAfterDrain returns the growth of the heap in use from before the
	// queue is made to after it is drained, the queue still alive.
	heapAfterDrain := func(raise bool) int64 {
		before := heapInUse()
		s := New(Config[string]{})
		defer s.ShutDown()
		for _, k := range keys {
			s.Add(k)
		}
		if raise {
			// As controller-runtime's handler raises the keys of its
			// initial list from -100 to 0 when they change.
			for _, k := range keys {
				s.AddWithOptions(context.Background(), AddOptions{Priority: 1}, k)
			}
		}
		for range keys {
			k, _ := s.Get()
			s.Done(k)
		}
		if st := s.Stats(); st.Depth != 0 || st.InFlight != 0 {
			t.Fatalf("not drained: %+v", st)
		}
		after := heapInUse()
		runtime.KeepAlive(s)
		runtime.KeepAlive(keys)
		return int64(after) - int64(before)
	}
	const slack = 2 << 20
	plain := heapAfterDrain(false)
	raised := heapAfterDrain(true)
	t.Logf("heap in use after the drain: %+.1f MiB without the raise, %+.1f MiB with it", float64(plain)/(1<<20), float64(raised)/(1<<20))
	if raised > plain+slack {
		t.Errorf("after raising and draining %d keys, %+.1f MiB in use, against %+.1f MiB without the raise: more than 2 MiB kept",
			n, float64(raised)/(1<<20), float64(plain)/(1<<20))
	}
}

func TestDepthByPriority(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Unix(0, 0))
	s := New(Config[string]{Clock: fc})
	defer s.ShutDown()
	bg := context.Background()

	if got := s.DepthByPriority(nil); len(got) != 0 {
		t.Fatalf("empty queue: %v", got)
	}
	s.Add("a")
	s.AddWithOptions(bg, AddOptions{Priority: -100}, "l1", "l2", "l3")
	s.AddWithOptions(bg, AddOptions{Priority: 5}, "h")
	s.AddWithOptions(bg, AddOptions{Priority: 5, After: time.Second}, "later")
	want := []PriorityDepth{{5, 1}, {0, 1}, {-100, 3}}
	if got := s.DepthByPriority(nil); !slices.Equal(got, want) {
		t.Fatalf("DepthByPriority = %v, want %v (the delayed key at no priority)", got, want)
	}

	// Raising a ready key moves it; a due key counts without a Get.
	s.AddWithOptions(bg, AddOptions{Priority: 5}, "l1")
	fc.Step(time.Second)
	want = []PriorityDepth{{5, 3}, {0, 1}, {-100, 2}}
	if got := s.DepthByPriority(nil); !slices.Equal(got, want) {
		t.Fatalf("after a raise and the delay: %v, want %v", got, want)
	}
	sum := 0
	for _, d := range want {
		sum += d.Depth
	}
	if st := s.Stats(); st.Depth != sum {
		t.Errorf("Stats().Depth = %d, want the sum %d", st.Depth, sum)
	}

	// Drained priorities stay, at 0; the slice passed in is reused.
	drainKeys(t, s)
	buf := make([]PriorityDepth, 0, 8)
	got := s.DepthByPriority(buf)
	want = []PriorityDepth{{5, 0}, {0, 0}, {-100, 0}}
	if !slices.Equal(got, want) || &got[0] != &buf[:1][0] {
		t.Errorf("drained: %v, want %v in the caller's slice", got, want)
	}
}

func TestPriorityClamped(t *testing.T) {
	s := New(Config[string]{})
	defer s.ShutDown()
	bg := context.Background()
	s.AddWithOptions(bg, AddOptions{Priority: math.MinInt}, "lowest")
	s.AddWithOptions(bg, AddOptions{Priority: -100}, "low")
	s.AddWithOptions(bg, AddOptions{Priority: math.MaxInt}, "highest")
	s.AddWithOptions(bg, AddOptions{Priority: 1 << 20}, "high")
	want := []string{
		"highest:" + strconv.Itoa(math.MaxInt32), "high:1048576", "low:-100",
		"lowest:" + strconv.Itoa(math.MinInt32),
	}
	if got := drainKeys(t, s); !slices.Equal(got, want) {
		t.Errorf("handed out %q, want %q", got, want)
	}
}

// drainPriorities adds n keys to a new scheduler, at n distinct priorities
// or (distinct false) all at priority 0, and takes them all out (Get, Done).
func drainPriorities(t *testing.T, n int, distinct bool) *Scheduler[int] {
	t.Helper()
	s := New(Config[int]{})
	for i := range n {
		p := 0
		if distinct {
			p = i
		}
		s.AddWithOptions(context.Background(), AddOptions{Priority: p}, i)
	}
	for range n {
		k, shutdown := s.Get()
		if shutdown {
			t.Fatal("shut down")
		}
		s.Done(k)
	}
	if st := s.Stats(); st.Depth != 0 || st.InFlight != 0 {
		t.Fatalf("not drained: %+v", st)
	}
	return s
}

// TestDrainedPrioritiesReleaseTheirMemory: a queue that held 200,000 keys
// at as many priorities keeps, once drained, no more than a queue that held
// them at one priority, give or take a few levels: the levels' map and heaps are
// rebuilt small (before, the map's buckets and the heaps' arrays kept 11.6
// MiB, sized by the peak).
func TestDrainedPrioritiesReleaseTheirMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 priorities")
	}
	const n = 200_000
	s := drainPriorities(t, n, true)
	r := &s.ready
	if c := cap(r.byPrio.nodes); c > shrinkAbove {
		t.Errorf("the priority heap keeps %d slots for %d levels with ready keys", c, len(r.byPrio.nodes))
	}
	if c := cap(r.byAge.nodes); c > shrinkAbove {
		t.Errorf("the age heap keeps %d slots for %d levels with ready keys", c, len(r.byAge.nodes))
	}
	if len(r.levels) > maxIdleLevels || r.levelsPeak > 4*shrinkAbove {
		t.Errorf("%d levels kept, the map sized for %d: want at most %d, and a map sized for at most %d", len(r.levels), r.levelsPeak, maxIdleLevels, 4*shrinkAbove)
	}

	// What the process keeps, measured: the drained queue against one that
	// held as many keys at one priority (the keys' own map is sized by their
	// peak in both).
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	one := drainPriorities(t, n, false)
	withOne := heap()
	many := drainPriorities(t, n, true)
	withMany := heap()
	runtime.KeepAlive(one)
	runtime.KeepAlive(many)
	extra := int64(withMany-withOne) - int64(withOne-base)
	t.Logf("kept after draining %d keys: %d KiB more at %d priorities than at one", n, extra>>10, n)
	if extra > 1<<20 {
		t.Errorf("a drained queue of %d priorities keeps %d KiB more than one of a single priority, want under 1 MiB", n, extra>>10)
	}
}
