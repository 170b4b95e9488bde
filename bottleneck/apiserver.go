package bottleneck

import "time"

// APIServerCounters are the cumulative counts of the Kubernetes API round
// trips of a process's instrumented clients (kubeclient.ServerStats reads
// them): how the API server answered, whoever asked.
type APIServerCounters struct {
	// Requests is the round trips that ended, Unavailable those that failed
	// for the API server: a transport error other than the caller's
	// cancellation (connection refused or reset, a timeout), or a 5xx.
	Requests, Unavailable uint64
	// LastUnavailable says whether the last round trip to end failed so.
	LastUnavailable bool
	// Objects is the single-object round trips (get, create, update,
	// patch, delete) that ended; ObjectTime the time spent in them, those
	// in flight included up to the reading; ObjectsInFlight those in flight.
	Objects         uint64
	ObjectTime      time.Duration
	ObjectsInFlight int
}

// APIServerUse is how the API server answered over a window.
type APIServerUse struct {
	// Known says whether the process's instrumented clients made any
	// request. Clear it for a queue whose reconciles make no API calls:
	// what limits such a queue is not the API server.
	Known bool
	// Unavailable is the share of the window's round trips that failed for
	// the API server; with none ended in the window, 1 when the last one
	// failed (an API server that refuses connections, while informers wait
	// out their backoff), else 0.
	Unavailable float64
	// Latency is the time spent in single-object round trips over the
	// window, per round trip that ended in it or is in flight at its end:
	// their mean time, which round trips stalled in flight raise while they
	// last. LatencyKnown says whether there was any.
	Latency      time.Duration
	LatencyKnown bool
}

// APIServerBetween returns the use of the API server between two readings
// of its counters, a before b; nothing Known when they are not two readings
// of one process in order, or no request was made.
func APIServerBetween(a, b APIServerCounters) APIServerUse {
	var u APIServerUse
	if b.Requests < a.Requests || b.Objects < a.Objects || b.Requests == 0 && b.ObjectsInFlight == 0 {
		return u
	}
	u.Known = true
	switch n := b.Requests - a.Requests; {
	case n > 0:
		u.Unavailable = float64(b.Unavailable-min(a.Unavailable, b.Unavailable)) / float64(n)
	case b.LastUnavailable:
		u.Unavailable = 1
	}
	if n := b.Objects - a.Objects + uint64(max(0, b.ObjectsInFlight)); n > 0 {
		u.Latency = max(0, b.ObjectTime-a.ObjectTime) / time.Duration(n)
		u.LatencyKnown = true
	}
	return u
}
