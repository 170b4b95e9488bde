package otelqueue

import "github.com/otelqueue/otelqueue/internal/semconv"

// Version is the release version of this module (without the leading v),
// reported as the instrumentation scope version by the packages of the
// module.
const Version = semconv.Version
