package program

import (
	"sync/atomic"
	"time"
)

// Server counts the round trips of a program's instrumented clients.
type Server struct {
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

// ServerCounts are a reading of Server: bottleneck.APIServerCounters,
// which package program cannot name (package bottleneck imports procstat,
// which uses this package); ObjectTrips converts to
// bottleneck.ObjectRoundTrips.
type ServerCounts struct {
	Requests, Unavailable uint64
	LastUnavailable       bool
	Reads, Writes         ObjectTrips
}

// ObjectTrips are bottleneck.ObjectRoundTrips, field for field.
type ObjectTrips struct {
	Ended     uint64
	Time      time.Duration
	InFlight  int
	EndedTime time.Duration
}

func (o *objects) read(now time.Time) ObjectTrips {
	n := o.inFlight.Load()
	sum := o.startSum.Load()
	t := ObjectTrips{Ended: o.ended.Load(), InFlight: int(max(0, n))}
	ended := o.endedNs.Load()
	t.EndedTime = time.Duration(ended)
	t.Time = t.EndedTime + time.Duration(max(0, n*int64(now.Sub(epoch))-sum))
	return t
}

// of returns the counts of a single-object round trip, a write or a read.
func (s *Server) of(write bool) *objects {
	if write {
		return &s.writes
	}
	return &s.reads
}

// epoch is the origin of the in-flight start times: monotonic, and small
// enough that their sum does not overflow.
var epoch = time.Now()

// ObjectBegin records the start, at start, of a single-object round trip,
// a write (create, update, patch, delete) or a read (get); ObjectEnd must
// follow it.
func (s *Server) ObjectBegin(write bool, start time.Time) { s.of(write).begin(start) }

// ObjectEnd records the end of a single-object round trip that ObjectBegin
// recorded, which took d.
func (s *Server) ObjectEnd(write bool, start time.Time, d time.Duration) {
	s.of(write).end(start, d)
}

// RoundTripEnded records the end of a round trip; unavailable says it
// failed for the API server.
func (s *Server) RoundTripEnded(unavailable bool) {
	s.requests.Add(1)
	if unavailable {
		s.unavailable.Add(1)
	}
	s.lastUnavailable.Store(unavailable)
}

// Read returns the counts at now. The counters are read one by one, not
// at one instant: a round trip that starts or ends during the read may be
// counted in part, which moves its kind's Time by at most that round
// trip's time.
func (s *Server) Read(now time.Time) ServerCounts {
	t := ServerCounts{
		Requests:        s.requests.Load(),
		Unavailable:     s.unavailable.Load(),
		LastUnavailable: s.lastUnavailable.Load(),
	}
	t.Reads, t.Writes = s.reads.read(now), s.writes.read(now)
	return t
}
