package cpulimit

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// summary is what the test reads of one summary line of the app
// (example/internal/examplecluster's Meter.Line).
type summary struct {
	line string
	at   time.Time
	// class is the bottleneck=<class>, "" when the line has none (nothing
	// finished in its interval); signal the first word of its reason, the
	// figure that made it ("cpu", "throttled", "gomaxprocs", "cpu-wait").
	class, signal string
	// cpuUsed and cpuCores are cpu=USED/CORES cores: the cores the
	// process used and those it has (the quota, else min(GOMAXPROCS,
	// NumCPU)); cpuKnown false without the part.
	cpuUsed, cpuCores float64
	cpuKnown          bool
	// throttled is the share of the cgroup's periods throttled, "" when
	// the line has none (no quota at the end of the interval).
	throttled string
	// pool is an adaptive pool's part ("workers=4 (adaptive 1..32, no
	// change yet)"), workers its count; "" and 0 for a fixed count.
	pool    string
	workers int
	// rec is the recommendation, from "→" ("→ no more than -workers 8",
	// "→ recommend -workers 12"), "" when none.
	rec string
	// size is the size part without the memory ("cpu/reconcile=64.66ms
	// cores-needed>=0.72"), "" when none; atLeast says whether it gives
	// the cores as a lower bound (">="), cores the figure.
	size    string
	atLeast bool
	cores   float64
}

// decision is an adaptive pool's "adaptive workers" log line.
type decision struct {
	line     string
	at       time.Time
	from, to int
	reason   string
	detail   string
}

var (
	summaryRe  = regexp.MustCompile(`^(\d\d:\d\d:\d\d\.\d{6}) queue \S+: depth=\d+ .* reconciles/s=`)
	poolRe     = regexp.MustCompile(` (workers=(\d+) \(adaptive [^)]*\)) adds/s=`)
	cpuRe      = regexp.MustCompile(` cpu=([\d.]+)/([\d.]+) cores(?: throttled=([\d.]+))?`)
	classRe    = regexp.MustCompile(` bottleneck=(\S+)(?: \(([^ )]+))?`)
	recRe      = regexp.MustCompile(` (→ .+?)(?: size: | pod: | writes/s=|$)`)
	sizeRe     = regexp.MustCompile(` size: (cpu/reconcile=\S+ cores-needed(>=|=)([\d.]+))`)
	decisionRe = regexp.MustCompile(`^(\d\d:\d\d:\d\d\.\d{6}) INFO adaptive workers queue=\S+ from=(\d+) to=(\d+) reason=(\S+) detail="((?:[^"\\]|\\.)*)"`)
)

// parseSummary parses a summary line logged on the day of ref (or the
// next, past midnight), and reports false for other lines.
func parseSummary(line string, ref time.Time) (summary, bool) {
	m := summaryRe.FindStringSubmatch(line)
	if m == nil {
		return summary{}, false
	}
	at, ok := timeOfDay(m[1], ref)
	if !ok {
		return summary{}, false
	}
	s := summary{line: line, at: at}
	if p := poolRe.FindStringSubmatch(line); p != nil {
		s.pool = p[1]
		s.workers, _ = strconv.Atoi(p[2])
	}
	if c := cpuRe.FindStringSubmatch(line); c != nil {
		s.cpuUsed, s.cpuCores, s.cpuKnown = atof(c[1]), atof(c[2]), true
		s.throttled = c[3]
	}
	if c := classRe.FindStringSubmatch(line); c != nil {
		s.class, s.signal = c[1], c[2]
	}
	if r := recRe.FindStringSubmatch(line); r != nil {
		s.rec = r[1]
	}
	if z := sizeRe.FindStringSubmatch(line); z != nil {
		s.size, s.atLeast, s.cores = z[1], z[2] == ">=", atof(z[3])
	}
	return s, true
}

// parseDecision parses an "adaptive workers" line logged on the day of ref
// (or the next), and reports false for other lines.
func parseDecision(line string, ref time.Time) (decision, bool) {
	m := decisionRe.FindStringSubmatch(line)
	if m == nil {
		return decision{}, false
	}
	at, ok := timeOfDay(m[1], ref)
	if !ok {
		return decision{}, false
	}
	d := decision{line: line, at: at, reason: m[4], detail: m[5]}
	d.from, _ = strconv.Atoi(m[2])
	d.to, _ = strconv.Atoi(m[3])
	return d, true
}

// timeOfDay turns the app's log time (log.Ltime|log.Lmicroseconds, local
// time) into the time within 12 hours of ref: a run that passes midnight
// logs times of the next day.
func timeOfDay(hms string, ref time.Time) (time.Time, bool) {
	tod, err := time.ParseInLocation("15:04:05.000000", hms, ref.Location())
	if err != nil {
		return time.Time{}, false
	}
	y, mo, d := ref.Date()
	at := time.Date(y, mo, d, tod.Hour(), tod.Minute(), tod.Second(), tod.Nanosecond(), ref.Location())
	switch {
	case at.Sub(ref) > 12*time.Hour:
		at = at.AddDate(0, 0, -1)
	case ref.Sub(at) > 12*time.Hour:
		at = at.AddDate(0, 0, 1)
	}
	return at, true
}

func atof(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// median returns the median of xs, NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = append([]float64(nil), xs...)
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
