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
	reads, writes         objects
}

// objects counts single-object round trips of one kind.
type objects struct {
	ended    atomic.Uint64
	endedNs  atomic.Int64
	inFlight atomic.Int64
	startSum atomic.Int64 // of those in flight, nanoseconds since epoch
}

func (o *objects) begin(start time.Time) {
	o.inFlight.Add(1)
	o.startSum.Add(int64(start.Sub(epoch)))
}

func (o *objects) end(start time.Time, d time.Duration) {
	o.ended.Add(1)
	o.endedNs.Add(int64(d))
	o.startSum.Add(-int64(start.Sub(epoch)))
	o.inFlight.Add(-1)
}

func (o *objects) read(now time.Time) bottleneck.ObjectRoundTrips {
	n := o.inFlight.Load()
	sum := o.startSum.Load()
	t := bottleneck.ObjectRoundTrips{Ended: o.ended.Load(), InFlight: int(max(0, n))}
	ended := o.endedNs.Load()
	t.EndedTime = time.Duration(ended)
	t.Time = t.EndedTime + time.Duration(max(0, n*int64(now.Sub(epoch))-sum))
	return t
}

// of returns the counts of a single-object round trip, a write or a read.
func of(write bool) *objects {
	if write {
		return &server.writes
	}
	return &server.reads
}

// epoch is the origin of the in-flight start times: monotonic, and small
// enough that their sum does not overflow.
var epoch = time.Now()

// ObjectBegin records the start, at start, of a single-object round trip,
// a write (create, update, patch, delete) or a read (get); ObjectEnd must
// follow it.
func ObjectBegin(write bool, start time.Time) { of(write).begin(start) }

// ObjectEnd records the end of a single-object round trip that ObjectBegin
// recorded, which took d.
func ObjectEnd(write bool, start time.Time, d time.Duration) { of(write).end(start, d) }

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
// the read may be counted in part, which moves its kind's Time by at most
// that round trip's time.
func ReadServer(now time.Time) bottleneck.APIServerCounters {
	t := bottleneck.APIServerCounters{
		Requests:        server.requests.Load(),
		Unavailable:     server.unavailable.Load(),
		LastUnavailable: server.lastUnavailable.Load(),
	}
	t.Reads, t.Writes = server.reads.read(now), server.writes.read(now)
	return t
}
