package scheduler

import (
	"context"
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

// TestPriorityModel checks random adds with priorities against a model:
// keys come out by priority, highest first, and within a priority in the
// order they became ready at it; each pending key exactly once.
func TestPriorityModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 200; round++ {
		s := New(Config[string]{})
		type pend struct {
			prio, seq int
		}
		model := map[string]pend{}
		seq := 0
		for op := 0; op < 40; op++ {
			key := string(rune('a' + rng.IntN(8)))
			prio := rng.IntN(4) - 1
			s.AddWithOptions(context.Background(), AddOptions{Priority: prio}, key)
			seq++
			if p, ok := model[key]; !ok {
				model[key] = pend{prio, seq}
			} else if prio > p.prio {
				model[key] = pend{prio, seq}
			}
		}
		var want []string
		for k := range model {
			want = append(want, k)
		}
		slices.SortFunc(want, func(a, b string) int {
			pa, pb := model[a], model[b]
			if pa.prio != pb.prio {
				return pb.prio - pa.prio
			}
			return pa.seq - pb.seq
		})
		var got []string
		for s.Len() > 0 {
			k, p, _ := s.GetWithPriority()
			if p != model[k].prio {
				t.Fatalf("round %d: %s handed out with priority %d, model %d", round, k, p, model[k].prio)
			}
			got = append(got, k)
			s.Done(k)
		}
		s.ShutDown()
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: handed out %q, model %q", round, got, want)
		}
	}
}
