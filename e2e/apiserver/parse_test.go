package apiserver

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// summary is one summary line of an example (example/internal/examplecluster's
// Meter.Line): the rates over the last interval.
type summary struct {
	line                 string
	adds, retries        float64 // per second
	reconciles, errors   float64 // per second: reconciles finished, those that failed
	utilization          float64
	writes, requested    float64 // the workload's, per second
	behind               string  // why the workload fell behind, if it did
	catchingUp           string  // "catching up: ..." when it did more than requested
	blind                string  // "blind: ..." when the queue took no add of the writes
	depth, inFlight      int
	hasWrites, hasBehind bool
	// bottleneck is the line's class (bottleneck=<class>), "" when the
	// line has none (nothing finished in its interval).
	bottleneck string
	// at is the line's time of day; ok false when it has none.
	at   time.Duration
	atOK bool
	// adaptive says whether the line shows an adaptive pool
	// ("workers=12 (adaptive 1..32, ceiling 6, last: demand, 3 changes)"):
	// its count, bounds, ceiling (0: none), last reason ("" before the
	// first) and number of changes. A fixed count's line has no workers=.
	adaptive          bool
	workers, min, max int
	ceiling, changes  int
	reason            string
	// standby says the line is a standby's: its workers wait for
	// leadership, and it has no class.
	standby bool
	// watches is the process's watch streams open (watches=N), watchesOK
	// whether the line says (after the first watch was opened).
	watches   int
	watchesOK bool
}

var (
	summaryRe = regexp.MustCompile(`queue \S+: depth=(\d+) .*in_flight=(\d+) .*adds/s=([\d.]+) retries/s=([\d.]+) reconciles/s=([\d.]+) errors/s=([\d.]+) utilization=([\d.]+)`)
	// The writes, then "behind: <reason>", "catching up: ..." or both
	// ("behind: <reason>; catching up: ..."), then "blind: ..." when the
	// queue took no add of them.
	writesRe = regexp.MustCompile(` writes/s=([\d.]+)/([\d.]+)(?: behind: (.+?))?(?:;? (catching up: .+?))?(?: (blind: .+))?$`)
	classRe  = regexp.MustCompile(` bottleneck=(\S+) `)
	watchRe  = regexp.MustCompile(` watches=(\d+)[ ]`)
	// The adaptive pool's part, before adds/s: "workers=N (adaptive
	// MIN..MAX[, ceiling C], last: REASON, K change[s])" or "workers=N
	// (adaptive MIN..MAX[, ceiling C], no change yet)".
	workersRe = regexp.MustCompile(` workers=(\d+) \(adaptive (\d+)\.\.(\d+)(?:, ceiling (\d+))?, (?:last: ([a-z-]+), (\d+) changes?|no change yet)\) adds/s=`)
)

// standbyMark is in the summary line of a standby queue
// (examplecluster.Meter.Standby).
const standbyMark = " standby: the workers wait for leadership (no class)"

// parseSummary parses a summary line, reporting false for other lines.
func parseSummary(line string) (summary, bool) {
	m := summaryRe.FindStringSubmatch(line)
	if m == nil {
		return summary{}, false
	}
	s := summary{line: line}
	s.depth, _ = strconv.Atoi(m[1])
	s.inFlight, _ = strconv.Atoi(m[2])
	s.adds = atof(m[3])
	s.retries = atof(m[4])
	s.reconciles = atof(m[5])
	s.errors = atof(m[6])
	s.utilization = atof(m[7])
	if c := classRe.FindStringSubmatch(line); c != nil {
		s.bottleneck = c[1]
	}
	s.standby = strings.Contains(line, standbyMark)
	if w := watchRe.FindStringSubmatch(line + " "); w != nil {
		s.watches, _ = strconv.Atoi(w[1])
		s.watchesOK = true
	}
	s.at, s.atOK = timeOfDay(line)
	if w := workersRe.FindStringSubmatch(line); w != nil {
		s.adaptive = true
		s.workers, _ = strconv.Atoi(w[1])
		s.min, _ = strconv.Atoi(w[2])
		s.max, _ = strconv.Atoi(w[3])
		s.ceiling, _ = strconv.Atoi(w[4]) // "" when none: 0
		s.reason = w[5]
		s.changes, _ = strconv.Atoi(w[6])
	}
	if w := writesRe.FindStringSubmatch(line); w != nil {
		s.hasWrites = true
		s.writes, s.requested = atof(w[1]), atof(w[2])
		s.behind, s.hasBehind = w[3], w[3] != ""
		s.catchingUp = w[4]
		s.blind = w[5]
	}
	return s, true
}

