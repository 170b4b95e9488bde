package scheduler

import (
	"context"
	"math"
	"math/rand/v2"
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

func TestPriorityFullIntRange(t *testing.T) {
	s := New(Config[string]{})
	defer s.ShutDown()
	bg := context.Background()
	s.AddWithOptions(bg, AddOptions{Priority: math.MinInt}, "lowest")
	s.AddWithOptions(bg, AddOptions{Priority: math.MinInt32 - 1}, "below-int32")
	s.AddWithOptions(bg, AddOptions{Priority: math.MinInt32}, "int32-min")
	s.AddWithOptions(bg, AddOptions{Priority: -100}, "low")
	s.AddWithOptions(bg, AddOptions{Priority: math.MaxInt}, "highest")
	s.AddWithOptions(bg, AddOptions{Priority: math.MaxInt32 + 1}, "above-int32")
	s.AddWithOptions(bg, AddOptions{Priority: math.MaxInt32}, "int32-max")
	s.AddWithOptions(bg, AddOptions{Priority: 1 << 20}, "high")
	// A pending key raised from within int32 to beyond it, and back down
	// (ignored: the highest priority stays).
	s.AddAfter("raised", time.Hour)
	s.AddWithOptions(bg, AddOptions{Priority: 1 << 40}, "raised")
	s.AddWithOptions(bg, AddOptions{Priority: 7}, "raised")
	want := []string{
		"highest:" + strconv.Itoa(math.MaxInt), "raised:" + strconv.Itoa(1<<40),
		"above-int32:" + strconv.Itoa(math.MaxInt32+1), "int32-max:" + strconv.Itoa(math.MaxInt32),
		"high:1048576", "low:-100", "int32-min:" + strconv.Itoa(math.MinInt32),
		"below-int32:" + strconv.Itoa(math.MinInt32-1), "lowest:" + strconv.Itoa(math.MinInt),
	}
	depth := s.DepthByPriority(nil)
	if len(depth) != len(want) || depth[0].Priority != math.MaxInt || depth[len(depth)-1].Priority != math.MinInt {
		t.Errorf("DepthByPriority = %+v, want %d priorities from math.MaxInt to math.MinInt", depth, len(want))
	}
	if got := drainKeys(t, s); !slices.Equal(got, want) {
		t.Errorf("handed out %q, want %q", got, want)
	}
}
