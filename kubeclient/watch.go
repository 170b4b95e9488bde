package kubeclient

import (
	"context"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/internal/program"
)

// WatchStats are the watch streams of the Kubernetes API of the clients
// built from configs instrumented with one MeterProvider (ReadWatchStats;
// the informers' above all): what tells a controller that cannot see changes from an idle one.
// An idle controller's informers hold their watches open, and the API
// server sends bookmarks on them (about every minute to a watch that asks
// for them, as informers do); a blind one has none open while its
// reflectors wait out their backoff (after the API server restarted, or
// while a watch keeps failing: a missing RBAC rule, a network policy), or
// holds one that carries nothing (a stream hung in a proxy, a server that
// stopped sending), and its queue reads empty and idle all the same.
type WatchStats struct {
	// Open is the watch streams open now and carrying data: established
	// (2xx), not yet ended or closed, and, for a watch that asked for
	// bookmarks, with data (an event or a bookmark) within two minutes
	// (twice the minute after which a kube-apiserver sends a bookmark).
	// Stale is the streams open that asked for bookmarks and carried
	// nothing for as long: not in Open, since they show nothing.
	Open, Stale int
	// Opened is the watch streams established so far; Ended those that
	// ended since (closed by the client, or ended by the server or the
	// network).
	Opened, Ended uint64
	// LastData is when a watch stream last received data (an event or a
	// bookmark), zero before any did; LastEnded when one last ended.
	LastData, LastEnded time.Time
}

// defaultStaleAfter is how long a watch stream that asked for bookmarks may carry
// nothing before it counts as stale: twice the minute after which a
// kube-apiserver sends a bookmark to a watch that has no event to send.
const defaultStaleAfter = 2 * time.Minute

// staleAfter is defaultStaleAfter, shorter in tests.
var staleAfter = defaultStaleAfter

// bgCtx is the context of the watch counter's adds: a stream's end is
// not its request's.
var bgCtx = context.Background()

// ReadWatchStats returns the watch streams now of the clients instrumented
// with the MeterProvider mp (nil: the global one, the default of
// Instrument): each program that instrumented its clients with a provider
// of its own reads its own.
func ReadWatchStats(mp metric.MeterProvider) WatchStats {
	var s WatchStats
	for _, st := range program.Sources(program.Of(mp)) {
		c := st.Watches.Read()
		s.Open, s.Stale, s.Opened, s.Ended = s.Open+c.Open, s.Stale+c.Stale, s.Opened+c.Opened, s.Ended+c.Ended
		if c.LastData.After(s.LastData) {
			s.LastData = c.LastData
		}
		if c.LastEnded.After(s.LastEnded) {
			s.LastEnded = c.LastEnded
		}
	}
	return s
}

// asksBookmarks says whether a watch's query asks for bookmarks.
func asksBookmarks(rawQuery string) bool {
	q, err := url.ParseQuery(rawQuery)
	return err == nil && (q.Get("allowWatchBookmarks") == "true" || q.Get("allowWatchBookmarks") == "1")
}

// watchBody is the body of an established watch stream: it counts the
// stream open until the first of its end (a read error, io.EOF included)
// or its Close, and the time of the last data read; a stream that asked
// for bookmarks and carries nothing for staleAfter counts as stale until
// data comes again (its timer).
type watchBody struct {
	io.ReadCloser
	counts  *program.Watches
	counter metric.Int64UpDownCounter
	opts    []metric.AddOption

	mu    sync.Mutex // orders the counter's adds of end and of the timer
	ended bool
	stale atomic.Bool
	timer *time.Timer  // nil without bookmarks
	armed atomic.Int64 // UnixNano of the timer's last reset
}

// openWatch counts a watch stream established and returns its body;
// bookmarks says whether it asked for them (and so may go stale).
func openWatch(body io.ReadCloser, counts *program.Watches, counter metric.Int64UpDownCounter, opts []metric.AddOption, bookmarks bool) *watchBody {
	b := &watchBody{ReadCloser: body, counts: counts, counter: counter, opts: opts}
	counts.Opened()
	counter.Add(bgCtx, 1, opts...)
	if bookmarks {
		b.armed.Store(time.Now().UnixNano())
		b.timer = time.AfterFunc(staleAfter, b.goStale)
	}
	return b
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		now := time.Now().UnixNano()
		b.counts.Data(now)
		if b.timer != nil && (b.stale.Load() || now-b.armed.Load() > int64(time.Second)) {
			// Re-armed at most once a second: a busy stream reads often.
			b.armed.Store(now)
			b.timer.Reset(staleAfter)
			if b.stale.Load() {
				b.fresh()
			}
		}
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

// goStale counts the stream stale: not open in the counter and WatchStats.
func (b *watchBody) goStale() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || b.stale.Load() {
		return
	}
	if time.Since(time.Unix(0, b.armed.Load())) < staleAfter {
		return // re-armed meanwhile
	}
	// The counter first: a reader that sees the stream stale in
	// WatchStats sees it out of the counter too.
	b.counter.Add(bgCtx, -1, b.opts...)
	b.stale.Store(true)
	b.counts.Stale(true)
}

// fresh counts a stale stream that carries data again as open.
func (b *watchBody) fresh() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || !b.stale.Load() {
		return
	}
	b.counter.Add(bgCtx, 1, b.opts...)
	b.stale.Store(false)
	b.counts.Stale(false)
}

// end counts the stream ended, once.
func (b *watchBody) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.ended = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.counts.Ended(b.stale.Load())
	if !b.stale.Load() {
		b.counter.Add(bgCtx, -1, b.opts...)
	}
}
