package apiserver

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The adaptive worker pool (-adaptive-workers, otelqueue.AdaptiveWorkers)
// of the examples, run as a user runs them: through a surge of the
// workload on the embedded cluster, and on the real API server against a
// client limit and against API Priority and Fairness. Each run reads the
// pool's count from the summary lines and its decisions from its
// "adaptive workers" lines.

// adaptiveInterval is the pool's decision interval
// (otelqueue.DefaultAdaptiveInterval): a decision reads the interval
// before it.
const adaptiveInterval = 5 * time.Second

// adaptiveRun is what a run of an example with -adaptive-workers showed:
// its summary lines, its pool's decisions and its workload's changes of
// rate (-churn-schedule).
type adaptiveRun struct {
	r         *exampleRun
	lines     []summary
	decisions []decision
	rates     []rateChange
}

// rateChange is the workload's log line at a change of -churn-schedule.
type rateChange struct {
	at   time.Duration // time of day
	rate float64
}

var rateChangeRe = regexp.MustCompile(`workload: ([\d.]+) updates per second from \S+ on \(-churn-schedule`)

// runAdaptive runs ex with args until it has logged n summary lines (one a
// second), stops it and returns what it logged.
func runAdaptive(t *testing.T, ex example, where string, n int, args ...string) *adaptiveRun {
	t.Helper()
	r := startExample(t, ex, where, args...)
	r.waitSummaries(n, time.Minute+time.Duration(n)*time.Second)
	r.stop()
	a := &adaptiveRun{r: r, lines: r.summaries()}
	for _, l := range r.log() {
		if d, ok := parseDecision(l); ok {
			a.decisions = append(a.decisions, d)
		}
		if m := rateChangeRe.FindStringSubmatch(l); m != nil {
			at, _ := timeOfDay(l)
			a.rates = append(a.rates, rateChange{at: at, rate: atof(m[1])})
		}
	}
	t.Logf("%s on %s: %s", ex.name, where, a.describe())
	if len(a.lines) == 0 || !a.lines[0].adaptive {
		t.Fatalf("%s on %s: the summary lines show no adaptive pool: %v", ex.name, where, a.lines)
	}
	return a
}

// describe is the run's pool for logs: its count line by line (with the
// ceiling it reports), and its decisions.
func (a *adaptiveRun) describe() string {
	var b strings.Builder
	b.WriteString("counts by summary line:")
	for _, s := range a.lines {
		switch {
		case !s.adaptive:
			b.WriteString(" -")
		case s.ceiling > 0:
			fmt.Fprintf(&b, " %d(ceiling %d)", s.workers, s.ceiling)
		default:
			fmt.Fprintf(&b, " %d", s.workers)
		}
	}
	for _, d := range a.decisions {
		fmt.Fprintf(&b, "\n  %s", d.line)
	}
	return b.String()
}

// counts is the counts of the summary lines, for messages.
func (a *adaptiveRun) counts() string {
	var parts []string
	for _, s := range a.lines {
		parts = append(parts, strconv.Itoa(s.workers))
	}
	return strings.Join(parts, " ")
}

// todSub returns how long after the time of day b the time of day a is,
// within half a day either way (a run may pass midnight).
func todSub(a, b time.Duration) time.Duration {
	d := a - b
	switch {
	case d > 12*time.Hour:
		d -= 24 * time.Hour
	case d < -12*time.Hour:
		d += 24 * time.Hour
	}
	return d
}

// exampleNamed returns the example called name.
func exampleNamed(t *testing.T, name string) example {
	t.Helper()
	for _, ex := range examples {
		if ex.name == name {
			return ex
		}
	}
	t.Fatalf("no example %q among %v", name, examples)
	return example{}
}

