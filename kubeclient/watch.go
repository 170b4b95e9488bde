package kubeclient

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// WatchStats are the process's watch streams of the Kubernetes API, those of
// every client built from an instrumented config (the informers' above
// all): what tells a controller that cannot see changes from an idle one.
// An idle controller's informers hold their watches open, and the API
// server sends bookmarks on them; a blind one has none open while its
// reflectors wait out their backoff (after the API server restarted, or
// while a watch keeps failing: a missing RBAC rule, a network policy), and
// its queue reads empty and idle all the same.
type WatchStats struct {
	// Open is the watch streams open now: established (2xx) and not yet
	// ended or closed.
	Open int
	// Opened is the watch streams established so far; Ended those that
	// ended since (closed by the client, or ended by the server or the
	// network).
	Opened, Ended uint64
	// LastData is when a watch stream last received data (an event or a
	// bookmark), zero before any did; LastEnded when one last ended.
	LastData, LastEnded time.Time
}

// bgCtx is the context of the watch counter's adds: a stream's end is
// not its request's.
var bgCtx = context.Background()

// watches are the process's counts: WatchStats.
var watches struct {
	opened, ended       atomic.Uint64
	lastData, lastEnded atomic.Int64 // UnixNano; 0: never
}

// ReadWatchStats returns the process's watch streams now.
func ReadWatchStats() WatchStats {
	// Ended first: a stream that ends between the two loads is then
	// counted open, never Open below zero.
	ended := watches.ended.Load()
	opened := watches.opened.Load()
	s := WatchStats{Opened: opened, Ended: ended, Open: int(opened - min(opened, ended))}
	if ns := watches.lastData.Load(); ns != 0 {
		s.LastData = time.Unix(0, ns)
	}
	if ns := watches.lastEnded.Load(); ns != 0 {
		s.LastEnded = time.Unix(0, ns)
	}
	return s
}

// watchBody is the body of an established watch stream: it counts the
// stream open until the first of its end (a read error, io.EOF included)
// or its Close, and the time of the last data read.
type watchBody struct {
	io.ReadCloser
	counter metric.Int64UpDownCounter
	opts    []metric.AddOption
	ended   atomic.Bool
}

// openWatch counts a watch stream established and returns its body.
func openWatch(body io.ReadCloser, counter metric.Int64UpDownCounter, opts []metric.AddOption) *watchBody {
	watches.opened.Add(1)
	counter.Add(bgCtx, 1, opts...)
	return &watchBody{ReadCloser: body, counter: counter, opts: opts}
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		watches.lastData.Store(time.Now().UnixNano())
	}
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *watchBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

// end counts the stream ended, once.
func (b *watchBody) end() {
	if b.ended.CompareAndSwap(false, true) {
		watches.lastEnded.Store(time.Now().UnixNano())
		watches.ended.Add(1)
		b.counter.Add(bgCtx, -1, b.opts...)
	}
}
