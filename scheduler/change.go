package scheduler

import (
	"context"
	"time"
)

// A change is what a controller acts on: an add that comes from an event
// (any add but a requeue's and a backoff's, see Trigger) opens one for its
// key, at the add's time, unless one is open already; the run that takes
// the key takes its open change; a run that ends with no rate-limited add of
// its key while it ran (the reconcile neither failed nor asked for a
// requeue) closes it, and a run that failed hands it on to the retry. So
// the time from a change to the end of the run that closed it holds the
// waits, the backoffs and the failed attempts between: how long after a
// change the controller had acted on it, the number users put in their
// SLOs. A requeue's run (RequeueAfter, AddAfter) acts on no change of its
// own: a polling controller's time between polls is no change's.
//
// The scheduler keeps changes only for an Observer that asks for them with
// the optional methods of changeObserver. A change costs a byte of the
// key's entry, and 8 bytes of its run's extras when it opened after the
// run's first add or was handed on by a failure. The scheduler reports
// each closed change with ChangeDone, just before the Observer's Done of
// the run that closed it.

// changeObserver is an Observer with the optional methods that ask for
// changes (see Observer): ObservesChanges, read at SetObserver, says
// whether to keep them; ChangeDone reports one closed at ended, opened at
// changed, in the context of the run that closed it.
type changeObserver[K comparable] interface {
	ObservesChanges() bool
	ChangeDone(ctx context.Context, key K, changed, ended time.Time)
}

// changeState says whether a key's pending run has a change to act on, and
// where its opening time is kept: the entry's enqueued time when the add
// that started the run opened it (the common case, which costs no more
// memory), else its extras' changeAt.
type changeState uint8

const (
	changeNone changeState = iota
	changeAtEnqueued
	changeInExtras
)

// changeAt returns when e's change opened; e has one.
func (e *entry[K]) changeAt() int64 {
	if e.change == changeInExtras {
		return e.extrasOrNil().changeAt
	}
	return e.enqueued
}

// openChange gives e's pending run a change opened at t.
func (e *entry[K]) openChange(t int64) {
	if t == e.enqueued {
		e.change = changeAtEnqueued
		return
	}
	e.ensureExtras().changeAt = t
	e.change = changeInExtras
}

// observesChanges reports whether obs asks for changes.
func observesChanges[K comparable](obs Observer[K]) bool {
	c, ok := obs.(changeObserver[K])
	return ok && c.ObservesChanges()
}

// noteChangeLocked applies an add of kind for trigger at now to e's
// changes: a rate-limited add marks the run in flight failed and hands its
// change to the pending run; an event's add opens a change unless one is
// open.
func (s *Scheduler[K]) noteChangeLocked(e *entry[K], kind addKind, trigger Trigger, now int64) {
	if kind == addRateLimited {
		if p := e.running(); p != nil {
			p.failed = true
			if p.changeOpen && (e.change == changeNone || p.changeAt < e.changeAt()) {
				e.openChange(p.changeAt)
			}
		}
		return
	}
	if trigger == TriggerRequeueAfter || trigger == TriggerBackoff || e.change != changeNone {
		return
	}
	e.openChange(now)
}

// failRunningLocked marks key's run in flight failed: a rate-limited add
// the queue drops because it shuts down still says the run failed, so that
// its change is not reported closed.
func (s *Scheduler[K]) failRunningLocked(key K) {
	if !s.changes {
		return
	}
	if e, ok := s.entries[key]; ok {
		if p := e.running(); p != nil {
			p.failed = true
		}
	}
}

// takeChange moves e's open change, if any, to its run p, which starts
// (before resetRun clears e's extras).
func takeChange[K comparable](e *entry[K], p *proc[K]) {
	p.changeOpen, p.failed = e.change != changeNone, false
	if p.changeOpen {
		p.changeAt = e.changeAt()
	}
	e.change = changeNone
}
