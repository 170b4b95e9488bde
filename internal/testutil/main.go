package testutil

import (
	"testing"

	"go.opentelemetry.io/otel"
	"go.uber.org/goleak"
)

// Main is the TestMain of every package: it runs the tests and fails the run
// when goroutines are left behind (goleak.VerifyTestMain). A package that
// sets globals first (RecordOTelErrors, slog's or controller-runtime's
// default logger) does so in its TestMain before calling Main.
func Main(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// otelErrors keeps what reaches otel.Handle once RecordOTelErrors is called.
var otelErrors errorRecorder

// errorRecorder is an otel.ErrorHandler that keeps the errors.
type errorRecorder struct{ Log[error] }

func (r *errorRecorder) Handle(err error) { r.Add(err) }

// RecordOTelErrors makes otel.Handle keep the errors it gets, for
// TakeOTelErrors and NoOTelErrors. Call it in TestMain, before Main; the
// tests of such a package must not run in parallel, for the errors are the
// test binary's, not a test's.
func RecordOTelErrors() {
	otel.SetErrorHandler(&otelErrors)
}

// TakeOTelErrors returns the errors that reached otel.Handle since the last
// take (see RecordOTelErrors), and forgets them.
func TakeOTelErrors() []error {
	return otelErrors.Take()
}

// NoOTelErrors forgets the errors that reached otel.Handle until now and
// makes the test fail, when it ends, if any error reached otel.Handle since
// that the test did not take with TakeOTelErrors. It needs RecordOTelErrors.
func NoOTelErrors(t testing.TB) {
	otelErrors.Take()
	t.Cleanup(func() {
		if errs := otelErrors.Take(); len(errs) > 0 {
			t.Errorf("otel.Handle got %v", errs)
		}
	})
}
