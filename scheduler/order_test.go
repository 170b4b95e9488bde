package scheduler

import (
	"context"
	"testing"
	"time"
)

// TestOrderByAddReaddWhileProcessing: with
// OrderByAdd a key added while it is processed is in line at
// once (Len, Depth, DepthByPriority count it; Held does not), is not handed
// out before its Done, and then comes in the order of its add; its wait runs
// from its add, with reason WaitHeld. Without it, client-go's queue: held out
// of sight, then behind the keys added meanwhile.
func TestOrderByAddReaddWhileProcessing(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cr         bool
		depth      int // Len with a processed and re-added, b and c ready
		held       int
		afterDone  []string
		enqueuedAt time.Duration // of a's second run, from t0
	}{
		{"client-go", false, 2, 1, []string{"b", "c", "a"}, 3 * time.Second},
		// b is taken while a is processed, then added again: behind c.
		{"controller-runtime", true, 3, 0, []string{"a", "c", "b"}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := named()
			cfg.OrderByAdd = tc.cr
			s, fc := newFake(t, cfg)
			s.Add("a")
			mustGetKey(t, s, "a")
			fc.Step(time.Second)
			s.AddWithOptions(context.Background(), AddOptions{Priority: 1}, "a") // while processed
			fc.Step(time.Second)
			s.AddWithOptions(context.Background(), AddOptions{Priority: 1}, "b")
			s.AddWithOptions(context.Background(), AddOptions{Priority: 1}, "c")
			if n := s.Len(); n != tc.depth {
				t.Errorf("Len() = %d, want %d", n, tc.depth)
			}
			if st := s.Stats(); st.Depth != tc.depth || st.Held != tc.held {
				t.Errorf("Stats() Depth %d, Held %d, want %d and %d", st.Depth, st.Held, tc.depth, tc.held)
			}
			// Priority 0, drained, is kept at 0.
			if d := s.DepthByPriority(nil); len(d) != 2 || d[0] != (PriorityDepth{Priority: 1, Depth: tc.depth}) || d[1].Depth != 0 {
				t.Errorf("DepthByPriority = %+v, want %d at priority 1", d, tc.depth)
			}
			if tc.cr {
				// a is ready but processed: b comes first, a keeps its place.
				mustGetKey(t, s, "b")
				s.Done("b")
				s.AddWithOptions(context.Background(), AddOptions{Priority: 1}, "b") // behind a and c
			}
			fc.Step(time.Second)
			s.Done("a")
			for _, key := range tc.afterDone {
				it := mustGetKey(t, s, key)
				if key == "a" {
					if got := it.EnqueuedAt.Sub(t0); tc.cr && got != tc.enqueuedAt {
						t.Errorf("a's second run enqueued at t0+%v, want t0+%v (its add)", got, tc.enqueuedAt)
					}
					if it.Reason != WaitHeld || !it.ReadyAt.Equal(t0.Add(3*time.Second)) {
						t.Errorf("a's second run: reason %v, ready at t0+%v; want held, ready at its previous run's end (t0+3s)", it.Reason, it.ReadyAt.Sub(t0))
					}
				}
				s.Done(key)
			}
			mustBeEmpty(t, s)
		})
	}
}

// TestOrderByAddDelayedReaddKeepsPlace: with
// OrderByAdd a delayed key added again with no delay becomes
// ready in the place of its first add; without it, at the end.
func TestOrderByAddDelayedReaddKeepsPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		cr   bool
		want []string
	}{
		{"client-go", false, []string{"b", "c", "a"}},
		{"controller-runtime", true, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := named()
			cfg.OrderByAdd = tc.cr
			s, _ := newFake(t, cfg)
			s.AddAfter("a", time.Hour)
			s.Add("b")
			s.Add("c")
			s.Add("a")
			for _, key := range tc.want {
				mustGetKey(t, s, key)
				s.Done(key)
			}
			mustBeEmpty(t, s)
		})
	}
}

// TestPriorityRaiseWhileDelayedGoesLast: keys due at one instant come in
// the order of their adds, but a key whose priority was raised while it
// waited comes after the keys already at that priority, as a ready key
// whose priority is raised goes to the end of its new priority.
func TestPriorityRaiseWhileDelayedGoesLast(t *testing.T) {
	s, fc := newFake(t, named())
	bg := context.Background()
	s.AddAfter("a", time.Second)
	s.AddAfter("b", time.Second)
	s.AddWithOptions(bg, AddOptions{After: time.Second, Priority: 1}, "b")
	s.AddWithOptions(bg, AddOptions{After: time.Second, Priority: 1}, "a")
	fc.Step(time.Second)
	for _, key := range []string{"b", "a"} {
		mustGetKey(t, s, key)
		s.Done(key)
	}
}
