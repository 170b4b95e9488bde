package otelqueue

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/internal/clientwork"
)

// ClientStats are where the reconcile attempts of one queue spent their time
// in Kubernetes API clients instrumented with package kubeclient, summed
// over the attempts that ended since Instrument. A queue records them only
// when instrumented WithClientTime, or with an adaptive worker pool
// (AdaptiveWorkers); otherwise they stay zero. A request counts for the
// attempt whose context it was made with (the ctx a reconciler receives, or
// one derived from it); requests made with another context, such as
// context.Background() or an informer's, count for no queue.
type ClientStats struct {
	// Attempts is the number of attempts that made at least one request
	// through an instrumented client, and Work their work duration (from
	// Get to Done): the whole of which the times below are parts.
	Attempts uint64
	Work     time.Duration
	// Requests is the number of API round trips, Throttled those answered
	// 429 Too Many Requests (API Priority and Fairness).
	Requests, Throttled uint64
	// RateLimiterWait is the time the requests waited for the client-side
	// rate limiter (rest.Config QPS and Burst).
	RateLimiterWait time.Duration
	// RequestTime is the time in round trips, from sending a request to its
	// response's headers.
	RequestTime time.Duration
	// RetryAfterWait is the time client-go waited after a 429 answer with
	// Retry-After before retrying.
	RetryAfterWait time.Duration
}

// clientInstruments record, per attempt, where its time went in instrumented
// clients, and keep the queue's sums for ClientStats and the counters.
type clientInstruments struct {
	limiter, request, retryAfter metric.Float64Histogram

	attempts, requests, throttled                atomic.Uint64
	work, limiterWait, requestTime, retryAfterNs atomic.Int64
}

func newClientInstruments(in *instruments) *clientInstruments {
	return &clientInstruments{limiter: in.clientLimiter, request: in.clientRequest, retryAfter: in.clientRetryAfter}
}

// record records w, the client work of an attempt that ended after work,
// when it used an instrumented client. ctx carries the span the exemplars
// point to, if any.
func (c *clientInstruments) record(ctx context.Context, w *clientwork.Work, work time.Duration, opts []metric.RecordOption) {
	t := w.Totals()
	if !t.Used {
		return
	}
	c.work.Add(int64(work))
	c.requests.Add(t.Requests)
	c.throttled.Add(t.Throttled)
	c.limiterWait.Add(int64(t.LimiterWait))
	c.requestTime.Add(int64(t.RequestTime))
	c.retryAfterNs.Add(int64(t.RetryAfterWait))
	// Counted last, and read first by stats: whoever reads N attempts
	// reads sums that hold all of theirs (a reader saw 1 attempt, its
	// work, and none of its requests).
	c.attempts.Add(1)
	c.limiter.Record(ctx, t.LimiterWait.Seconds(), opts...)
	c.request.Record(ctx, t.RequestTime.Seconds(), opts...)
	c.retryAfter.Record(ctx, t.RetryAfterWait.Seconds(), opts...)
}

// stats returns the sums: those of at least the attempts it counts.
func (c *clientInstruments) stats() ClientStats {
	attempts := c.attempts.Load() // first: see record
	return ClientStats{
		Attempts:        attempts,
		Work:            time.Duration(c.work.Load()),
		Requests:        c.requests.Load(),
		Throttled:       c.throttled.Load(),
		RateLimiterWait: time.Duration(c.limiterWait.Load()),
		RequestTime:     time.Duration(c.requestTime.Load()),
		RetryAfterWait:  time.Duration(c.retryAfterNs.Load()),
	}
}

// observe reports the counters, once an attempt has used an instrumented
// client: a queue whose reconcilers use none has no series of them.
func (c *clientInstruments) observe(o metric.Observer, in *instruments, opt metric.ObserveOption) {
	if c.attempts.Load() == 0 {
		return
	}
	o.ObserveInt64(in.clientRequests, int64(c.requests.Load()), opt)
	o.ObserveInt64(in.clientThrottled, int64(c.throttled.Load()), opt)
}
