package otelqueue

import "fmt"

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
	if e == nil {
		return "a nil *PanicError"
	}
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
