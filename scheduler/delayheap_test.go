package scheduler

import (
	"testing"
	"time"
)

// TestDelayedOrder checks that delayed keys become ready in ready-time order,
// not in the order they were added.
func TestDelayedOrder(t *testing.T) {
	s, fc := newFake(t, named())
	s.AddAfter("a", 3*time.Second)
	s.AddAfter("b", time.Second)
	s.AddAfter("c", 2*time.Second)
	s.AddAfter("d", 4*time.Second)
	if st := s.Stats(); st.Delayed != 4 {
		t.Fatalf("Delayed = %d, want 4", st.Delayed)
	}
	fc.Step(3 * time.Second)
	if n := s.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	// Ready in ready-time order.
	for _, want := range []string{"b", "c", "a"} {
		it := mustGetKey(t, s, want)
		s.Done(it.Key)
	}
	mustBeEmpty(t, s)
	fc.Step(time.Second)
	mustGetKey(t, s, "d")
	s.Done("d")
}
