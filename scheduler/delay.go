package scheduler

import (
	"time"

	"k8s.io/utils/clock"
)

// delayLocked puts e into the delay heap and makes sure the delay loop wakes
// up in time for it.
func (s *Scheduler[K]) delayLocked(e *entry[K]) {
	e.place = inDelay
	s.delayed.push(e, s.nextOrder())
	s.armLocked(e.readyAt)
}

// armLocked makes sure the delay loop wakes up by the ready time t,
// starting the loop on the first delayed key.
func (s *Scheduler[K]) armLocked(t int64) {
	if !s.loopStarted {
		s.loopStarted = true
		s.wg.Add(1)
		go s.delayLoop()
	}
	if t < s.armed {
		s.armed = t
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// promoteLocked moves every delayed key whose ready time has come to the
// ready FIFO, in ready-time order.
func (s *Scheduler[K]) promoteLocked(now int64) {
	n := 0
	for len(s.delayed) > 0 && s.delayed[0].at <= now {
		e := s.delayed.remove(0)
		s.ready.push(e, s.nextOrder())
		n++
	}
	switch {
	case n == 1:
		s.cond.Signal()
	case n > 1:
		s.cond.Broadcast()
	}
}

// delayLoop is the queue's one goroutine for delayed keys: it promotes
// the keys that are due, then sleeps on one timer until the next ready time,
// a kick from armLocked for an earlier one, or ShutDown.
func (s *Scheduler[K]) delayLoop() {
	defer s.wg.Done()
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		if s.shuttingDown {
			s.mu.Unlock()
			return
		}
		wait := time.Duration(-1)
		s.armed = never
		if len(s.delayed) > 0 {
			now := s.now()
			s.promoteLocked(now)
			if len(s.delayed) > 0 {
				s.armed = s.delayed[0].at
				wait = time.Duration(s.armed - now)
			}
		}
		s.mu.Unlock()

		var fired <-chan time.Time
		if wait >= 0 {
			if timer == nil {
				timer = s.clock.NewTimer(wait)
			} else {
				// Drain a tick that fired while the loop woke for a kick:
				// testing.FakeClock.Step blocks, holding the clock, on a
				// re-armed timer whose channel is full.
				if !timer.Stop() {
					select {
					case <-timer.C():
					default:
					}
				}
				timer.Reset(wait)
			}
			fired = timer.C()
		} else if timer != nil {
			timer.Stop()
		}
		select {
		case <-fired:
		case <-s.kick:
		case <-s.stop:
			return
		}
	}
}
