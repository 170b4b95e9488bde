package otelqueue

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Result tells a Runner what to do with a key after a successful reconcile,
// as controller-runtime's reconcile.Result does.
type Result struct {
	// Requeue asks for the key to be processed again after the rate
	// limiter's backoff.
	Requeue bool
	// RequeueAfter, when positive, asks for the key to be processed again
	// after this delay; it takes precedence over Requeue.
	RequeueAfter time.Duration
}

// Outcome is how a reconcile ended. Its String is the value of the
// `result` attribute, on the "reconcile" span and on
// `workqueue.reconcile.results`, as controller-runtime's "result" label.
type Outcome uint8

// The outcomes, in the order of outcomeNames.
const (
	// OutcomeSuccess: the reconcile returned no error and asked for no
	// requeue ("success").
	OutcomeSuccess Outcome = iota
	// OutcomeError: the reconcile returned an error ("error").
	OutcomeError
	// OutcomeRequeue: Result.Requeue without RequeueAfter ("requeue").
	OutcomeRequeue
	// OutcomeRequeueAfter: a positive Result.RequeueAfter
	// ("requeue_after").
	OutcomeRequeueAfter
	// OutcomePanic: the reconcile panicked or called runtime.Goexit
	// ("panic"; see PanicError).
	OutcomePanic

	numOutcomes = iota
)

// outcomeNames is the one table of outcomes: their attribute values.
var outcomeNames = [numOutcomes]string{
	OutcomeSuccess:      "success",
	OutcomeError:        "error",
	OutcomeRequeue:      "requeue",
	OutcomeRequeueAfter: "requeue_after",
	OutcomePanic:        "panic",
}

// outcomeAttrs holds the `result` attribute of each outcome.
var outcomeAttrs = func() (a [numOutcomes]attribute.KeyValue) {
	for o, name := range outcomeNames {
		a[o] = semconv.AttrResult.String(name)
	}
	return a
}()

// String returns the outcome's `result` value, such as "requeue_after".
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

func (o Outcome) attr() attribute.KeyValue {
	if o < numOutcomes {
		return outcomeAttrs[o]
	}
	return semconv.AttrResult.String(o.String())
}

// Classify returns the outcome of a reconcile that returned res and err,
// with controller-runtime's precedence: OutcomeError when err is not nil,
// else OutcomeRequeueAfter when res.RequeueAfter is positive, else
// OutcomeRequeue when res.Requeue, else OutcomeSuccess. A reconcile that
// panicked is OutcomePanic (see PanicError). Runner uses it, and so does
// package controllerruntime, with reconcile.Result's fields.
func Classify(res Result, err error) Outcome {
	switch {
	case err != nil:
		return OutcomeError
	case res.RequeueAfter > 0:
		return OutcomeRequeueAfter
	case res.Requeue:
		return OutcomeRequeue
	default:
		return OutcomeSuccess
	}
}

// RecordOutcome records the end of a reconcile on its span (the attempt's
// "reconcile" span): the `result` attribute (outcome's name) and, when err
// is not nil, err as an exception event (with the stack trace of a PanicError it
// wraps) and status Error with err's message. It does nothing on a nil span
// or one that is not recording.
func RecordOutcome(span trace.Span, outcome Outcome, err error) {
	if span == nil || !span.IsRecording() {
		return
	}
	span.SetAttributes(outcome.attr())
	if err = safeError(err); err == nil {
		return
	}
	if perr := (*PanicError)(nil); errors.As(err, &perr) && perr.Stack != nil {
		span.RecordError(err, trace.WithAttributes(attribute.String("exception.stacktrace", string(perr.Stack))))
	} else {
		span.RecordError(err)
	}
	span.SetStatus(codes.Error, err.Error())
}

// safeError returns err, or, when its Error method panics, an error that
// says so. A method on a pointer receiver called on a nil pointer returned
// as a non-nil error (Go's typed nil) panics: the span, the log and the
// failures read err's text, and a reconcile's typed nil must not crash its
// worker.
func safeError(err error) (safe error) {
	if err == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			if isNil(err) {
				safe = fmt.Errorf("a nil %T returned as an error (its Error method panics on it)", err)
			} else {
				safe = fmt.Errorf("a %T whose Error method panics", err)
			}
		}
	}()
	_ = err.Error()
	return err
}
