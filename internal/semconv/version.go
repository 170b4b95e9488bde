package semconv

// Version is the release version of the module (without the leading v):
// the instrumentation scope version of every meter and tracer of its
// packages, and otelqueue.Version. release/release.sh sets it; it is set
// nowhere else.
const Version = "0.2.0"
