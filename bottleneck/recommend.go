package bottleneck

import (
	"cmp"
	"fmt"
	"github.com/otelqueue/otelqueue/internal/sizing"
	"math"
	"slices"
	"strings"
	"time"
)

// The sizing's spans: read from here by otelqueue's Sizer, the examples'
// summary line and the generated recording rules (its factors are in
// docs/scaling.md).
const (
	// PeakSpan is the span the figures are averaged over before the peak
	// is taken: the busiest five minutes, the window of the recording
	// rules' 5m rates. A burst shorter than that is the queue's to absorb
	// (its wait shows it), not a size to pay for all day.
	PeakSpan = 5 * time.Minute
	// Horizon is the history whose busiest span the recommendation holds:
	// long enough for the peaks of a working hour, short enough that the
	// answer follows a load that changed for good.
	Horizon = time.Hour
)

// Span is what a process did over one span of its history (PeakSpan
// long, or shorter while its history is): the windows of its queues over
// it and its memory. otelqueue's Sizer takes one every interval, each
// ending PeakSpan after the one it overlaps; Recommend takes the peak of
// them.
type Span struct {
	// End is the span's end.
	End time.Time
	// Queues are the windows of the process's queues over the span (Window
	// with its Name), their CPU the process's (Window.CPU) and their
	// ProcessReconciles the reconciles of them all.
	Queues []Window
	// CPU is the process's CPU over the span.
	CPU CPUUse
	// Memory is the most memory the Go runtime needed in the span: what it
	// held, or would hold before its next collection (procstat's
	// Sample.MemoryNeeded), at the readings in the span. 0: unknown.
	Memory uint64
	// Objects is the number of objects in the controller's informer caches
	// at the span's end, ObjectBytes the mean heap size of one (counted
	// from the caches), and HeapGrowth the heap the runtime lets grow per
	// live byte before it collects (1 + GOGC/100): an object costs
	// ObjectBytes × HeapGrowth of memory. 0: not counted.
	Objects     int
	ObjectBytes float64
	HeapGrowth  float64
}

// Recommendation is the one answer to "how big": the workers each queue
// should run, and the CPU and memory the pod should request and be limited
// to, each from the busiest PeakSpan of the history (up to Horizon), with
// the figures of that span: its arithmetic.
type Recommendation struct {
	// At is the end of the last span; Over is the history the
	// recommendation holds (up to Horizon), Span the length of the spans
	// (PeakSpan, shorter while the history is).
	At   time.Time     `json:"at"`
	Over time.Duration `json:"over_ns"`
	Span time.Duration `json:"span_ns"`
	// Queues are the queues of the last span, by name.
	Queues []QueueRecommendation `json:"queues"`
	CPU    CPURecommendation     `json:"cpu"`
	Memory MemoryRecommendation  `json:"memory"`
}

// QueueRecommendation is the worker count of one queue.
type QueueRecommendation struct {
	Name string `json:"name"`
	// Workers is the queue's worker count at the last span that knew it
	// (0: unknown);
	// Run is the count to run: the most any span recommended
	// (Verdict.Recommend: Little's law at TargetUtilization, never above
	// Workers unless its class may ask for more). Run < Workers says the
	// workers are more than enough; Known says whether any span had the
	// 5 reconciles Little's law needs.
	Workers int  `json:"workers"`
	Run     int  `json:"run"`
	Known   bool `json:"known"`
	// The span that set Run: its end, its arrivals per second, the mean
	// work time of a reconcile and its class.
	PeakAt   time.Time     `json:"peak_at"`
	Arrivals float64       `json:"arrivals_per_second"`
	MeanWork time.Duration `json:"mean_work_ns"`
	Class    Class         `json:"class"`
}

