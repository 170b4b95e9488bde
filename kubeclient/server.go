package kubeclient

import (
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/clientwork"
)

// ServerStats returns the cumulative counts of the API round trips of every
// client of the process built from an instrumented config, whoever made
// them (reconcilers, informers, other code): how many ended, how many
// failed for the API server (a transport error other than the caller's
// cancellation, or a 5xx), and the time in single-object round trips, those
// in flight included. bottleneck.APIServerBetween turns two readings into
// the figures of the apiserver-unavailable and apiserver-slow classes;
// otelqueue's adaptive pool reads the same counts.
func ServerStats() bottleneck.APIServerCounters {
	return clientwork.ReadServer(time.Now())
}
