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
	// Reads are the single-object reads (get), Writes the single-object
	// writes (create, update, patch, delete): apart, since what slows one
	// (an admission webhook slows writes only) is diluted in their mean.
	Reads, Writes ObjectRoundTrips
}

// ObjectRoundTrips count single-object round trips of one kind.
type ObjectRoundTrips struct {
	// Ended is the round trips that ended; Time the time spent in them,
	// those in flight included up to the reading; InFlight those in flight;
	// EndedTime the time of those that ended, each whole (Time less what
	// those in flight spent so far).
	Ended     uint64
	Time      time.Duration
	InFlight  int
	EndedTime time.Duration
}

// mean returns the time in the round trips between a and b per round trip
// that ended between them, or per round trip in flight at b if more, or
// the whole time of those that ended if longer, and false when none.
// Little's law: the time spent over a window is the mean in flight times
// the window, the round trips that ended the arrivals, so their ratio is
// the mean time of one. Counting those in flight at b beside those that
// ended would read a steady 500 ms as 333 ms (1 s spent, 2 ended, 1 in
// flight); counting them instead when more keeps a stall, where none ends,
// from reading as no time at all. The whole time of those that ended reads
// the stall's end: its round trips end in the window after it with little
// of their time in it, beside the many of the catch-up, which diluted 4
// writes stalled 15 s to a mean under 250 ms, and the line said workers.
func (b ObjectRoundTrips) mean(a ObjectRoundTrips) (time.Duration, bool) {
	if b.Ended < a.Ended {
		return 0, false
	}
	ended := b.Ended - a.Ended
	n := max(ended, uint64(max(0, b.InFlight)))
	if n == 0 {
		return 0, false
	}
	m := max(0, b.Time-a.Time) / time.Duration(n)
	if ended > 0 && b.EndedTime >= a.EndedTime {
		m = max(m, (b.EndedTime-a.EndedTime)/time.Duration(ended))
	}
	return m, true
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
	// Latency is the time spent in single-object reads over the window,
	// per read that ended in it (or per read in flight at its end, if
	// more), or the whole time of the reads that ended in it per read, if
	// longer; or the same of the writes if more: the mean time of the
	// slower kind, which round trips stalled in flight raise while they
	// last, and when they end. LatencyKnown says whether there was any.
	Latency      time.Duration
	LatencyKnown bool
}

// APIServerBetween returns the use of the API server between two readings
// of its counters, a before b; nothing Known when they are not two readings
// of one process in order, or no request was made.
func APIServerBetween(a, b APIServerCounters) APIServerUse {
	var u APIServerUse
	if b.Requests < a.Requests || b.Requests == 0 && b.Reads.InFlight == 0 && b.Writes.InFlight == 0 {
		return u
	}
	u.Known = true
	switch n := b.Requests - a.Requests; {
	case n > 0:
		u.Unavailable = float64(b.Unavailable-min(a.Unavailable, b.Unavailable)) / float64(n)
	case b.LastUnavailable:
		u.Unavailable = 1
	}
	r, rok := b.Reads.mean(a.Reads)
	w, wok := b.Writes.mean(a.Writes)
	u.Latency, u.LatencyKnown = max(r, w), rok || wok
	return u
}