// CPURecommendation is the pod's CPU, in cores.
type CPURecommendation struct {
	// Known says whether the CPU was read in any span.
	Known bool `json:"known"`
	// Request is the most cores any span needed, rounded up to a
	// hundredth; Limit is twice it.
	Request float64 `json:"request_cores"`
	Limit   float64 `json:"limit_cores"`
	// The busiest span: its end, the cores it needed (the arrivals it got
	// at the CPU each reconcile took, over TargetUtilization: an idle
	// span's CPU over TargetUtilization), its arrivals per second, the
	// process's CPU per reconcile, and the cores it used.
	PeakAt       time.Time     `json:"peak_at"`
	Needed       float64       `json:"needed_cores"`
	Arrivals     float64       `json:"arrivals_per_second"`
	PerReconcile time.Duration `json:"per_reconcile_ns"`
	Used         float64       `json:"used_cores"`
	// LowerBound says that a queue of the busiest span was limited by the
	// CPU: a process short of CPU takes in its events more slowly too, so
	// the arrivals, and Needed, are at least what they show.
	LowerBound bool `json:"lower_bound,omitempty"`
	// Cores is the cores the process has at the last span: its cgroup's
	// quota, else GOMAXPROCS.
	Cores float64 `json:"cores"`
}

// MemoryRecommendation is the pod's memory, in bytes.
type MemoryRecommendation struct {
	// Known says whether the memory was read in any span.
	Known bool `json:"known"`
	// Request is the most memory any span needed, rounded up to a MiB;
	// Limit is 1.25 times it, and GOMEMLIMIT, for the
	// Go runtime's soft limit, 0.9 of the limit (both to a
	// MiB).
	Request    uint64 `json:"request_bytes"`
	Limit      uint64 `json:"limit_bytes"`
	GOMEMLIMIT uint64 `json:"gomemlimit_bytes"`
	// PeakAt is the end of the span that needed the most, Needed what it
	// needed.
	PeakAt time.Time `json:"peak_at"`
	Needed uint64    `json:"needed_bytes"`
	// Objects is the number of objects in the informer caches at the last
	// span, PerObject the memory one takes (its heap size, counted from
	// the caches, times the heap's growth before a collection) and Base
	// the rest of what the peak needed: Needed = Base + Objects ×
	// PerObject, which says how the request grows with the objects. 0:
	// not counted.
	Objects   int    `json:"objects"`
	PerObject uint64 `json:"per_object_bytes"`
	Base      uint64 `json:"base_bytes"`
}

// Recommend returns the recommendation of a process's history, its spans
// oldest first: the spans that end within Horizon of the last one count.
// A history without spans gives a Recommendation that knows nothing.
func Recommend(history []Span) Recommendation {
	if len(history) == 0 {
		return Recommendation{Queues: []QueueRecommendation{}}
	}
	last := history[len(history)-1]
	r := Recommendation{At: last.End, Queues: []QueueRecommendation{}}
	from := last.End.Add(-Horizon)
	for _, w := range last.Queues {
		r.Queues = append(r.Queues, QueueRecommendation{Name: w.Name, Workers: w.Workers})
	}
	// By name, and by order among the windows of one name: two queues
	// named alike stay two, each the window of its position.
	byName := map[string][]*QueueRecommendation{}
	for i := range r.Queues {
		byName[r.Queues[i].Name] = append(byName[r.Queues[i].Name], &r.Queues[i])
	}
	var start time.Time // of the first span that counts
	for _, s := range history {
		if s.End.Before(from) {
			continue
		}
		if b := s.End.Add(-spanOf(s)); start.IsZero() || b.Before(start) {
			start = b
		}
		r.Span = max(r.Span, spanOf(s))
	}
	for _, s := range history {
		// A span much shorter than the longest is one of the prefixes a
		// young history holds (the Sizer's spans start at its first
		// reading until they are PeakSpan long): the longest holds what
		// it did, averaged over more, as a burst shorter than PeakSpan
		// should be. Left in, an initial list's first seconds set the
		// peak for a Horizon.
		if s.End.Before(from) || spanOf(s) < r.Span*9/10 {
			continue
		}
		seen := map[string]int{}
		for _, w := range s.Queues {
			n := seen[w.Name]
			seen[w.Name]++
			if n >= len(byName[w.Name]) {
				continue
			}
			q := byName[w.Name][n]
			if w.Workers > 0 {
				// The latest count known: a stopped Runner's workers are
				// gone from the last span.
				q.Workers = w.Workers
			}
			if w.Reconciles < sizing.MinReconciles {
				continue
			}
			v := w.Classify()
			run := v.Recommend(w.Workers, w.LittlesLaw())
			// The most workers, and of equal counts the most demand:
			// the busiest span explains the count best.
			if !q.Known || run > q.Run || run == q.Run && w.Arrivals()*w.MeanWork().Seconds() > q.Arrivals*q.MeanWork.Seconds() {
				q.Known, q.Run, q.PeakAt, q.Arrivals, q.MeanWork, q.Class = true, run, s.End, w.Arrivals(), w.MeanWork(), v.Class
			}
		}
		if c, ok := s.coresNeeded(); ok && !math.IsNaN(c.Needed) && !math.IsInf(c.Needed, 0) && (!r.CPU.Known || c.Needed > r.CPU.Needed) {
			r.CPU = c
		}
		if s.Memory > r.Memory.Needed {
			r.Memory.Known, r.Memory.Needed, r.Memory.PeakAt = true, s.Memory, s.End
		}
	}
	r.Over = last.End.Sub(start)
	if last.CPU.Known {
		r.CPU.Cores = last.CPU.Cores
	}
	if r.CPU.Known {
		r.CPU.Request = math.Ceil(r.CPU.Needed*100-1e-9) / 100
		r.CPU.Request = max(r.CPU.Request, 0.01)
		r.CPU.Limit = r.CPU.Request * sizing.CPULimitPerRequest
	}
	if m := &r.Memory; m.Known {
		m.Request = roundUpMiB(float64(m.Needed))
		m.Limit = roundUpMiB(float64(m.Request) * sizing.MemoryLimitPerRequest)
		m.GOMEMLIMIT = uint64(float64(m.Limit)*sizing.GOMEMLIMITShare) / mib * mib
		if last.Objects > 0 && last.ObjectBytes > 0 {
			m.Objects = last.Objects
			m.PerObject = uint64(math.Round(last.ObjectBytes * max(1, last.HeapGrowth)))
			m.Base = m.Needed - min(m.Needed, uint64(m.Objects)*m.PerObject)
		}
	}
	slices.SortStableFunc(r.Queues, func(a, b QueueRecommendation) int { return cmp.Compare(a.Name, b.Name) })
	return r
}

