package otelqueue_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// TestClassify checks controller-runtime's precedence of results.
func TestClassify(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		res  otelqueue.Result
		err  error
		want otelqueue.Outcome
	}{
		{otelqueue.Result{}, nil, otelqueue.OutcomeSuccess},
		{otelqueue.Result{Requeue: true}, nil, otelqueue.OutcomeRequeue},
		{otelqueue.Result{RequeueAfter: time.Second}, nil, otelqueue.OutcomeRequeueAfter},
		{otelqueue.Result{Requeue: true, RequeueAfter: time.Second}, nil, otelqueue.OutcomeRequeueAfter},
		{otelqueue.Result{RequeueAfter: -time.Second}, nil, otelqueue.OutcomeSuccess},
		{otelqueue.Result{Requeue: true, RequeueAfter: time.Second}, boom, otelqueue.OutcomeError},
	} {
		if got := otelqueue.Classify(tc.res, tc.err); got != tc.want {
			t.Errorf("Classify(%+v, %v) = %v, want %v", tc.res, tc.err, got, tc.want)
		}
	}
}

// TestRecordOutcome checks what RecordOutcome puts on a real SDK span for
// each kind of end, and that it leaves a non-recording span alone.
func TestRecordOutcome(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	record := func(outcome otelqueue.Outcome, err error) sdktrace.ReadOnlySpan {
		t.Helper()
		_, span := tp.Tracer("test").Start(context.Background(), outcome.String())
		otelqueue.RecordOutcome(span, outcome, err)
		span.End()
		spans := sr.Ended()
		return spans[len(spans)-1]
	}
	type want struct {
		status    codes.Code
		desc      string // a substring of the status description
		exception string // a substring of the exception message; "" for none
		stack     bool
	}
	check := func(s sdktrace.ReadOnlySpan, w want) {
		t.Helper()
		if got := attrMap(s.Attributes())[semconv.AttrResult].AsString(); got != s.Name() {
			t.Errorf("%s: result %q", s.Name(), got)
		}
		if s.Status().Code != w.status || !strings.Contains(s.Status().Description, w.desc) {
			t.Errorf("%s: status %+v, want %v with %q", s.Name(), s.Status(), w.status, w.desc)
		}
		var events int
		for _, ev := range s.Events() {
			if ev.Name != "exception" {
				continue
			}
			events++
			a := attrMap(ev.Attributes)
			if msg := a["exception.message"].AsString(); !strings.Contains(msg, w.exception) {
				t.Errorf("%s: exception %q, want %q", s.Name(), msg, w.exception)
			}
			if st := a["exception.stacktrace"].AsString(); (st != "") != w.stack {
				t.Errorf("%s: exception stack trace %q, want one: %v", s.Name(), st, w.stack)
			}
		}
		if want := map[bool]int{false: 0, true: 1}[w.exception != ""]; events != want {
			t.Errorf("%s: %d exception events, want %d", s.Name(), events, want)
		}
	}

	check(record(otelqueue.OutcomeSuccess, nil), want{status: codes.Unset})
	check(record(otelqueue.OutcomeRequeue, nil), want{status: codes.Unset})
	check(record(otelqueue.OutcomeError, errors.New("boom")), want{status: codes.Error, desc: "boom", exception: "boom"})
	perr := otelqueue.NewPanicError(io.EOF, []byte("goroutine 1 [running]:"))
	check(record(otelqueue.OutcomePanic, perr), want{status: codes.Error, desc: "panicked: EOF", exception: "panicked: EOF", stack: true})
	if !errors.Is(perr, io.EOF) {
		t.Error("a PanicError does not unwrap to the error it panicked with")
	}
	goexit := otelqueue.NewPanicError(nil, nil)
	if !goexit.Goexit || strings.Contains(goexit.Error(), "nil") || !strings.Contains(goexit.Error(), "runtime.Goexit") {
		t.Errorf("PanicError for Goexit: %+v, %q", goexit, goexit)
	}
	check(record(otelqueue.OutcomePanic, goexit), want{status: codes.Error, desc: "runtime.Goexit", exception: "runtime.Goexit"})

	n := len(sr.Ended())
	_, span := tracenoop.NewTracerProvider().Tracer("test").Start(context.Background(), "noop")
	otelqueue.RecordOutcome(span, otelqueue.OutcomeError, errors.New("boom")) // must not panic
	if len(sr.Ended()) != n {
		t.Error("a non-recording span was recorded")
	}
}

// TestOutcomeNames: every outcome has controller-runtime's "result" label
// value, and a value outside the table says what it is.
func TestOutcomeNames(t *testing.T) {
	want := map[otelqueue.Outcome]string{
		otelqueue.OutcomeSuccess:      "success",
		otelqueue.OutcomeError:        "error",
		otelqueue.OutcomeRequeue:      "requeue",
		otelqueue.OutcomeRequeueAfter: "requeue_after",
		otelqueue.OutcomePanic:        "panic",
	}
	if n := len(outcomeCounts{}); n != len(want) {
		t.Fatalf("RunnerStats counts %d outcomes, want %d", n, len(want))
	}
	st := otelqueue.RunnerStatsOf(1, outcomeCounts{otelqueue.OutcomeError: 3, otelqueue.OutcomePanic: 1})
	if st.Count(otelqueue.OutcomeError) != 3 || st.Count(otelqueue.OutcomePanic) != 1 || st.Count(otelqueue.OutcomeSuccess) != 0 || st.Count(otelqueue.Outcome(200)) != 0 || st.Reconciles() != 4 {
		t.Errorf("Count: error %d, panic %d, success %d, Outcome(200) %d, Reconciles %d; want 3, 1, 0, 0, 4",
			st.Count(otelqueue.OutcomeError), st.Count(otelqueue.OutcomePanic), st.Count(otelqueue.OutcomeSuccess), st.Count(otelqueue.Outcome(200)), st.Reconciles())
	}
	for o, name := range want {
		if o.String() != name {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, o.String(), name)
		}
	}
	if got := otelqueue.Outcome(200).String(); got != "Outcome(200)" {
		t.Errorf("Outcome(200).String() = %q", got)
	}
}