// TestAdaptiveOnEmbeddedCluster runs the app on its embedded cluster with
// an adaptive pool starting at 2 workers through a surge of the workload:
// 20 updates a second of 50 ms reconciles (about one busy worker), 300 a
// second from 25 s (about 15), 20 again from 55 s. The pool must grow
// during the surge, to twice its start at least, for the demand or the
// queue wait, and come down after it for low utilization.
//
// The flags besides the schedule: -objects 2000 spreads the surge over
// enough keys that they neither coalesce onto a few nor conflict (with the
// default 50, each key is written six times a second: the queue's dedup
// caps the work at 50 keys and a third of the reconciles' Updates met a
// 409, errors for which the pool rightly does not grow); -kube-qps 1000
// lets the surge's 300 Updates a second through (at the default 100 the
// pool stops at the client's limit, as TestAdaptiveOnAPIServer checks);
// -error-rate 0 and -burst-every 0 leave the schedule the only change of
// the load. 140 s: the pool meets a plain surge in one step, and shrinks
// to the highest demand of its last minute (its shrink window), so it
// comes down a minute after the surge's last busy interval: 55 s + 60 s +
// two intervals, with room. In a run here (2026-12-04) it went 2 → 1 on the
// initial list's no-op reconciles, 1 → 6 and 6 → 31 in the surge, 15 s
// apart, and stayed at 31–32 to 90 s, where the test used to end.
func TestAdaptiveOnEmbeddedCluster(t *testing.T) {
	const start, surge, calm = 2, 300, 20
	ex := exampleNamed(t, "app")
	a := runAdaptive(t, ex, "fake", 140, "-adaptive-workers", "1:32", "-workers", strconv.Itoa(start),
		"-latency", "50ms", "-churn", strconv.Itoa(calm), "-churn-schedule", fmt.Sprintf("25s:%d,55s:%d", surge, calm),
		"-objects", "2000", "-error-rate", "0", "-burst-every", "0", "-kube-qps", "1000", "-kube-burst", "1000")
	if len(a.rates) != 2 || a.rates[0].rate != surge || a.rates[1].rate != calm {
		t.Fatalf("the workload logged the changes %+v, want to %d and back to %d updates a second", a.rates, surge, calm)
	}
	from, to := a.rates[0].at, a.rates[1].at
	during := func(at time.Duration) bool { return todSub(at, from) >= 0 && todSub(at, to) <= adaptiveInterval }

	// The workload did surge: the summary lines of the surge show its rate.
	var requested float64
	for _, s := range a.lines {
		if s.atOK && todSub(s.at, from) > 0 && todSub(s.at, to) < 0 {
			requested = max(requested, s.requested)
		}
	}
	if requested < 0.9*surge {
		t.Errorf("the summary lines of the surge show at most %.1f writes requested a second, want %d", requested, surge)
	}

	// The pool grew in the surge (decisions up to one interval after its
	// end read it), for the demand or the wait only.
	before := start // the count at the surge's start
	for _, d := range a.decisions {
		if todSub(d.at, from) < 0 {
			before = d.to
		}
	}
	peak, lastGrow := 0, time.Duration(0)
	for _, d := range a.decisions {
		if !during(d.at) || d.to <= d.from {
			continue
		}
		if d.reason != "demand" && d.reason != "wait" {
			t.Errorf("the pool grew in the surge for %s, want demand or wait: %s", d.reason, d.line)
		}
		peak, lastGrow = max(peak, d.to), d.at
	}
	if peak < 2*start || peak <= before {
		t.Errorf("the pool's count in the surge reached %d from %d at its start, want at least %d, twice its start (counts: %s)", peak, before, 2*start, a.counts())
	}

	// It came down after the surge, for low utilization, once done
	// growing.
	var shrank []decision
	for _, d := range a.decisions {
		if todSub(d.at, to) > 0 && d.to < d.from && d.reason == "low-utilization" {
			shrank = append(shrank, d)
		}
	}
	last := a.lines[len(a.lines)-1]
	switch {
	case len(shrank) == 0:
		t.Errorf("the pool made no low-utilization shrink after the surge (counts: %s)", a.counts())
	case todSub(shrank[0].at, lastGrow) < 0:
		t.Errorf("the pool shrank for low utilization before it was done growing for the surge: %s", shrank[0].line)
	case last.workers >= peak:
		t.Errorf("the pool ends at %d, not below its peak %d of the surge: %s", last.workers, peak, last.line)
	}
	report.addNote(fmt.Sprintf("%s on the embedded API server, -adaptive-workers 1:32 -workers %d, -churn %d -churn-schedule 25s:%d,55s:%d of 50 ms reconciles: counts by second %s",
		ex.name, start, calm, surge, calm, a.counts()))
}

