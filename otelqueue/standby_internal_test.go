package otelqueue

import (
	"testing"
	"time"
)

// TestStandbyActivatedByTheFirstDequeue: controller-runtime starts a new
// leader's workers before it closes mgr.Elected(), and the election's
// close may come before the watcher records it. Either way a key handed
// out makes the queue active: its wait counts from that dequeue, not from
// when it became ready during the standby (on a real API server, the
// first key of each of 4 workers had counted 20 s of standby).
func TestStandbyActivatedByTheFirstDequeue(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	now := t0
	active := make(chan struct{})
	s := newStandby(active, func() time.Time { return now })
	ready := t0.Add(-20 * time.Second)
	if !s.isStandby() {
		t.Fatal("standby before the channel is closed: want true")
	}
	// The workers run before the channel is closed.
	now = t0.Add(time.Millisecond)
	w, part, at := s.wait(ready, now)
	if w != 0 || part != 20*time.Second+time.Millisecond || !at.Equal(now) || s.isStandby() {
		t.Errorf("the first key a worker takes, the channel still open: wait %v, standby part %v, active at %v, standby %v; want 0, 20.001s, %v, false", w, part, at, s.isStandby(), now)
	}
	// A second key, ready before the first dequeue: from it.
	now = t0.Add(3 * time.Millisecond)
	if w, part, _ := s.wait(ready, now); w != 2*time.Millisecond || part != 20*time.Second+time.Millisecond {
		t.Errorf("the second key: wait %v, standby part %v; want 2ms and 20.001s", w, part)
	}
	close(active) // later: the first activation holds
	if got, ok := s.activeSince(); !ok || !got.Equal(t0.Add(time.Millisecond)) {
		t.Errorf("active since %v (%v), want %v", got, ok, t0.Add(time.Millisecond))
	}

	// The channel closed, no watcher run yet: the poll sees it.
	active2 := make(chan struct{})
	s2 := newStandby(active2, func() time.Time { return now })
	close(active2)
	if s2.isStandby() {
		t.Error("the channel closed: still standby")
	}
	if got, ok := s2.activeSince(); !ok || !got.Equal(now) {
		t.Errorf("active since %v (%v), want %v", got, ok, now)
	}
	var none *standby
	if none.isStandby() {
		t.Error("a nil standby is standby")
	}
	if o := none.oldest(time.Minute, now); o != time.Minute {
		t.Errorf("a nil standby's oldest: %v, want the raw minute", o)
	}
}
