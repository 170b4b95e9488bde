package procstat

// ScopeName is the instrumentation scope name of the meter this package
// creates.
const ScopeName = "github.com/otelqueue/otelqueue/procstat"

// Version is the release version of this module (without the leading v),
// reported as the instrumentation scope version: otelqueue.Version, which
// this package cannot import (package otelqueue imports it).
// release/release.sh sets both; a test checks that they are equal.
const Version = "0.2.0"
