package kubeclient

import (
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/internal/program"
)

// ServerStats returns the cumulative counts of the API round trips of every
// client built from a config instrumented with the MeterProvider mp (nil:
// the global one, the default of Instrument), whoever made them
// (reconcilers, informers, other code): how many ended, how many
// failed for the API server (a transport error other than the caller's
// cancellation, or a 5xx), and the time in single-object round trips, those
// in flight included. bottleneck.APIServerBetween turns two readings into
// the figures of the apiserver-unavailable and apiserver-slow classes;
// otelqueue's adaptive pool, Sizer and Inspector read the same counts of
// their queues' MeterProvider. Each program that instrumented its clients
// with a provider of its own reads its own.
func ServerStats(mp metric.MeterProvider) bottleneck.APIServerCounters {
	return clientwork.Server(time.Now(), program.Of(mp))
}