// TestAdaptiveOnAPIServer runs each example with an adaptive pool
// (-adaptive-workers 1:32, starting at 4) on the real API server where a
// downstream limit, not the workers, holds the reconciles back: the pool
// must not grow against it.
//
// client-limit: the controller's client at 5 requests a second
// (-kube-qps 5 -kube-burst 1) under 40 updates a second of 1 ms
// reconciles (classifyFlags). Every reconcile of an update makes one
// request, so the reconciles are done at 5 a second whatever the count,
// and the pool must shrink to the count that limit serves and stay there.
//
// server-throttling: the API server of TestExamplesThrottledByAPIServer,
// whose API Priority and Fairness gives the example one seat and answers
// 429 beyond it, under its load (throttleFlags: 200 updates a second).
func TestAdaptiveOnAPIServer(t *testing.T) {
	const start = 4
	adaptive := []string{"-adaptive-workers", "1:32", "-workers", strconv.Itoa(start), "-summary-interval", "1s"}

	t.Run("client-limit", func(t *testing.T) {
		// The bound the pool must end within: the ceiling a downstream
		// limit sets is max(MIN, ceil(1.1 × usable)), where usable is
		// the reconciles the downstream serves at once at no-load speed:
		// the throughput, at most 5 a second, times the no-load work time
		// (the reconcile's own 1 ms and one request's time at the API
		// server, without the limiter's wait). A request on loopback
		// takes milliseconds (no-load work times of 3 and 14 ms in runs
		// here, 2026-12-02); at 200 ms, a generous bound for a loaded
		// 2-core machine, usable is 5/s × 0.2 s = 1 and the ceiling
		// ceil(1.1) = 2. The pool shrinks to at most half its count at a
		// time, so from 4 it gets to 2 in one step and to 1 in a second
		// (10 and 25 s in, in runs here).
		const qps, maxRequest = 5, 200 * time.Millisecond
		bound := int(math.Ceil(1.1 * qps * maxRequest.Seconds()))
		for _, ex := range examples {
			t.Run(ex.name, func(t *testing.T) {
				ns := shared.namespace(t, "otelqueue-adaptive-"+ex.name)
				kubeconfig := shared.kubeconfig(t, "otelqueue-example", "otelqueue:examples")
				args := append([]string{"-kubeconfig", kubeconfig, "-namespace", ns, "-generate", "-kube-qps", strconv.Itoa(qps), "-kube-burst", "1"}, classifyFlags[ex.name]...)
				a := runAdaptive(t, ex, shared.name, 60, append(args, adaptive...)...)

				// Never a step up: the limit is there from the first
				// request and throughout, so no window shows the pool
				// short of workers, and a probe above the ceiling waits
				// for the end of its hold (2 minutes, beyond the run) or
				// for the limiter's waits to vanish, which they never do
				// at 40 updates a second against 5 requests.
				for _, d := range a.decisions {
					if d.to > d.from {
						t.Errorf("the pool grew against the client's limit: %s", d.line)
					}
				}
				// Once down to the ceiling it reports, the count stays
				// within it, and the ceiling stays, its hold (2 minutes)
				// outlasting the run. (The pool comes down at most by
				// half at a time, so for a step or more it may be above
				// the ceiling it set.)
				reached := false
				for _, s := range a.lines {
					if s.workers > start {
						t.Errorf("the count %d is above its start %d: %s", s.workers, start, s.line)
					}
					switch {
					case s.ceiling > 0 && s.workers <= s.ceiling:
						reached = true
					case reached && s.ceiling == 0:
						t.Errorf("the ceiling was lifted within its hold, the limit still there: %s", s.line)
					case reached:
						t.Errorf("the count %d rose above the ceiling %d after reaching it: %s", s.workers, s.ceiling, s.line)
					}
				}
				last := a.lines[len(a.lines)-1]
				if last.workers > bound || last.ceiling < 1 || last.ceiling > bound || last.reason != "client-rate-limit" {
					t.Errorf("the pool ends at %d workers, ceiling %d, last reason %q: want at most %d workers, a ceiling from 1 to %d, and client-rate-limit: %s",
						last.workers, last.ceiling, last.reason, bound, bound, last.line)
				}
				if n := len(a.decisions); n == 0 || a.decisions[n-1].reason != "client-rate-limit" {
					t.Errorf("the pool's last decision is not for the client's rate limit: %v", a.decisions)
				}
				report.addNote(fmt.Sprintf("%s on kube-apiserver %s, -kube-qps 5 -kube-burst 1 %s %s: counts by second %s; last: %s",
					ex.name, shared.version, strings.Join(classifyFlags[ex.name], " "), strings.Join(adaptive, " "), a.counts(), last.line))
			})
		}
	})

	t.Run("server-throttling", func(t *testing.T) {
		p := startThrottledPlane(t, "adaptive-throttled")
		// A probe, the only step up a downstream limit allows, is to
		// max(count+1, ceil(1.5 × count)) from a ceiling at most the
		// start.
		probe := max(start+1, int(math.Ceil(1.5*start)))
		for _, ex := range examples {
			t.Run(ex.name, func(t *testing.T) {
				ns := p.namespace(t, "otelqueue-adaptive-"+ex.name)
				kubeconfig := p.kubeconfig(t, throttled, throttled)
				before := rejected(t, p)
				args := append([]string{"-kubeconfig", kubeconfig, "-namespace", ns, "-generate"}, throttleFlags[ex.name]...)
				a := runAdaptive(t, ex, p.name, 60, append(args, adaptive...)...)
				n := rejected(t, p) - before
				if n == 0 {
					t.Fatalf("the API server rejected none of the example's requests: the test provoked nothing")
				}
				for _, s := range a.lines {
					if s.workers > probe {
						t.Errorf("the count %d is above its start %d by more than a probe step (to %d): %s", s.workers, start, probe, s.line)
					}
				}
				reasons := map[string]int{}
				for _, d := range a.decisions {
					reasons[d.reason]++
				}
				if len(a.decisions) > 0 && reasons["server-throttling"] == 0 {
					t.Errorf("the pool decided for %v, never for server-throttling, with %d requests rejected with 429", reasons, n)
				}
				last := a.lines[len(a.lines)-1]
				t.Logf("%d requests rejected with 429; decisions %v; last: %s", n, reasons, last.line)
				report.addNote(fmt.Sprintf("%s on kube-apiserver %s with 1 seat (429s), %s %s: %d requests rejected; counts by second %s; last: %s",
					ex.name, p.version, strings.Join(throttleFlags[ex.name], " "), strings.Join(adaptive, " "), n, a.counts(), last.line))
			})
		}
	})
}
