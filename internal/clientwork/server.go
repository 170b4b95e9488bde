package clientwork

import (
	"sync/atomic"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// server holds the process's counts of the round trips of every
// instrumented client: bottleneck.APIServerCounters.
var server struct {
	requests, unavailable atomic.Uint64
	lastUnavailable       atomic.Bool
	objects               atomic.Uint64
	objectNs              atomic.Int64 // ended
	inFlight              atomic.Int64
	startSum              atomic.Int64 // of those in flight, nanoseconds since epoch
}

// epoch is the origin of the in-flight start times: monotonic, and small
// enough that their sum does not overflow.
var epoch = time.Now()

// ObjectBegin records the start, at start, of a single-object round trip;
// ObjectEnd must follow it.
func ObjectBegin(start time.Time) {
	server.inFlight.Add(1)
	server.startSum.Add(int64(start.Sub(epoch)))
}

// ObjectEnd records the end of a single-object round trip that ObjectBegin
// recorded, which took d.
func ObjectEnd(start time.Time, d time.Duration) {
	server.objects.Add(1)
	server.objectNs.Add(int64(d))
	server.startSum.Add(-int64(start.Sub(epoch)))
	server.inFlight.Add(-1)
}

// RoundTripEnded records the end of a round trip; unavailable says it
// failed for the API server.
func RoundTripEnded(unavailable bool) {
	server.requests.Add(1)
	if unavailable {
		server.unavailable.Add(1)
	}
	server.lastUnavailable.Store(unavailable)
}

// ReadServer returns the process's counts at now. The counters are read
// one by one, not at one instant: a round trip that starts or ends during
// the read may be counted in part, which moves ObjectTime by at most that
// round trip's time.
func ReadServer(now time.Time) bottleneck.APIServerCounters {
	t := bottleneck.APIServerCounters{
		Requests:        server.requests.Load(),
		Unavailable:     server.unavailable.Load(),
		LastUnavailable: server.lastUnavailable.Load(),
	}
	n := server.inFlight.Load()
	sum := server.startSum.Load()
	t.Objects = server.objects.Load()
	ended := server.objectNs.Load()
	t.ObjectsInFlight = int(max(0, n))
	inFlight := max(0, n*int64(now.Sub(epoch))-sum)
	t.ObjectTime = time.Duration(ended + inFlight)
	return t
}