// decision is an adaptive pool's "adaptive workers" log line (slog's text
// format through the standard logger): a change of its count, or a
// decision that kept it (slower-for-all).
type decision struct {
	line             string
	at               time.Duration // time of day
	queue            string
	from, to, needed int
	reason, detail   string
	busy, usable     float64
	wait             string
	ceiling          int
}

var decisionRe = regexp.MustCompile(`INFO adaptive workers queue=(\S+) from=(\d+) to=(\d+) reason=(\S+) detail="((?:[^"\\]|\\.)*)" needed=(\d+) busy=(\S+) usable=(\S+) wait=(\S+) ceiling=(\d+)`)

// parseDecision parses an "adaptive workers" line, reporting false for
// other lines.
func parseDecision(line string) (decision, bool) {
	m := decisionRe.FindStringSubmatch(line)
	if m == nil {
		return decision{}, false
	}
	d := decision{line: line, queue: m[1], reason: m[4], detail: m[5], wait: m[9]}
	d.at, _ = timeOfDay(line)
	d.from, _ = strconv.Atoi(m[2])
	d.to, _ = strconv.Atoi(m[3])
	d.needed, _ = strconv.Atoi(m[6])
	d.busy, d.usable = atof(m[7]), atof(m[8])
	d.ceiling, _ = strconv.Atoi(m[10])
	return d, true
}

func atof(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// scrape is one read of a /metrics endpoint in the OpenMetrics format.
type scrape struct {
	samples []sample
}

// sample is one line of a scrape: name, labels, value and, if any, the
// trace id of its exemplar.
type sample struct {
	name     string
	labels   map[string]string
	value    float64
	exemplar string // trace_id
}

var (
	sampleRe   = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*?)\})? (\S+)(?: \S+)?(?: # \{(.*?)\} .*)?$`)
	labelRe    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	exemplarRe = regexp.MustCompile(`trace_id="([0-9a-f]{32})"`)
)

// parseScrape parses the text of a scrape; comment and unparsable lines are
// skipped.
func parseScrape(text string) scrape {
	var s scrape
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		smp := sample{name: m[1], labels: map[string]string{}, value: atof(m[3])}
		for _, l := range labelRe.FindAllStringSubmatch(m[2], -1) {
			smp.labels[l[1]] = l[2]
		}
		if e := exemplarRe.FindStringSubmatch(m[4]); e != nil {
			smp.exemplar = e[1]
		}
		s.samples = append(s.samples, smp)
	}
	return s
}

// matching returns the samples named name whose labels include want.
func (s scrape) matching(name string, want map[string]string) []sample {
	var out []sample
next:
	for _, smp := range s.samples {
		if smp.name != name {
			continue
		}
		for k, v := range want {
			if smp.labels[k] != v {
				continue next
			}
		}
		out = append(out, smp)
	}
	return out
}

// sum adds the values of the samples named name whose labels include want.
func (s scrape) sum(name string, want map[string]string) float64 {
	var total float64
	for _, smp := range s.matching(name, want) {
		total += smp.value
	}
	return total
}

// histogram is the cumulative buckets of one classic histogram.
type histogram struct {
	upper []float64 // sorted, +Inf last
	count []float64 // cumulative
}

// histogram returns the buckets of the histogram family (without _bucket)
// whose labels include want, summed over the other labels.
func (s scrape) histogram(family string, want map[string]string) histogram {
	byLe := map[float64]float64{}
	for _, smp := range s.matching(family+"_bucket", want) {
		le := smp.labels["le"]
		v := atof(le)
		if le == "+Inf" {
			v = math.Inf(1)
		}
		byLe[v] += smp.value
	}
	var h histogram
	for le := range byLe {
		h.upper = append(h.upper, le)
	}
	sort.Float64s(h.upper)
	for _, le := range h.upper {
		h.count = append(h.count, byLe[le])
	}
	return h
}

// minus returns h's counts less those of an earlier reading of the same
// histogram: the observations between the two.
func (h histogram) minus(earlier histogram) histogram {
	out := histogram{upper: h.upper, count: make([]float64, len(h.count))}
	for i := range h.count {
		out.count[i] = h.count[i]
		if i < len(earlier.count) && earlier.upper[i] == h.upper[i] {
			out.count[i] -= earlier.count[i]
		}
	}
	return out
}

