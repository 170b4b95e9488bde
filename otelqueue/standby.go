package otelqueue

import (
	"errors"
	"sync/atomic"
	"time"
)

// WithStandby makes the queue standby until active is closed or a worker
// takes a key, whichever comes first: a replica whose workers may not run
// yet, such as a controller-runtime manager that has not won its leader
// election (pass mgr.Elected()). A warm standby
// (controller-runtime's EnableWarmup) starts its sources and fills its
// queue meanwhile, and its keys wait for leadership, not for a worker.
//
// While the queue is standby, the gauge workqueue.standby is 1 (0 once
// active; a queue without WithStandby has none), Instrumentation.Standby
// reports true, and an adaptive pool decides nothing. A key that became
// ready before the queue became active has its queue wait counted from that
// moment: the histogram and the adaptive pool see the wait for a worker
// only, the gauge workqueue.oldest_pending_item is 0 while standby and no
// more than the time since the queue became active after, and the key's
// "queued" span, which still starts at its enqueue, has an "active" event
// where the standby ended. Stats, the scheduler's own, still counts from
// when the keys became ready. The recording rules give no class,
// recommendation or alert for a standby queue.
//
// A nil channel is refused: without one the queue is active from the
// start, which is the default.
func WithStandby(active <-chan struct{}) Option {
	return optionFunc(func(c *config) {
		if active == nil {
			c.errs = append(c.errs, errors.New("otelqueue: WithStandby needs the channel closed when the queue becomes active (controller-runtime's mgr.Elected()), got nil; leave the option out for a queue active from the start"))
			return
		}
		c.standby = active
	})
}

// standby is a queue's standby state: standby until activeAt is set.
type standby struct {
	activeAt atomic.Int64     // UnixNano of the scheduler clock's time it became active; 0: standby
	active   <-chan struct{}  // closed when the queue becomes active (WithStandby)
	now      func() time.Time // the scheduler's clock
}

// newStandby returns the state of a queue standby until active is closed,
// whose clock is now.
func newStandby(active <-chan struct{}, now func() time.Time) *standby {
	s := &standby{active: active, now: now}
	select {
	case <-active:
		// Closed already (a queue instrumented again after its election):
		// active from the start, and no wait is cut at the instrumentation.
		s.activeAt.Store(1)
	default:
	}
	return s
}

// poll reports whether the queue is active, activating it at the clock's
// now when its channel is closed and the watcher has not recorded it yet.
func (s *standby) poll() bool {
	if s.activeAt.Load() != 0 {
		return true
	}
	select {
	case <-s.active:
		s.activate(s.now())
		return true
	default:
		return false
	}
}

// isStandby reports whether the queue is still standby; a nil standby (no
// WithStandby) never is.
func (s *standby) isStandby() bool { return s != nil && !s.poll() }

// activeSince returns when the queue became active, and false while it is
// standby or for a nil standby.
func (s *standby) activeSince() (time.Time, bool) {
	if s == nil || !s.poll() {
		return time.Time{}, false
	}
	return time.Unix(0, s.activeAt.Load()), true
}

// activate records that the queue became active at now; only the first
// call counts.
func (s *standby) activate(now time.Time) {
	at := now.UnixNano()
	if at == 0 {
		at = 1 // the zero value means standby
	}
	s.activeAt.CompareAndSwap(0, at)
}

// wait returns the wait for a worker of a key ready at ready and handed
// out at dequeued, and the time of it before the queue became active
// (zero when none: also for a nil standby) with that moment: the standby
// part is not waiting for a worker. A key handed out while the queue is
// standby makes it active at dequeued: a worker runs. controller-runtime
// starts a new leader's workers before it closes mgr.Elected(), and on a
// real API server each of 4 workers took its first key before the close,
// which counted the 20 s of standby as those keys' wait.
func (s *standby) wait(ready, dequeued time.Time) (wait, standbyPart time.Duration, activeAt time.Time) {
	if s != nil && !s.poll() {
		s.activate(dequeued)
	}
	if at, ok := s.activeSince(); ok && ready.Before(at) && !dequeued.Before(at) {
		return dequeued.Sub(at), at.Sub(ready), at
	}
	return dequeued.Sub(ready), 0, time.Time{}
}

// oldest returns the wait for a worker of the oldest ready key, which has
// been ready for raw at now: none while the queue is standby, and no longer
// than it has been active since; raw for a nil standby.
func (s *standby) oldest(raw time.Duration, now time.Time) time.Duration {
	if s == nil {
		return raw
	}
	at, ok := s.activeSince()
	if !ok {
		return 0
	}
	return min(raw, max(0, now.Sub(at)))
}

// watch activates s when its channel is closed, until stop (the
// Instrumentation stopped), shutDown (the queue shut down) or gone (its
// scheduler collected) is closed: a queue that is never elected must not
// keep it forever.
func (s *standby) watch(stop, shutDown, gone <-chan struct{}) {
	select {
	case <-s.active:
		s.activate(s.now())
	case <-stop:
	case <-shutDown:
	case <-gone:
	}
}
