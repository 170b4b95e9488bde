package apiserver

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The measuring helpers, on inputs whose answers are known: a wrong
// quantile or stop boundary would make the report and the quiet-stop
// check say something else than what happened.

func TestHistogramQuantile(t *testing.T) {
	s := parseScrape(`# TYPE x histogram
x_bucket{name="q",le="0.1"} 10 # {trace_id="0123456789abcdef0123456789abcdef"} 0.05 1.7e9
x_bucket{name="q",le="1"} 30
x_bucket{name="q",le="+Inf"} 40
x_bucket{name="other",le="0.1"} 1000
`)
	h := s.histogram("x", map[string]string{"name": "q"})
	for _, tc := range []struct{ q, want float64 }{
		{0.25, 0.1},       // the 10th of 40: the top of the first bucket
		{0.5, 0.1 + 0.45}, // the 20th: half way through (0.1, 1]
		{0.99, 1},         // in +Inf: the highest finite bound
	} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := h.minus(h).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("quantile of no observations = %v, want NaN", got)
	}
	if ex := s.matching("x_bucket", map[string]string{"le": "0.1", "name": "q"}); len(ex) != 1 || ex[0].exemplar != "0123456789abcdef0123456789abcdef" {
		t.Errorf("exemplar not parsed: %+v", ex)
	}
}

func TestStopLinesByTime(t *testing.T) {
	stop := time.Date(2026, 12, 1, 23, 59, 59, 500_000_000, time.Local)
	r := &exampleRun{stopTime: stop, lines: []string{
		"23:59:59.400000 before the signal, read late from the pipe",
		"23:59:59.600000 after",
		"  a continuation of the line after",
		"00:00:00.100000 after midnight",
	}}
	got := r.stopLines()
	if len(got) != 3 || got[0] != r.lines[1] {
		t.Errorf("stopLines = %q, want the last three", got)
	}
}

