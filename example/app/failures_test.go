package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/example/internal/exampletest"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// records is a slog handler that keeps what it is given.
type records struct {
	mu sync.Mutex
	rs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *records) WithGroup(string) slog.Handler            { return h }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rs = append(h.rs, r)
	return nil
}

func reconcilerError(err error) slog.Record {
	r := slog.NewRecord(time.Now(), slog.LevelError, "Reconciler error", 0)
	r.AddAttrs(slog.String("key", "ns/name"), slog.Any("error", err))
	return r
}

// TestFailureLog: the first 3 deliberate failures are logged, then a
// notice, then none; other errors are logged within the Runner's default
// limit, with the count of those it suppressed; -log-simulated-failures
// logs the deliberate ones as any other.
func TestFailureLog(t *testing.T) {
	out := exampletest.CaptureLog(t)
	next := &records{}
	fc := testingclock.NewFakePassiveClock(time.Now())
	h := newFailureLogClock(next, config{errorRate: 0.05}, fc)
	ctx := context.Background()
	for range 20 {
		_ = h.Handle(ctx, reconcilerError(errSimulated))
	}
	if len(next.rs) != loggedSimulated {
		t.Errorf("%d of 20 deliberate failures logged, want the first %d", len(next.rs), loggedSimulated)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 || !strings.Contains(out.String(), `the demo fails 5% of its reconciles on purpose (-error-rate 0.05): after the first 3, it logs no more "simulated failure (see -error-rate)" lines`) {
		t.Errorf("want one notice after the first %d deliberate failures, got %d lines:\n%s", loggedSimulated, n, out)
	}

	next.rs = nil
	conflict := fmt.Errorf("recording the observed version: %w", errors.New("409 Conflict"))
	for range otelqueue.DefaultLogBurst + 5 {
		_ = h.Handle(ctx, reconcilerError(conflict))
	}
	if len(next.rs) != otelqueue.DefaultLogBurst {
		t.Errorf("%d of %d other errors logged at once, want the Runner's default burst of %d", len(next.rs), otelqueue.DefaultLogBurst+5, otelqueue.DefaultLogBurst)
	}
	next.rs = nil
	fc.SetTime(fc.Now().Add(otelqueue.DefaultLogInterval))
	_ = h.Handle(ctx, reconcilerError(conflict))
	ok, suppressed := len(next.rs) == 1, int64(0)
	if ok {
		next.rs[0].Attrs(func(a slog.Attr) bool {
			if a.Key == semconv.LogSuppressed {
				suppressed = a.Value.Int64()
			}
			return true
		})
	}
	if !ok || suppressed != 5 {
		t.Errorf("an interval later: allowed %v with %d suppressed, want a line counting the 5 suppressed", ok, suppressed)
	}

	next.rs = nil
	h = newFailureLog(next, config{errorRate: 0.05, logSimulated: true})
	for range 20 {
		_ = h.Handle(ctx, reconcilerError(errSimulated))
	}
	if len(next.rs) != otelqueue.DefaultLogBurst {
		t.Errorf("with -log-simulated-failures %d of 20 deliberate failures logged at once, want the Runner's default burst of %d", len(next.rs), otelqueue.DefaultLogBurst)
	}
}

// TestSummaryCountsFailures runs the app with 30% of its reconciles
// failing on purpose: its log holds the first 3 of those failures and the
// notice, and every summary line their rate, errors/s (before, every
// failure up to one a second was a line, and the summary counted them
// since the start).
func TestSummaryCountsFailures(t *testing.T) {
	out, waitFor := startController(t, "-error-rate", "0.3", "-churn", "50", "-burst-every", "0", "-latency", "1ms", "-latency-spread", "0", "-objects", "20")
	l := waitFor(3, regexp.MustCompile(`reconciles/s=[1-9][\d.]* errors/s=[1-9]`))
	if strings.Contains(l, " errors=") {
		t.Errorf("the summary line still counts errors since the start: %s", l)
	}
	out.WaitFor(t, 1, "-log-simulated-failures logs them all", regexp.MustCompile(`after the first 3`), nil)
	waitFor(6, regexp.MustCompile(`errors/s=`)) // more failures, not logged
	deliberate := regexp.MustCompile(`ERROR Reconciler error .*simulated failure \(see -error-rate\)`)
	if n := len(deliberate.FindAllString(out.String(), -1)); n != loggedSimulated {
		t.Errorf("%d deliberate failures logged, want %d:\n%s", n, loggedSimulated, out)
	}
}
