package apiserver

import (
	"math"
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
	} {
		s, ok := parseSummary("21:50:22.915295 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s adds/s=20.0 retries/s=0.0 reconciles/s=20.0 errors/s=0.0 utilization=0.20 coalesced/s=0.0 " + line)
		if !ok || !s.hasWrites || s.writes != want.writes || s.requested != want.requested || s.behind != want.behind || s.hasBehind != want.hasBehind || s.catchingUp != want.catchingUp {
			t.Errorf("parseSummary(%q) = %+v, %v", line, s, ok)
		}
	}
	// A line without errors/s is from another format: not a summary.
	if _, ok := parseSummary("21:50:22.915295 queue configmaps: depth=0 delayed=0 in_flight=0 oldest=0s errors=3 adds/s=20.0 retries/s=0.0 reconciles/s=20.0 utilization=0.20"); ok {
		t.Error("a line with the cumulative errors= and no errors/s parsed as a summary")
	}
	if _, ok := parseSummary("21:50:22.915295 stopped"); ok {
		t.Error("a line that is no summary parsed as one")
	}
}