func TestParseSummary(t *testing.T) {
	s, ok := parseSummary("21:50:22.915295 queue configmaps: depth=118 by priority=[{-100 118}] delayed=0 in_flight=1 oldest=1.896s " +
		"adds/s=4.0 retries/s=0.5 reconciles/s=48.0 errors/s=0.4 utilization=0.99 coalesced/s=6.0 writes/s=9.0/10.0 behind: 3 writes failed")
	if !ok || s.depth != 118 || s.inFlight != 1 || s.adds != 4 || s.retries != 0.5 || s.reconciles != 48 || s.errors != 0.4 || s.utilization != 0.99 ||
		s.writes != 9 || s.requested != 10 || s.behind != "3 writes failed" || !s.hasBehind || s.catchingUp != "" {
		t.Errorf("parseSummary = %+v, %v", s, ok)
	}
	// Done above requested says so: overdue writes of earlier intervals,
	// with the workload still behind or not.
	for line, want := range map[string]summary{
		"writes/s=28.0/20.0 catching up: 40 more writes than requested, overdue from earlier intervals": {
			writes: 28, requested: 20, catchingUp: "catching up: 40 more writes than requested, overdue from earlier intervals"},
		"writes/s=24.0/20.0 behind: each write takes 40ms (a slow API server?); catching up: 20 more writes than requested, overdue from earlier intervals": {
			writes: 24, requested: 20, behind: "each write takes 40ms (a slow API server?)", hasBehind: true, catchingUp: "catching up: 20 more writes than requested, overdue from earlier intervals"},
		"writes/s=20.0/20.0 blind: 20 writes accepted, no event received": {
			writes: 20, requested: 20, blind: "blind: 20 writes accepted, no event received"},
		"writes/s=30.0/20.0 catching up: 10 more writes than requested, overdue from earlier intervals blind: 30 writes accepted, no event received": {
			writes: 30, requested: 20, catchingUp: "catching up: 10 more writes than requested, overdue from earlier intervals", blind: "blind: 30 writes accepted, no event received"},
	} {
		s, ok := parseSummary("21:50:22.915295 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s adds/s=20.0 retries/s=0.0 reconciles/s=20.0 errors/s=0.0 utilization=0.20 coalesced/s=0.0 " + line)
		if !ok || !s.hasWrites || s.writes != want.writes || s.requested != want.requested || s.behind != want.behind || s.hasBehind != want.hasBehind || s.catchingUp != want.catchingUp || s.blind != want.blind {
			t.Errorf("parseSummary(%q) = %+v, %v", line, s, ok)
		}
	}
	// The watch streams open, and none: blind.
	for line, want := range map[string]int{
		"utilization=0.20 coalesced/s=0.0 apiserver-failed=0.00 watches=1 split=own":                                      1,
		"utilization=0.00 coalesced/s=0.0 apiserver-failed=1.00 watches=0 (12.3s none open: the informers see no change)": 0,
	} {
		s, ok := parseSummary("21:50:22.915295 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s adds/s=0.0 retries/s=0.0 reconciles/s=0.0 errors/s=0.0 " + line)
		if !ok || !s.watchesOK || s.watches != want {
			t.Errorf("parseSummary(%q): watches %d (%v), want %d", line, s.watches, s.watchesOK, want)
		}
	}
	if s, _ := parseSummary("21:50:22.915295 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s adds/s=0.0 retries/s=0.0 reconciles/s=0.0 errors/s=0.0 utilization=0.00"); s.watchesOK {
		t.Errorf("a line without watches= parsed as saying %d", s.watches)
	}
	// A line without errors/s is from another format: not a summary.
	if _, ok := parseSummary("21:50:22.915295 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s errors=3 adds/s=20.0 retries/s=0.0 reconciles/s=20.0 utilization=0.20"); ok {
		t.Error("a line with the cumulative errors= and no errors/s parsed as a summary")
	}
	if _, ok := parseSummary("21:50:22.915295 stopped"); ok {
		t.Error("a line that is no summary parsed as one")
	}
	// A fixed count's line has no workers=; an adaptive pool's line
	// starts its rates with the pool's count, in each of its forms, and
	// parses as a summary all the same.
	if s, _ := parseSummary("21:50:22.915295 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s adds/s=20.0 retries/s=0.0 reconciles/s=20.0 errors/s=0.0 utilization=0.20 coalesced/s=0.0"); s.adaptive || s.workers != 0 || !s.atOK || s.at != 21*time.Hour+50*time.Minute+22915295*time.Microsecond {
		t.Errorf("a fixed count's line: %+v", s)
	}
	for line, want := range map[string]summary{
		"workers=2 (adaptive 1..32, no change yet)":                                 {workers: 2, min: 1, max: 32},
		"workers=12 (adaptive 1..32, last: demand, 3 changes)":                      {workers: 12, min: 1, max: 32, reason: "demand", changes: 3},
		"workers=6 (adaptive 2..16, last: low-utilization, 1 change)":               {workers: 6, min: 2, max: 16, reason: "low-utilization", changes: 1},
		"workers=1 (adaptive 1..32, ceiling 1, last: client-rate-limit, 2 changes)": {workers: 1, min: 1, max: 32, ceiling: 1, reason: "client-rate-limit", changes: 2},
		"workers=4 (adaptive 1..32, ceiling 2, no change yet)":                      {workers: 4, min: 1, max: 32, ceiling: 2},
		"workers=8 (adaptive 1..8, last: slower-for-all, 0 changes)":                {workers: 8, min: 1, max: 8, reason: "slower-for-all"},
	} {
		for _, prefix := range []string{
			"21:50:22.915295 queue configmaps: depth=3 delayed=0 in_flight=2 oldest=12ms ",
			"21:50:22.915295 queue configmaps: depth=3 by priority=[{0 3}] delayed=0 in_flight=2 oldest=12ms ", // controller-runtime's
		} {
			l := prefix + line + " adds/s=20.0 retries/s=0.0 reconciles/s=20.0 errors/s=1.5 utilization=0.20 coalesced/s=0.0 split=own 0.99 limiter 0.00 api 0.01 retry-after 0.00 bottleneck=none (utilization 0.20) writes/s=20.0/20.0"
			s, ok := parseSummary(l)
			if !ok || !s.adaptive || s.workers != want.workers || s.min != want.min || s.max != want.max || s.ceiling != want.ceiling || s.reason != want.reason || s.changes != want.changes {
				t.Errorf("parseSummary(%q) = %+v, %v; want the pool %+v", l, s, ok, want)
			}
			if s.depth != 3 || s.inFlight != 2 || s.adds != 20 || s.errors != 1.5 || s.utilization != 0.2 || s.bottleneck != "none" || s.writes != 20 {
				t.Errorf("parseSummary(%q): the rates %+v", l, s)
			}
		}
	}
}

func TestParseDecision(t *testing.T) {
	d, ok := parseDecision(`05:38:05.750486 INFO adaptive workers queue=configmaps from=4 to=8 reason=demand detail="needed 17 (arrivals 95.1/s, work time 54.8ms), wait 12.88s (objective 1s), utilization 1.00, retries/adds 0.01" needed=17 busy=4 usable=3.64 wait=12.88s ceiling=0`)
	if !ok || d.queue != "configmaps" || d.from != 4 || d.to != 8 || d.reason != "demand" || d.needed != 17 || d.busy != 4 || d.usable != 3.64 || d.wait != "12.88s" || d.ceiling != 0 ||
		!strings.HasPrefix(d.detail, "needed 17 (arrivals") || d.at != 5*time.Hour+38*time.Minute+5750486*time.Microsecond {
		t.Errorf("parseDecision = %+v, %v", d, ok)
	}
	d, ok = parseDecision(`05:37:35.546149 INFO adaptive workers queue=configmaps from=4 to=2 reason=latency-gradient detail="1.2 busy, the downstream serves 0.1 at once (20.0/s × no-load work time 2.6ms; work time 57.57ms, limiter 0.00, retry-after 0.00); ceiling 1 held 2m0s" needed=5 busy=1.17 usable=0.05 wait=0s ceiling=1`)
	if !ok || d.from != 4 || d.to != 2 || d.reason != "latency-gradient" || d.ceiling != 1 || d.usable != 0.05 {
		t.Errorf("parseDecision = %+v, %v", d, ok)
	}
	if _, ok := parseDecision("05:37:35.546149 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s workers=2 (adaptive 1..32, no change yet) adds/s=20.0"); ok {
		t.Error("a summary line parsed as a decision")
	}
}