// total is the number of observations.
func (h histogram) total() float64 {
	if len(h.count) == 0 {
		return 0
	}
	return h.count[len(h.count)-1]
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear interpolation inside the bucket that holds it, the upper
// bound of the highest finite bucket when it falls in +Inf. NaN without
// observations.
func (h histogram) quantile(q float64) float64 {
	n := h.total()
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	for i, c := range h.count {
		if c < rank {
			continue
		}
		if math.IsInf(h.upper[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return h.upper[i-1]
		}
		lower, below := 0.0, 0.0
		if i > 0 {
			lower, below = h.upper[i-1], h.count[i-1]
		}
		if c == below {
			return h.upper[i]
		}
		return lower + (h.upper[i]-lower)*(rank-below)/(c-below)
	}
	return h.upper[len(h.upper)-1]
}

// span is what the console exporter (stdouttrace) writes of a span.
type span struct {
	Name        string
	SpanContext spanContext
	Parent      spanContext
	Attributes  []keyValue
	Links       []struct {
		SpanContext spanContext
		Attributes  []keyValue
	}
	Status             struct{ Code string }
	StartTime, EndTime time.Time
	// Resource is the resource's attributes (the console exporter writes
	// them with each span).
	Resource []keyValue
}

type spanContext struct {
	TraceID string
	SpanID  string
}

type keyValue struct {
	Key   string
	Value struct {
		Type  string
		Value any
	}
}

// outsideWork returns, for each reconcile span that started at or after
// from, its duration less that of its children named work: the time the
// reconcile spent outside the examples' simulated work (reading the cache,
// the Update request to the API server).
func outsideWork(spans []span, work string, from time.Time) []time.Duration {
	inWork := map[string]time.Duration{}
	for _, s := range spans {
		if s.Name == work {
			inWork[s.Parent.SpanID] += s.EndTime.Sub(s.StartTime)
		}
	}
	var out []time.Duration
	for _, s := range spans {
		if s.Name == "reconcile" && !s.StartTime.Before(from) {
			out = append(out, s.EndTime.Sub(s.StartTime)-inWork[s.SpanContext.SpanID])
		}
	}
	return out
}

// queuedFor returns the durations of the queued spans that ended at or
// after from: each attempt's exact wait in the queue.
func queuedFor(spans []span, from time.Time) []time.Duration {
	var out []time.Duration
	for _, s := range spans {
		if s.Name == "queued" && !s.EndTime.Before(from) {
			out = append(out, s.EndTime.Sub(s.StartTime))
		}
	}
	return out
}

// watchDelays returns, for each attempt that started at or after from and
// links to a workload write, the time from the end of that write to the
// start of the attempt's queued span: how long the write took to come back
// through the watch, the informer and the event handler into the queue.
// Attempts whose key was already pending when the write ended (the queued
// span starts earlier) are left out.
func watchDelays(spans []span, write string, from time.Time) []time.Duration {
	writes := map[string]span{}
	queued := map[string]span{} // by parent
	for _, s := range spans {
		switch s.Name {
		case write:
			writes[s.SpanContext.SpanID] = s
		case "queued":
			queued[s.Parent.SpanID] = s
		}
	}
	var out []time.Duration
	for _, s := range spans {
		q, ok := queued[s.SpanContext.SpanID]
		if !ok || q.EndTime.Before(from) {
			continue
		}
		for _, l := range s.Links {
			if w, ok := writes[l.SpanContext.SpanID]; ok && !q.StartTime.Before(w.EndTime) {
				out = append(out, q.StartTime.Sub(w.EndTime))
			}
		}
	}
	return out
}

// quantile returns the q-quantile of ds (nearest rank), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(i, 0)]
}

// median returns the median of ds, 0 for none.
func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

// attrText returns the value of the attribute key in kvs as text (an int
// as its digits), and whether kvs has it.
func attrText(kvs []keyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return fmt.Sprint(kv.Value.Value), true
		}
	}
	return "", false
}

// attr returns the string value of the attribute key in kvs.
func attr(kvs []keyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			if s, ok := kv.Value.Value.(string); ok {
				return s
			}
			return ""
		}
	}
	return ""
}
