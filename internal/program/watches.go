package program

import (
	"sync/atomic"
	"time"
)

// Watches counts the watch streams of a program's instrumented clients:
// package kubeclient's WatchStats. The stream's own state (ended, stale) is
// its caller's, which orders the calls of one stream.
type Watches struct {
	opened, ended       atomic.Uint64
	open, stale         atomic.Int64
	lastData, lastEnded atomic.Int64 // UnixNano; 0: never
}

// WatchCounts are the counts of Watches at one reading.
type WatchCounts struct {
	Open, Stale         int
	Opened, Ended       uint64
	LastData, LastEnded time.Time
}

// Opened counts a stream established, open.
func (w *Watches) Opened() {
	w.opened.Add(1)
	w.open.Add(1)
}

// Data records that a stream received data at now (UnixNano).
func (w *Watches) Data(now int64) { w.lastData.Store(now) }

// Stale moves an open stream to stale (stale true) or back (false).
func (w *Watches) Stale(stale bool) {
	if stale {
		w.open.Add(-1)
		w.stale.Add(1)
		return
	}
	w.stale.Add(-1)
	w.open.Add(1)
}

// Ended counts a stream ended; stale says whether it was stale.
func (w *Watches) Ended(stale bool) {
	if stale {
		w.stale.Add(-1)
	} else {
		w.open.Add(-1)
	}
	w.lastEnded.Store(time.Now().UnixNano())
	w.ended.Add(1)
}

// Read returns the counts now.
func (w *Watches) Read() WatchCounts {
	c := WatchCounts{Open: int(max(0, w.open.Load())), Stale: int(max(0, w.stale.Load())), Opened: w.opened.Load(), Ended: w.ended.Load()}
	if ns := w.lastData.Load(); ns != 0 {
		c.LastData = time.Unix(0, ns)
	}
	if ns := w.lastEnded.Load(); ns != 0 {
		c.LastEnded = time.Unix(0, ns)
	}
	return c
}
