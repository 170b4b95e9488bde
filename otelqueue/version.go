package otelqueue

// ScopeName is the instrumentation scope name of the meters and tracers this
// package creates.
const ScopeName = "github.com/otelqueue/otelqueue/otelqueue"

// Version is the release version of this module (without the leading v),
// reported as the instrumentation scope version by the packages of the
// module. release/release.sh sets it.
const Version = "0.2.0"
