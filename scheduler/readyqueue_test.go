package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// TestPriorityStaleSlotsAreNotCounted checks that raising the priority of a
// ready key, which leaves a stale slot at each level it leaves, counts and
// hands out the key once, and that the stale slots of a recycled entry hand
// out nothing.
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
