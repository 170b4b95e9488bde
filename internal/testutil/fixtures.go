package testutil

import (
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
)

// T0 is where the fake clocks of the tests start.
var T0 = time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)

// ExpLimiter is a rate limiter of string keys whose delays depend on nothing
// but the key's failure count: base, 2×base, 4×base, ... up to max.
func ExpLimiter(base, max time.Duration) workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max)
}

// RemoteSpanContext returns a remote span context numbered n (trace id
// aa<n>00..., span id bb<n>00...), sampled or not: what a propagator
// extracts from an enqueuer in another process.
func RemoteSpanContext(n byte, sampled bool) trace.SpanContext {
	cfg := trace.SpanContextConfig{
		TraceID: trace.TraceID{0xaa, n},
		SpanID:  trace.SpanID{0xbb, n},
		Remote:  true,
	}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	return trace.NewSpanContext(cfg)
}
