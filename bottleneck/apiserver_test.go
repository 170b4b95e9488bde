package bottleneck

import (
	"testing"
	"time"
)

// TestAPIServerBetween: the share of the window's round trips that failed,
// or the last one's failure when none ended; the time in single-object
// round trips per round trip ended (or in flight, if more), of the reads and
// of the writes apart, the slower kind's, so that requests stalled in flight read
// as slow while they last, and writes slowed by a webhook are not diluted
// by fast reads; or the whole time of those that ended, if longer, so that
// a stall's requests ending beside a catch-up read as slow too.
func TestAPIServerBetween(t *testing.T) {
	rw := func(reads, readMs, writes, writeMs uint64) (ObjectRoundTrips, ObjectRoundTrips) {
		return ObjectRoundTrips{Ended: reads, Time: time.Duration(readMs) * time.Millisecond},
			ObjectRoundTrips{Ended: writes, Time: time.Duration(writeMs) * time.Millisecond}
	}
	base := APIServerCounters{Requests: 100, Unavailable: 2}
	base.Reads, base.Writes = rw(40, 400, 40, 400)
	with := func(requests, unavailable uint64, last bool, reads, readMs, writes, writeMs uint64) APIServerCounters {
		c := APIServerCounters{Requests: requests, Unavailable: unavailable, LastUnavailable: last}
		c.Reads, c.Writes = rw(reads, readMs, writes, writeMs)
		return c
	}
	stalled := with(100, 2, false, 40, 2400, 40, 2400)
	stalled.Reads.InFlight, stalled.Writes.InFlight = 2, 2
	steady := with(102, 2, false, 40, 400, 42, 1400)
	steady.Writes.InFlight = 1
	stalling := with(101, 2, false, 41, 2400, 40, 400)
	stalling.Reads.InFlight = 4
	// The reading before the stall's end: 4 writes in flight 11 s, 44 s of
	// their time counted in Time; after it, their 60 s whole and the 2 s of
	// 100 more in EndedTime, 18 s more in Time.
	stallBase := base
	stallBase.Writes.InFlight, stallBase.Writes.Time, stallBase.Writes.EndedTime = 4, 400*time.Millisecond+44*time.Second, 400*time.Millisecond
	stallEnded := with(204, 2, false, 40, 400, 144, 400+62000)
	stallEnded.Writes.EndedTime = stallEnded.Writes.Time
	for _, tc := range []struct {
		name string
		b    APIServerCounters
		want APIServerUse
	}{
		{"healthy: 40 round trips of 10ms", with(140, 2, false, 60, 600, 60, 600),
			APIServerUse{Known: true, Latency: 10 * time.Millisecond, LatencyKnown: true}},
		{"down: 10 of 10 refused", with(110, 12, true, 40, 400, 40, 400),
			APIServerUse{Known: true, Unavailable: 1}},
		{"down, the informers in their backoff: none ended, the last failed", with(100, 2, true, 40, 400, 40, 400),
			APIServerUse{Known: true, Unavailable: 1}},
		{"quiet: none ended, the last succeeded", base, APIServerUse{Known: true}},
		{"stalled: 2 reads and 2 writes in flight for the whole second", stalled,
			APIServerUse{Known: true, Latency: time.Second, LatencyKnown: true}},
		{"a slow webhook: 10 writes of 500ms beside 10 reads of 5ms", with(120, 2, false, 50, 450, 50, 5400),
			APIServerUse{Known: true, Latency: 500 * time.Millisecond, LatencyKnown: true}},
		{"one worker's writes of 500ms back to back: 2 ended, 1 in flight, 1s spent", steady,
			APIServerUse{Known: true, Latency: 500 * time.Millisecond, LatencyKnown: true}},
		{"a stall begins: 1 read ended, 4 in flight, 2s spent", stalling,
			APIServerUse{Known: true, Latency: 500 * time.Millisecond, LatencyKnown: true}},
		{"a stall ends: 4 writes stalled 15s end 4s into the window, 100 of 20ms after them: 62s whole over 104, where the 18s spent in the window read 173ms", stallEnded,
			APIServerUse{Known: true, Latency: 62 * time.Second / 104, LatencyKnown: true}},
		{"readings out of order", APIServerCounters{Requests: 50}, APIServerUse{}},
	} {
		from := base
		if tc.b == stallEnded {
			from = stallBase
		}
		if got := APIServerBetween(from, tc.b); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := APIServerBetween(APIServerCounters{}, APIServerCounters{}); got.Known {
		t.Errorf("no request made: %+v, want nothing known", got)
	}
}

// TestAPIServerClasses: an API server down is apiserver-unavailable before
// any other class (the errors and the work time it causes are its doing);
// a slow one without 429s is apiserver-slow, whose recommendation keeps the
// configured count though Little's law asks for more; with 429s it is
// server-throttling.
func TestAPIServerClasses(t *testing.T) {
	f := neutral()
	f.APIServer.Unavailable, f.ErrorRetries, f.LittlesLaw = 1, 1, 40
	if v := Classify(f); v.Class != APIServerUnavailable || v.MoreWorkers() || v.Recommend(10, 40) != 10 {
		t.Errorf("down, with errors and Little's law at 40: %v (recommend %d), want %s and no more than 10", v, v.Recommend(10, 40), APIServerUnavailable)
	}
	f = neutral()
	f.APIServer.Latency, f.LittlesLaw = 500*time.Millisecond, 40
	v := Classify(f)
	if v.Class != APIServerSlow || v.MoreWorkers() || v.Recommend(10, 40) != 10 {
		t.Errorf("slow, Little's law at 40: %v (recommend %d), want %s and no more than 10", v, v.Recommend(10, 40), APIServerSlow)
	}
	if s := v.String(); s != "bottleneck=apiserver-slow (apiserver_latency 0.50 >= 0.25: "+v.Rule.Change+")" {
		t.Errorf("String: %q", s)
	}
	f.RetryAfterShare = 0.5
	if v := Classify(f); v.Class != ServerThrottling {
		t.Errorf("slow with 429s: %v, want %s", v, ServerThrottling)
	}
}
