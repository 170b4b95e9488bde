package otelqueue_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

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
		want string
	}{
		{otelqueue.Result{}, nil, otelqueue.ResultSuccess},
		{otelqueue.Result{Requeue: true}, nil, otelqueue.ResultRequeue},
		{otelqueue.Result{RequeueAfter: time.Second}, nil, otelqueue.ResultRequeueAfter},
		{otelqueue.Result{Requeue: true, RequeueAfter: time.Second}, nil, otelqueue.ResultRequeueAfter},
		{otelqueue.Result{RequeueAfter: -time.Second}, nil, otelqueue.ResultSuccess},
		{otelqueue.Result{Requeue: true, RequeueAfter: time.Second}, boom, otelqueue.ResultError},
	} {
		if got := otelqueue.Classify(tc.res, tc.err); got != tc.want {
			t.Errorf("Classify(%+v, %v) = %q, want %q", tc.res, tc.err, got, tc.want)
		}
	}
}

// TestRecordResult checks what RecordResult puts on a real SDK span for
// each kind of end, and that it leaves a non-recording span alone.
func TestRecordResult(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	record := func(result string, err error) sdktrace.ReadOnlySpan {
		t.Helper()
		_, span := tp.Tracer("test").Start(context.Background(), result)
		otelqueue.RecordResult(span, result, err)
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
		if got := attrMap(s.Attributes())[otelqueue.AttrResult].AsString(); got != s.Name() {
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

	check(record(otelqueue.ResultSuccess, nil), want{status: codes.Unset})
	check(record(otelqueue.ResultRequeue, nil), want{status: codes.Unset})
	check(record(otelqueue.ResultError, errors.New("boom")), want{status: codes.Error, desc: "boom", exception: "boom"})
	perr := otelqueue.NewPanicError(io.EOF, []byte("goroutine 1 [running]:"))
	check(record(otelqueue.ResultPanic, perr), want{status: codes.Error, desc: "panicked: EOF", exception: "panicked: EOF", stack: true})
	if !errors.Is(perr, io.EOF) {
		t.Error("a PanicError does not unwrap to the error it panicked with")
	}
	goexit := otelqueue.NewPanicError(nil, nil)
	if !goexit.Goexit || strings.Contains(goexit.Error(), "nil") || !strings.Contains(goexit.Error(), "runtime.Goexit") {
		t.Errorf("PanicError for Goexit: %+v, %q", goexit, goexit)
	}
	check(record(otelqueue.ResultPanic, goexit), want{status: codes.Error, desc: "runtime.Goexit", exception: "runtime.Goexit"})

	n := len(sr.Ended())
	_, span := tracenoop.NewTracerProvider().Tracer("test").Start(context.Background(), "noop")
	otelqueue.RecordResult(span, otelqueue.ResultError, errors.New("boom")) // must not panic
	if len(sr.Ended()) != n {
		t.Error("a non-recording span was recorded")
	}
}