const mib = 1 << 20

// roundWork rounds a work or CPU time for the text: to the microsecond
// under a millisecond, to 10 µs under 100 ms, to 100 µs above.
func roundWork(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < 100*time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}

// roundSpan rounds d for the text: to a tenth of a second under a minute,
// to a second above.
func roundSpan(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func roundUpMiB(b float64) uint64 {
	return uint64(math.Ceil(b/mib-1e-9)) * mib
}

// spanOf is the length of the span s: its longest window.
func spanOf(s Span) time.Duration {
	var d time.Duration
	for _, w := range s.Queues {
		d = max(d, w.Duration)
	}
	return d
}

// coresNeeded returns the cores the span needed: the process's CPU per
// reconcile times the arrivals of its queues over TargetUtilization (each
// queue's Window.Size), or, when no reconcile finished, the CPU it used
// over TargetUtilization (an idle controller still watches and collects).
func (s Span) coresNeeded() (CPURecommendation, bool) {
	if !s.CPU.Known {
		return CPURecommendation{}, false
	}
	c := CPURecommendation{Known: true, PeakAt: s.End, Used: s.CPU.Used}
	var reconciles uint64
	for _, w := range s.Queues {
		reconciles += w.Reconciles
	}
	if reconciles == 0 {
		c.Needed = s.CPU.Used / TargetUtilization
		return c, true
	}
	for _, w := range s.Queues {
		w.CPU, w.ProcessReconciles = s.CPU, reconciles
		sz := w.Size()
		if !sz.Known {
			continue
		}
		a := sizingArrivals(w)
		c.Needed += a * sz.CPUPerReconcile.Seconds() / TargetUtilization
		c.Arrivals += a
		c.PerReconcile = sz.CPUPerReconcile
		if w.Classify().Class == CPU {
			c.LowerBound = true
		}
	}
	return c, true
}

// sizingArrivals is the arrivals per second a span's CPU is sized for: the
// keys its reconciles served, and those they did not as a backlog to drain
// over PeakSpan, not as a rate of a span shorter than that. In a span of a
// young history an initial list arrives faster than any CPU serves it: the
// first 9 s of a demo with 100,000 objects, read as a rate, asked for 98
// cores. Over a span PeakSpan long it is the window's Arrivals.
func sizingArrivals(w Window) float64 {
	a, secs := w.Arrivals(), w.Seconds()
	served := float64(w.Reconciles) / secs
	if a <= served || secs >= PeakSpan.Seconds() {
		return a
	}
	return served + (a-served)*secs/PeakSpan.Seconds()
}

// String is the recommendation in one line, with its arithmetic:
//
//	workers: configmaps 2 (4 run: more than enough; 14.2 arrivals/s × 98ms / 0.7); cpu: request 0.15 limit 0.3 (14.2 arrivals/s × 7.1ms CPU each / 0.7); memory: request 24MiB limit 30MiB GOMEMLIMIT=27MiB (peak 23.5MiB = 22.5MiB + 200 objects × 5.2KiB); the busiest 5m0s of the last 12m0s
func (r Recommendation) String() string {
	if r.At.IsZero() {
		return "size: nothing measured yet"
	}
	var b strings.Builder
	b.WriteString("workers:")
	if len(r.Queues) == 0 {
		b.WriteString(" no queue")
	}
	for i, q := range r.Queues {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" " + q.String())
	}
	b.WriteString("; cpu: " + r.CPU.String())
	b.WriteString("; memory: " + r.Memory.String())
	if r.Span < PeakSpan {
		fmt.Fprintf(&b, "; over the %v so far (the busiest %v of the last %v once there is as much)", roundSpan(r.Over), PeakSpan, Horizon)
	} else {
		fmt.Fprintf(&b, "; the busiest %v of the last %v", PeakSpan, roundSpan(r.Over))
	}
	return b.String()
}

