package otelqueue

import (
	"context"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/otelqueue/otelqueue/inspect"

	"go.opentelemetry.io/otel/trace"
)

// Failures kept per queue for the Inspector, and the longest error text
// kept (an error's text can be any size).
const (
	maxFailures        = 20
	maxFailureErrorLen = 1024
)

// failureLog keeps a queue's last maxFailures failed attempts. Only failed
// attempts touch it.
type failureLog struct {
	mu   sync.Mutex
	ring [maxFailures]inspect.Failure
	next int // where the next failure goes
	n    int // failures kept, at most maxFailures
}

func (l *failureLog) add(f inspect.Failure) {
	if len(f.Error) > maxFailureErrorLen {
		cut := maxFailureErrorLen
		for cut > 0 && !utf8.RuneStart(f.Error[cut]) {
			cut--
		}
		f.Error = f.Error[:cut] + "…"
	}
	l.mu.Lock()
	l.ring[l.next] = f
	l.next = (l.next + 1) % maxFailures
	l.n = min(l.n+1, maxFailures)
	l.mu.Unlock()
}

// last returns the failures kept, the latest first.
func (l *failureLog) last() []inspect.Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]inspect.Failure, 0, l.n)
	for i := 1; i <= l.n; i++ {
		out = append(out, l.ring[(l.next-i+maxFailures)%maxFailures])
	}
	return out
}

// failure describes a failed attempt of key with outcome and err, at at,
// in the attempt context ctx.
func failure(ctx context.Context, key string, outcome Outcome, err error, at time.Time) inspect.Failure {
	f := inspect.Failure{Key: key, At: at, Outcome: outcome.String()}
	if err != nil {
		f.Error = err.Error()
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		f.TraceID = sc.TraceID().String()
	}
	return f
}

// RecordFailure records a failed reconcile attempt of key for the
// Inspector's list of the queue's last failures: for code that runs its own
// workers rather than a Runner (a Runner records its failures itself, and
// so does package controllerruntime's Reconciler). ctx is the attempt's
// context (the Item's, or one derived from it), whose span gives the trace
// id. A nil err, a nil or stopped Instrumentation record nothing. Only the
// last maxFailures failures are kept, with the error's text cut at
// maxFailureErrorLen bytes.
func (i *Instrumentation) RecordFailure(ctx context.Context, key string, err error) {
	if err = safeError(err); i == nil || i.b == nil || err == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if i.stopped.Load() {
		return
	}
	outcome := OutcomeError
	if pe := (*PanicError)(nil); errors.As(err, &pe) {
		outcome = OutcomePanic
	}
	i.b.failures.add(failure(ctx, key, outcome, err, time.Now()))
}
