package otelqueue

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Classify returns the result (a value of AttrResult) of a reconcile that
// returned res and err, with controller-runtime's precedence: ResultError
// when err is not nil, else ResultRequeueAfter when res.RequeueAfter is
// positive, else ResultRequeue when res.Requeue, else ResultSuccess. A
// reconcile that panicked is ResultPanic (see PanicError). Runner uses it,
// and so does package controllerruntime, with reconcile.Result's fields.
func Classify(res Result, err error) string {
	switch {
	case err != nil:
		return ResultError
	case res.RequeueAfter > 0:
		return ResultRequeueAfter
	case res.Requeue:
		return ResultRequeue
	default:
		return ResultSuccess
	}
}

// PanicError is the error that stands for a reconcile that panicked, or
// that called runtime.Goexit instead of returning.
type PanicError struct {
	// Value is the value the reconcile panicked with; nil for Goexit.
	Value any
	// Goexit tells that the reconcile called runtime.Goexit (as
	// testing.T.FailNow does) rather than panicking.
	Goexit bool
	// Stack is the stack trace of the goroutine where the panic was
	// recovered (runtime/debug.Stack in the recovering defer).
	Stack []byte
}

// NewPanicError returns the PanicError for what recover() returned in the
// deferred function of a reconcile that did not return: a nil recovered
// means runtime.Goexit (since Go 1.21, panic(nil) panics with a
// *runtime.PanicNilError).
func NewPanicError(recovered any, stack []byte) *PanicError {
	return &PanicError{Value: recovered, Goexit: recovered == nil, Stack: stack}
}

// Error says what happened, as "panicked: <value>" or that the reconcile
// called runtime.Goexit.
func (e *PanicError) Error() string {
	if e.Goexit {
		return "called runtime.Goexit instead of returning (as t.FailNow does)"
	}
	return fmt.Sprintf("panicked: %v", e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// RecordResult records the end of a reconcile on its span (the attempt's
// "reconcile" span): the AttrResult attribute result and, when err is not
// nil, err as an exception event (with the stack trace of a PanicError it
// wraps) and status Error with err's message. It does nothing on a span
// that is not recording.
func RecordResult(span trace.Span, result string, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrResult.String(result))
	if err == nil {
		return
	}
	if perr := (*PanicError)(nil); errors.As(err, &perr) && perr.Stack != nil {
		span.RecordError(err, trace.WithAttributes(attribute.String("exception.stacktrace", string(perr.Stack))))
	} else {
		span.RecordError(err)
	}
	span.SetStatus(codes.Error, err.Error())
}
