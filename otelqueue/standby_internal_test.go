package otelqueue

import (
	"testing"
	"time"
)

// TestStandbyActivatedByTheFirstDequeue: the election that closes the
// channel also starts the workers, and one may take a key before the
// watcher records the activation. The key's wait then counts from that
// dequeue, not from when it became ready during the standby (on a real API
// server, the first key of each of 4 workers had counted 20 s of standby).
func TestStandbyActivatedByTheFirstDequeue(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	now := t0
	active := make(chan struct{})
	s := newStandby(active, func() time.Time { return now })
	ready := t0.Add(-20 * time.Second)
	if !s.isStandby() {
		t.Fatal("standby before the channel is closed: want true")
	}
	if w, part, _ := s.wait(ready, now); w != 20*time.Second || part != 0 {
		t.Errorf("a key handed out while standby: wait %v (standby part %v), want its whole 20s wait: no activation known", w, part)
	}
	close(active) // no watcher runs
	now = t0.Add(time.Millisecond)
	w, part, at := s.wait(ready, now)
	if w != 0 || part != 20*time.Second+time.Millisecond || !at.Equal(now) {
		t.Errorf("the first key after the election, before any watcher: wait %v, standby part %v, active at %v; want 0, 20.001s, %v", w, part, at, now)
	}
	// Later readings keep the first activation.
	now = t0.Add(time.Second)
	if got, ok := s.activeSince(); !ok || !got.Equal(t0.Add(time.Millisecond)) {
		t.Errorf("active since %v (%v), want %v", got, ok, t0.Add(time.Millisecond))
	}
	var none *standby
	if none.isStandby() {
		t.Error("a nil standby is standby")
	}
	if o := none.oldest(time.Minute, now); o != time.Minute {
		t.Errorf("a nil standby's oldest: %v, want the raw minute", o)
	}
}
