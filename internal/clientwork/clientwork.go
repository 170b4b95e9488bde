// Package clientwork carries, in a reconcile attempt's context, where the
// attempt spent its time in Kubernetes API clients: package otelqueue puts a
// Work in the context it hands the reconciler (for a queue instrumented
// WithClientTime, or with an adaptive worker pool), package kubeclient adds
// to it from the rate limiter and the transport of an instrumented
// rest.Config, and otelqueue records it when the attempt ends.
package clientwork

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/program"
)

// Work is where one attempt's time went in instrumented clients. Its methods
// are safe for concurrent use: a reconciler may issue requests from several
// goroutines.
type Work struct {
	used        atomic.Bool
	limiterWait atomic.Int64 // nanoseconds
	requestTime atomic.Int64
	retryAfter  atomic.Int64
	requests    atomic.Uint64
	throttled   atomic.Uint64
	// throttledAt is when the last 429 answer carrying Retry-After ended
	// (Unix nanoseconds, 0: none pending): the time until the next request
	// of the attempt starts is client-go's wait before its retry.
	throttledAt atomic.Int64
}

// Totals are a Work's sums.
type Totals struct {
	// Used says whether any instrumented client was used.
	Used bool
	// LimiterWait, RequestTime and RetryAfterWait are the time waiting for
	// the client-side rate limiter, in round trips, and waiting out the
	// server's Retry-After before a retry.
	LimiterWait, RequestTime, RetryAfterWait time.Duration
	// Requests are the round trips, Throttled those answered 429.
	Requests, Throttled uint64
}

// Totals returns the sums so far.
func (w *Work) Totals() Totals {
	return Totals{
		Used:           w.used.Load(),
		LimiterWait:    time.Duration(w.limiterWait.Load()),
		RequestTime:    time.Duration(w.requestTime.Load()),
		RetryAfterWait: time.Duration(w.retryAfter.Load()),
		Requests:       w.requests.Load(),
		Throttled:      w.throttled.Load(),
	}
}

// Begin marks the start, at now, of a limiter wait or a round trip. When a
// 429 with Retry-After is pending, the time since it ended was the client's
// wait before retrying: Begin adds it and returns its start, or returns the
// zero time.
func (w *Work) Begin(now time.Time) (retryAfterSince time.Time) {
	w.used.Store(true)
	at := w.throttledAt.Swap(0)
	if at == 0 {
		return time.Time{}
	}
	since := time.Unix(0, at)
	if d := now.Sub(since); d > 0 {
		w.retryAfter.Add(int64(d))
		return since
	}
	return time.Time{}
}

// LimiterWaited adds a wait for the client-side rate limiter.
func (w *Work) LimiterWaited(d time.Duration) { w.limiterWait.Add(int64(d)) }

// RoundTrip adds a round trip of d that ended at end; throttled says it was
// answered 429, retryAfter that the answer carried a Retry-After header
// (client-go then waits and retries).
func (w *Work) RoundTrip(d time.Duration, end time.Time, throttled, retryAfter bool) {
	w.requests.Add(1)
	w.requestTime.Add(int64(d))
	if throttled {
		w.throttled.Add(1)
	}
	if retryAfter {
		w.throttledAt.Store(end.UnixNano())
	}
}

// key is the context key of a Work.
type key struct{}

// IsKey reports whether k is the context key of a Work, for a context type
// that answers Value(k) with its own Work (as otelqueue's attempt context).
func IsKey(k any) bool {
	_, ok := k.(key)
	return ok
}

// NewContext returns a context carrying w.
func NewContext(ctx context.Context, w *Work) context.Context {
	return context.WithValue(ctx, key{}, w)
}

// FromContext returns the Work of the attempt ctx belongs to, or nil.
func FromContext(ctx context.Context) *Work {
	if ctx == nil {
		return nil
	}
	w, _ := ctx.Value(key{}).(*Work)
	return w
}

// Server returns the API round trips at now of the programs of sts (each
// read with its program.Sources, each State once), summed; none for no
// State.
func Server(now time.Time, sts ...*program.State) bottleneck.APIServerCounters {
	var sum bottleneck.APIServerCounters
	seen := make([]*program.State, 0, 2)
	for _, st := range sts {
		if st == nil {
			continue
		}
		for _, src := range program.Sources(st) {
			if slices.Contains(seen, src) {
				continue
			}
			seen = append(seen, src)
			c := src.Server.Read(now)
			sum.Requests += c.Requests
			sum.Unavailable += c.Unavailable
			sum.LastUnavailable = sum.LastUnavailable || c.LastUnavailable
			sum.Reads, sum.Writes = add(sum.Reads, c.Reads), add(sum.Writes, c.Writes)
		}
	}
	return sum
}

func add(a bottleneck.ObjectRoundTrips, b program.ObjectTrips) bottleneck.ObjectRoundTrips {
	return bottleneck.ObjectRoundTrips{Ended: a.Ended + b.Ended, Time: a.Time + b.Time, InFlight: a.InFlight + b.InFlight, EndedTime: a.EndedTime + b.EndedTime}
}