// String is "<name> <run> (<workers> run: <enough or not>; <its arithmetic>)".
func (q QueueRecommendation) String() string {
	if !q.Known {
		if q.Workers > 0 {
			return fmt.Sprintf("%s unknown (%d run; fewer than %d reconciles in every span)", q.Name, q.Workers, sizing.MinReconciles)
		}
		return fmt.Sprintf("%s unknown (fewer than %d reconciles in every span)", q.Name, sizing.MinReconciles)
	}
	var run string
	switch {
	case q.Workers <= 0:
		run = "workers run unknown"
	case q.Run < q.Workers:
		run = fmt.Sprintf("%d run: more than enough", q.Workers)
	case q.Run == q.Workers:
		run = fmt.Sprintf("%d run: enough", q.Workers)
	default:
		run = fmt.Sprintf("%d run: too few", q.Workers)
	}
	why := fmt.Sprintf("%.1f arrivals/s × %v / %g", q.Arrivals, roundWork(q.MeanWork), TargetUtilization)
	if q.Class != None && q.Class != Workers {
		why = fmt.Sprintf("%s, not more than run", q.Class)
	}
	return fmt.Sprintf("%s %d (%s; %s)", q.Name, q.Run, run, why)
}

// String is "request R limit L (<its arithmetic>)".
func (c CPURecommendation) String() string {
	if !c.Known {
		return "unknown (no CPU read)"
	}
	at := ""
	if c.LowerBound {
		at = ">="
	}
	why := fmt.Sprintf("%.2f used idle / %g", c.Used, TargetUtilization)
	if c.PerReconcile > 0 {
		why = fmt.Sprintf("%.1f arrivals/s × %v CPU each / %g", c.Arrivals, roundWork(c.PerReconcile), TargetUtilization)
	}
	return fmt.Sprintf("request %s%.2f limit %s%.2f (%s)", at, c.Request, at, c.Limit, why)
}

// String is "request R limit L GOMEMLIMIT=G (<its arithmetic>)".
func (m MemoryRecommendation) String() string {
	if !m.Known {
		return "unknown (no memory read)"
	}
	s := fmt.Sprintf("request %s limit %s GOMEMLIMIT=%s (peak %s", bytesText(m.Request), bytesText(m.Limit), bytesText(m.GOMEMLIMIT), bytesText(m.Needed))
	if m.Objects > 0 {
		s += fmt.Sprintf(" = %s + %d objects × %s", bytesText(m.Base), m.Objects, bytesText(m.PerObject))
	}
	return s + ")"
}

// bytesText is n bytes in the largest binary unit under it, to 3
// figures: "24MiB", "5.2KiB".
func bytesText(n uint64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if f < 1024 || u == "GiB" {
			return fmt.Sprintf("%.3g%s", f, u)
		}
		f /= 1024
	}
	return ""
}
