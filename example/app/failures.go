package main

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// loggedSimulated is how many of the deliberate failures (-error-rate) the
// app logs, unless -log-simulated-failures asks for all of them.
const loggedSimulated = 3

// failureLog is the slog handler of the Runner's "Reconciler error" lines.
// The demo fails -error-rate of its reconciles on purpose (5%: more than a
// line a second at the default flags, which buried the summary line), so it
// logs the first loggedSimulated of those deliberate failures, says once
// that it logs no more of them, and then only counts them, in the summary
// line's errors/s. Every other failure (a 409 Conflict, a refused request
// on a real cluster) is logged as the Runner logs it by default: the first
// otelqueue.DefaultLogBurst lines, then one every DefaultLogInterval, the
// next line counting those suppressed. The Runner's own limit is off
// (WithLogRateLimit(1, 0)): it counts every error alike, and the deliberate
// failures would take the tokens of the others.
type failureLog struct {
	next  slog.Handler
	state *failureLogState
}

type failureLogState struct {
	all       bool    // -log-simulated-failures: the deliberate failures as any other
	errorRate float64 // -error-rate, for the notice

	simulated atomic.Int64 // deliberate failures seen

	// limit is the Runner's default limit, for the other errors, on
	// clock; suppressed counts the lines it refused since the last one
	// logged. mu guards both.
	clock      clock.PassiveClock
	mu         sync.Mutex
	limit      *rate.Limiter
	suppressed int
}

// allow says whether another error line may be logged now and, if so, how
// many it suppressed since the previous one.
func (s *failureLogState) allow() (ok bool, suppressed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.limit.AllowN(s.clock.Now(), 1) {
		s.suppressed++
		return false, 0
	}
	suppressed, s.suppressed = s.suppressed, 0
	return true, suppressed
}

// newFailureLog returns the handler of the Runner's lines, writing through
// next.
func newFailureLog(next slog.Handler, cfg config) *failureLog {
	return newFailureLogClock(next, cfg, clock.RealClock{})
}

// newFailureLogClock is newFailureLog on clock c (tests pass a fake one).
func newFailureLogClock(next slog.Handler, cfg config, c clock.PassiveClock) *failureLog {
	return &failureLog{next: next, state: &failureLogState{
		all: cfg.logSimulated, errorRate: cfg.errorRate,
		clock: c, limit: rate.NewLimiter(rate.Every(otelqueue.DefaultLogInterval), otelqueue.DefaultLogBurst),
	}}
}

func (h *failureLog) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *failureLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &failureLog{next: h.next.WithAttrs(as), state: h.state}
}

func (h *failureLog) WithGroup(name string) slog.Handler {
	return &failureLog{next: h.next.WithGroup(name), state: h.state}
}

// Handle passes r on, or drops it (a deliberate failure past the first
// ones, or an error line over the limit).
func (h *failureLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return h.next.Handle(ctx, r)
	}
	s := h.state
	if !s.all && isSimulated(r) {
		switch n := s.simulated.Add(1); {
		case n <= loggedSimulated:
			return h.next.Handle(ctx, r)
		case n == loggedSimulated+1:
			// Quotes the error, so that checks that skip the deliberate
			// failures' lines skip this one too.
			log.Printf("the demo fails %.3g%% of its reconciles on purpose (-error-rate %g): after the first %d, it logs no more %q lines; the summary line's errors/s counts every failed reconcile, -log-simulated-failures logs them all",
				100*s.errorRate, s.errorRate, loggedSimulated, errSimulated.Error())
		}
		return nil
	}
	ok, suppressed := s.allow()
	if !ok {
		return nil
	}
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", suppressed)) // the Runner's key for the same count
	}
	return h.next.Handle(ctx, r)
}

// isSimulated says whether r reports a deliberate failure: its "error"
// attribute is errSimulated.
func isSimulated(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" {
			return true
		}
		err, ok := a.Value.Any().(error)
		found = ok && errors.Is(err, errSimulated)
		return false
	})
	return found
}
