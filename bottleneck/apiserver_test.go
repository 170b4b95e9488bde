package bottleneck

import (
	"testing"
	"time"
)

// TestAPIServerBetween: the share of the window's round trips that failed,
// or the last one's failure when none ended; the time in single-object
// round trips per round trip ended or in flight, so that requests stalled
// in flight read as slow while they last.
func TestAPIServerBetween(t *testing.T) {
	base := APIServerCounters{Requests: 100, Unavailable: 2, Objects: 80, ObjectTime: 800 * time.Millisecond}
	for _, tc := range []struct {
		name string
		b    APIServerCounters
		want APIServerUse
	}{
		{"healthy: 40 round trips of 10ms", APIServerCounters{Requests: 140, Unavailable: 2, Objects: 120, ObjectTime: 1200 * time.Millisecond},
			APIServerUse{Known: true, Latency: 10 * time.Millisecond, LatencyKnown: true}},
		{"down: 10 of 10 refused", APIServerCounters{Requests: 110, Unavailable: 12, LastUnavailable: true, Objects: 80, ObjectTime: 800 * time.Millisecond},
			APIServerUse{Known: true, Unavailable: 1}},
		{"down, the informers in their backoff: none ended, the last failed", APIServerCounters{Requests: 100, Unavailable: 2, LastUnavailable: true, Objects: 80, ObjectTime: 800 * time.Millisecond},
			APIServerUse{Known: true, Unavailable: 1}},
		{"quiet: none ended, the last succeeded", base, APIServerUse{Known: true}},
		{"stalled: 4 in flight for the whole second", APIServerCounters{Requests: 100, Unavailable: 2, Objects: 80, ObjectTime: 4800 * time.Millisecond, ObjectsInFlight: 4},
			APIServerUse{Known: true, Latency: time.Second, LatencyKnown: true}},
		{"a slow webhook: 10 writes of 500ms", APIServerCounters{Requests: 110, Unavailable: 2, Objects: 90, ObjectTime: 5800 * time.Millisecond},
			APIServerUse{Known: true, Latency: 500 * time.Millisecond, LatencyKnown: true}},
		{"readings out of order", APIServerCounters{Requests: 50}, APIServerUse{}},
	} {
		if got := APIServerBetween(base, tc.b); got != tc.want {
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
