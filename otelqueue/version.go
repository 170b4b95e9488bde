package otelqueue

// ScopeName is the instrumentation scope name of the meters and tracers this
// package creates.
const ScopeName = "github.com/otelqueue/otelqueue/otelqueue"

// Version is the version of this instrumentation, reported as the
// instrumentation scope version.
func Version() string { return "0.1.0" }
