package otelqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// nilPtrError's Error method reads its receiver: on a nil pointer returned
// as a non-nil error (Go's typed nil) it panics.
type nilPtrError struct{ msg string }

func (e *nilPtrError) Error() string { return e.msg }

// TestTypedNilError: a reconcile that returns a typed nil error whose Error
// method panics neither crashes its worker nor is lost: the attempt counts
// as an error, is retried, and its span, its log line and the failures
// list say what it was; RecordOutcome and RecordFailure take one too.
func TestTypedNilError(t *testing.T) {
	q, fc, inst := inspectedQueue(t, "typed-nil-error")
	calls := 0
	runner, err := newRunner(q, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
		calls++
		if calls == 1 {
			var e *nilPtrError
			return otelqueue.Result{}, e
		}
		return otelqueue.Result{}, nil
	}, otelqueue.WithLogger(slog.New(slog.NewJSONHandler(new(strings.Builder), nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx) }()
	q.Add("ns/typed-nil")
	testutil.WaitFor(t, "the key's retry to succeed", func() bool {
		fc.Step(time.Second) // the retry's backoff
		return runner.Stats().Count(otelqueue.OutcomeSuccess) == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := runner.Stats().Count(otelqueue.OutcomeError); n != 1 {
		t.Errorf("%d errors counted, want 1", n)
	}
	failures := queueOf(t, (&otelqueue.Inspector{}).Page(), "typed-nil-error").Failures
	if len(failures) != 1 || !strings.Contains(failures[0].Error, "*otelqueue_test.nilPtrError") {
		t.Errorf("failures %+v, want the one naming *otelqueue_test.nilPtrError", failures)
	}

	// RecordOutcome: a nil span, a typed nil error.
	otelqueue.RecordOutcome(nil, otelqueue.OutcomeError, errors.New("on no span"))
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	_, span := tp.Tracer("test").Start(context.Background(), "reconcile")
	var e *nilPtrError
	otelqueue.RecordOutcome(span, otelqueue.OutcomeError, e)
	span.End()
	if s := sr.Ended()[0].Status(); s.Code != codes.Error || !strings.Contains(s.Description, "nilPtrError") {
		t.Errorf("span status %+v, want Error naming the type", s)
	}

	// RecordFailure.
	inst.RecordFailure(context.Background(), "ns/recorded", e)
	failures = queueOf(t, (&otelqueue.Inspector{}).Page(), "typed-nil-error").Failures
	if len(failures) != 2 || failures[0].Key != "ns/recorded" || !strings.Contains(failures[0].Error, "nilPtrError") {
		t.Errorf("failures %+v, want ns/recorded first, naming the type", failures)
	}
}

// TestStopNilOrZero: Stop on a nil Instrumentation, or on one Instrument
// did not make, is harmless, as often as it is called.
func TestStopNilOrZero(t *testing.T) {
	var nilInst *otelqueue.Instrumentation
	var zero otelqueue.Instrumentation
	for range 2 {
		if err := nilInst.Stop(); err != nil {
			t.Errorf("nil Stop: %v", err)
		}
		if err := zero.Stop(); err != nil {
			t.Errorf("zero Stop: %v", err)
		}
	}
}

// TestSizerStartNilContext: Start refuses a nil context with an error that
// says what to pass, rather than panicking in its loop.
func TestSizerStartNilContext(t *testing.T) {
	s := &otelqueue.Sizer{}
	//lint:ignore SA1012 a nil ctx is the misuse under test
	err := s.Start(nil) //nolint:staticcheck
	if err == nil || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("Start(nil) = %v, want an error about the nil context", err)
	}
	// The Sizer is not left running: a Start after it works.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Start(ctx); err != nil && strings.Contains(err.Error(), "started already") {
		t.Errorf("Start after a refused Start: %v", err)
	}
}

// TestNilPanicError: a nil *PanicError, typed nil as an error, says so
// rather than panicking in Error.
func TestNilPanicError(t *testing.T) {
	var pe *otelqueue.PanicError
	if got := pe.Error(); !strings.Contains(got, "nil") {
		t.Errorf("Error() = %q", got)
	}
}
