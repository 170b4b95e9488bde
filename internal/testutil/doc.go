// Package testutil holds the helpers the tests of every otelqueue package
// share: waiting for goroutines (WaitFor, Receive, WaitBlocked), the TestMain
// (Main, with goleak, and RecordOTelErrors), and finders for what the real
// OpenTelemetry SDK recorded (OneSpan, SpansNamed, FindMetric, Collect).
//
// It is for tests only: only _test.go files import it, so the SDK it uses
// never reaches a library's build. Being internal, it is no part of the
// public API; the controllerruntime module may import it because Go's
// internal rule goes by import path (github.com/otelqueue/otelqueue/... may
// import github.com/otelqueue/otelqueue/internal/...), not by module.
//
// The helpers wait for goroutines to react, never for time to pass: every
// wait is bounded by Timeout, a guard against hangs that fails the test with
// what was awaited, not a measurement.
package testutil
