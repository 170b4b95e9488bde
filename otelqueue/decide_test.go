package otelqueue

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// The tests of the adaptive pool's rule feed a controller windows of one
// interval each, as the pool would, and check its decisions. Every window
// is built from a load: the numbers a window holds, derived as the pool
// derives them from the queue's signals.

// decideInterval is the decision interval of these tests.
const decideInterval = time.Second

// decideT0 is the time of the tests' first window's start.
var decideT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// load is what happened in one window of one interval at the controller's
// limit: done reconciles finished (and as many were handed out), each after
// work, of which limiter and retryAfter were waits on the client's rate
// limiter and the API server's Retry-After; the workers were busy done ×
// work a second (busy, when set, replaces it); depth keys were waiting at
// the end, and drained more at the start; adds and retries are the queue's
// counts; wait is the 90th percentile of the queue wait.
type load struct {
	done                      int
	work, limiter, retryAfter time.Duration
	busy                      float64
	depth, drained            int
	adds, retries             uint64
	delayedAdds               uint64
	wait                      time.Duration
	apiserver                 bottleneck.APIServerUse
}

func (l load) window(limit int) *window {
	n := time.Duration(l.done)
	busy := n * l.work
	if l.busy > 0 {
		busy = time.Duration(l.busy * float64(decideInterval))
	}
	return &window{
		dur: decideInterval, limit: limit,
		started: uint64(l.done), done: uint64(l.done),
		work: n * l.work, busy: busy,
		waitP90: l.wait,
		depth:   l.depth, depthBefore: l.depth + l.drained,
		adds: l.adds, retries: l.retries, delayedAdds: l.delayedAdds,
		limiterWait: n * l.limiter, retryAfterWait: n * l.retryAfter,
		apiserver: l.apiserver,
	}
}

// Loads of the tests, at a limit of 16 unless said.
var (
	// steady: 60 reconciles a second of 100ms, 6 workers busy: the demand
	// needs 14 (6 + 3·√6), within the band that neither grows nor shrinks
	// 16; it makes 100ms the no-load work time.
	steady = load{done: 60, work: 100 * time.Millisecond}
	// steadyShort: the same demand in 600 reconciles a second of 10ms.
	steadyShort = load{done: 600, work: 10 * time.Millisecond}
	// clientLimited: 13 busy, 100 reconciles a second of 130ms, 30ms of it
	// waiting on the client's rate limiter: the downstream serves 100/s ×
	// 100ms = 10 at once, and the 3 more wait.
	clientLimited = load{done: 100, work: 130 * time.Millisecond, limiter: 30 * time.Millisecond, depth: 200}
	// serverLimited: the same, waiting on the API server's Retry-After.
	serverLimited = load{done: 100, work: 130 * time.Millisecond, retryAfter: 30 * time.Millisecond, depth: 200}
	// gradient: the same, but each reconcile takes 130ms with nothing to
	// wait for: a shared resource slows every reconcile down.
	gradient = load{done: 100, work: 130 * time.Millisecond, depth: 200}
	// atCeiling: 11 busy at a ceiling of 11 with a backlog of 500 keys: the
	// demand wants more, the downstream serves 10 (not over it by more than
	// 1), and the limiter's waits (the signs of the limit) are still there.
	atCeiling = load{done: 100, work: 110 * time.Millisecond, limiter: 10 * time.Millisecond, depth: 500}
	// limitGone: 11 busy, at the no-load work time, no waits: the signs of
	// the limit are gone, and the demand, with 500 keys waiting, wants more.
	limitGone = load{done: 110, work: 100 * time.Millisecond, depth: 500}
	// idle: nothing at all.
	idle = load{}
	// light: 30 short reconciles a second: the demand needs 2.
	light = load{done: 30, work: 10 * time.Millisecond}
	// tiny: 30 reconciles a second of 1ms: the demand needs 1.
	tiny = load{done: 30, work: time.Millisecond}
	// demand: 40 reconciles a second of 100ms with 300 keys waiting: the
	// demand needs 12, far more than 4 busy workers.
	demand = load{done: 40, work: 100 * time.Millisecond, depth: 300, adds: 100}
)

// ctlRun feeds a controller windows, one interval apart.
type ctlRun struct {
	t *testing.T
	c *controller
	n int // windows fed
}

// newCtlRun returns a run of a controller that has decided on windows for
// a shrink window already, so that it knows the demand of the whole shrink
// window; newStartedCtlRun is one that starts at the first window fed.
func newCtlRun(t *testing.T, lo, hi, start int) *ctlRun {
	r := newStartedCtlRun(t, lo, hi, start)
	r.c.firstWindow = decideT0.Add(-shrinkWindowIntervals * decideInterval)
	return r
}

func newStartedCtlRun(t *testing.T, lo, hi, start int) *ctlRun {
	return &ctlRun{t: t, c: newController(lo, hi, start, defaultWaitObjective, decideInterval)}
}

// now is the end of the last window fed.
func (r *ctlRun) now() time.Time { return decideT0.Add(time.Duration(r.n) * decideInterval) }

// feed decides on a window of l at the controller's limit, ending one
// interval after the last, and checks that a decision is a change of the
// controller's limit.
func (r *ctlRun) feed(l load) (decision, figures, bool) {
	r.t.Helper()
	r.n++
	return r.feedAt(l, r.now())
}

func (r *ctlRun) feedAt(l load, now time.Time) (decision, figures, bool) {
	r.t.Helper()
	d, f, ok := r.c.decide(l.window(r.c.limit), now)
	if ok && d.to != r.c.limit {
		r.t.Fatalf("decision %+v, but the controller's limit is %d", d, r.c.limit)
	}
	return d, f, ok
}

// none feeds l n times and fails the test on any decision.
func (r *ctlRun) none(l load, n int, why string) {
	r.t.Helper()
	for range n {
		if d, _, ok := r.feed(l); ok {
			r.t.Fatalf("window %d: decision %d (%s, %q); want none: %s", r.n, d.to, d.reason, d.detail, why)
		}
	}
}

// want feeds l once and checks the decision.
func (r *ctlRun) want(l load, to int, reason poolReason) decision {
	r.t.Helper()
	from := r.c.limit
	d, f, ok := r.feed(l)
	if !ok {
		r.t.Fatalf("window %d: no decision, want %d → %d (%s); figures %+v", r.n, from, to, reason, f)
	}
	if d.to != to || d.reason != reason {
		r.t.Fatalf("window %d: decision %d → %d (%s, %q), want %d → %d (%s)", r.n, from, d.to, d.reason, d.detail, from, to, reason)
	}
	if d.detail == "" {
		r.t.Errorf("window %d: decision %s with no detail", r.n, reason)
	}
	return d
}

// settle feeds steady windows until the no-load work time is 100ms.
func (r *ctlRun) settle() {
	r.t.Helper()
	r.none(steady, 3, "the steady load needs 14 of 16")
	if r.c.noLoad != 100*time.Millisecond {
		r.t.Fatalf("no-load work time %v after steady windows of 100ms, want 100ms", r.c.noLoad)
	}
}

// TestDecideFigures checks the figures of the loads the other tests use,
// so that a change of the rule's constants shows here first.
func TestDecideFigures(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	for _, tc := range []struct {
		name                  string
		l                     load
		busy, usable, limiter float64
		needed                int
		base                  time.Duration
		sample                bool
	}{
		{name: "steady", l: steady, busy: 6, usable: 6, needed: 14, base: 100 * time.Millisecond, sample: true},
		// 100/s and 200 keys waiting / 30 s, of 130ms: 13.9 busy, 26 with
		// the staffing margin.
		{name: "client limited", l: clientLimited, busy: 13, usable: 10, limiter: 30.0 / 130, needed: 26, base: 100 * time.Millisecond, sample: true},
		{name: "idle", l: idle, needed: 1},
	} {
		c := *r.c // a copy: figures updates the no-load work time
		f := c.figures(tc.l.window(16))
		if math.Abs(f.busy-tc.busy) > 1e-9 || math.Abs(f.usable-tc.usable) > 1e-9 || f.needed != tc.needed ||
			f.base != tc.base || f.sample != tc.sample || math.Abs(f.limiter-tc.limiter) > 1e-9 {
			t.Errorf("%s: figures busy %.3f, usable %.3f, needed %d, base %v, sample %v, limiter %.3f; want %.3f, %.3f, %d, %v, %v, %.3f",
				tc.name, f.busy, f.usable, f.needed, f.base, f.sample, f.limiter, tc.busy, tc.usable, tc.needed, tc.base, tc.sample, tc.limiter)
		}
	}
}

// TestDecideClientRateLimit: with 13 busy where the downstream serves 10
// and the difference waits on the client's rate limiter, two windows in a
// row, the pool shrinks to ceil(1.1 × 10) = 11 for the client rate limit,
// and holds it as its ceiling; one such window is not enough.
func TestDecideClientRateLimit(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(clientLimited, 1, "one window over the downstream's count is not enough")
	d := r.want(clientLimited, 11, reasonClientRateLimit)
	if r.c.ceiling != 11 {
		t.Errorf("ceiling %d, want 11", r.c.ceiling)
	}
	if want := fmt.Sprintf("ceiling 11 held %v", initialHold); !strings.Contains(d.detail, want) {
		t.Errorf("detail %q, want it to say %q", d.detail, want)
	}
	if r.c.noLoad != 100*time.Millisecond {
		t.Errorf("no-load work time %v, want 100ms (the limiter's wait is not work)", r.c.noLoad)
	}
}

// TestDecideServerThrottling: the same with the time lost to the API
// server's Retry-After.
func TestDecideServerThrottling(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(serverLimited, 1, "one window over the downstream's count is not enough")
	r.want(serverLimited, 11, reasonServerThrottling)
	if r.c.ceiling != 11 {
		t.Errorf("ceiling %d, want 11", r.c.ceiling)
	}
}

// TestDecideLimitedNotTwiceInARow: a window under the downstream's count
// between two over it starts the count again.
func TestDecideLimitedNotTwiceInARow(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(clientLimited, 1, "one window over the downstream's count")
	r.none(steady, 1, "a steady window")
	r.none(clientLimited, 1, "one window over the downstream's count since the steady one")
	r.want(clientLimited, 11, reasonClientRateLimit)
}

// TestDecideLatencyGradient: reconciles that take longer with more at once
// and wait on nothing make the pool shrink for the latency gradient; when
// the work then takes as long as before at the lower count, the downstream
// is slower for everyone: slower-for-all takes the new work time as the
// no-load one and lifts the ceiling, without changing the limit.
func TestDecideLatencyGradient(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(gradient, 1, "one window over the downstream's count is not enough")
	r.want(gradient, 11, reasonLatencyGradient)
	if r.c.ceiling != 11 || r.c.last != verifying {
		t.Fatalf("after the shrink: ceiling %d, state %v; want 11, verifying", r.c.ceiling, r.c.last)
	}
	// At 11, 85 reconciles a second of 130ms: no faster.
	slow := load{done: 85, work: 130 * time.Millisecond}
	r.none(slow, 1, "within two intervals of the shrink")
	r.want(slow, 11, reasonSlowerForAll)
	if r.c.noLoad != 130*time.Millisecond || r.c.ceiling != 0 || r.c.hold != initialHold {
		t.Errorf("after slower-for-all: no-load %v, ceiling %d, hold %v; want 130ms, 0, %v", r.c.noLoad, r.c.ceiling, r.c.hold, initialHold)
	}
}

// TestDecideLatencyGradientConfirmed: when the work got faster at the lower
// count, the shrink was right: the ceiling stays and the pool holds there
// whatever the demand.
func TestDecideLatencyGradientConfirmed(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(gradient, 1, "one window over the downstream's count is not enough")
	r.want(gradient, 11, reasonLatencyGradient)
	// At 11, 110 reconciles a second of 100ms with a backlog: as fast as
	// at no load, and the demand wants more.
	fast := load{done: 110, work: 100 * time.Millisecond, depth: 500}
	r.none(fast, 10, "at the ceiling, before its hold is over")
	if r.c.ceiling != 11 || r.c.noLoad != 100*time.Millisecond || r.c.last != settled {
		t.Errorf("ceiling %d, no-load %v, state %v; want 11, 100ms, settled", r.c.ceiling, r.c.noLoad, r.c.last)
	}
}

// TestDecideRetries: when more than half the adds are retries through the
// rate limiter's backoff, errors are the bottleneck and the pool does not
// grow, however much the demand or the wait asks; at half, it grows, and so
// it does when the retries are requeues the reconcile asked for
// (RequeueAfter: delayed adds), which are no failures.
func TestDecideRetries(t *testing.T) {
	t.Run("above half", func(t *testing.T) {
		r := newCtlRun(t, 1, 32, 4)
		l := demand
		l.retries = 51
		l.wait = 10 * time.Second
		r.none(l, 20, "51 retries in 100 adds")
		if r.c.limit != 4 {
			t.Errorf("limit %d, want 4", r.c.limit)
		}
	})
	t.Run("half", func(t *testing.T) {
		r := newCtlRun(t, 1, 32, 4)
		l := demand
		l.retries = 50
		r.want(l, withMargin(12), reasonDemand)
	})
	t.Run("requeues asked for", func(t *testing.T) {
		r := newCtlRun(t, 1, 32, 4)
		l := demand
		l.retries, l.delayedAdds = 95, 90
		r.want(l, withMargin(12), reasonDemand)
	})
}

// TestDecideCeilingHoldAndProbe: at the ceiling a downstream limit set, the
// pool holds however much the demand asks until the hold is over, then
// probes 1.5 × higher; a probe that finds the downstream still limited goes
// back to the ceiling and doubles the hold, and the next probe waits for it.
func TestDecideCeilingHoldAndProbe(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(clientLimited, 1, "one window over the downstream's count is not enough")
	r.want(clientLimited, 11, reasonClientRateLimit)
	shrunk := r.now()
	if r.c.ceilingUntil != shrunk.Add(initialHold) {
		t.Fatalf("ceiling held until %v, want %v", r.c.ceilingUntil, shrunk.Add(initialHold))
	}
	// Held until the end of the hold, inclusive.
	r.none(atCeiling, int(initialHold/decideInterval), "at the ceiling, within its hold")
	if got := r.now(); got != shrunk.Add(initialHold) {
		t.Fatalf("fed up to %v, want %v", got, shrunk.Add(initialHold))
	}
	d := r.want(atCeiling, 17, reasonProbe) // ceil(1.5 × 11)
	if !strings.Contains(d.detail, "its hold is over") {
		t.Errorf("probe detail %q, want it to say its hold is over", d.detail)
	}
	probed := r.now()

	// 17 busy where the downstream still serves 10.
	stillLimited := load{done: 100, work: 170 * time.Millisecond, limiter: 70 * time.Millisecond, depth: 500}
	r.none(stillLimited, 1, "within two intervals of the probe")
	d = r.want(stillLimited, 11, reasonClientRateLimit)
	if !strings.Contains(d.detail, "probe found the limit still there") {
		t.Errorf("revert detail %q, want it to say the probe found the limit", d.detail)
	}
	if r.c.hold != 2*initialHold || r.c.ceiling != 11 {
		t.Errorf("after the probe: hold %v, ceiling %d; want %v, 11", r.c.hold, r.c.ceiling, 2*initialHold)
	}
	reverted := r.now()
	if reverted.Sub(probed) != 2*decideInterval {
		t.Errorf("reverted %v after the probe, want 2 intervals", reverted.Sub(probed))
	}
	r.none(atCeiling, int(2*initialHold/decideInterval), "at the ceiling, within its doubled hold")
	r.want(atCeiling, 17, reasonProbe)
}

// TestDecideHoldDoublesUpToMax: each probe that finds the limit doubles the
// hold, up to maxHold.
func TestDecideHoldDoublesUpToMax(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(clientLimited, 1, "one window over the downstream's count is not enough")
	r.want(clientLimited, 11, reasonClientRateLimit)
	stillLimited := load{done: 100, work: 170 * time.Millisecond, limiter: 70 * time.Millisecond, depth: 500}
	for want := 2 * initialHold; ; want = min(2*want, maxHold) {
		hold := r.c.hold
		r.none(atCeiling, int(hold/decideInterval), "within the hold")
		r.want(atCeiling, 17, reasonProbe)
		r.none(stillLimited, 1, "within two intervals of the probe")
		r.want(stillLimited, 11, reasonClientRateLimit)
		if r.c.hold != want {
			t.Fatalf("hold %v after a probe with a hold of %v, want %v", r.c.hold, hold, want)
		}
		if hold == maxHold {
			break
		}
	}
}

// TestDecideProbeWhenSignsGone: at the ceiling, once its limit was seen
// there, two windows without its signs (no limiter or Retry-After waits,
// work at the no-load time) make the pool probe before the hold is over,
// straight to the demand's count; a probe that finds no limit drops the
// ceiling and resets the hold.
func TestDecideProbeWhenSignsGone(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(clientLimited, 1, "one window over the downstream's count is not enough")
	r.want(clientLimited, 11, reasonClientRateLimit)
	r.none(atCeiling, 2, "the limit still seen at the ceiling")
	r.none(limitGone, 1, "one window without the signs of the limit")
	d := r.want(limitGone, withMargin(24), reasonProbe) // 110/s + 500 waiting / 30 s, of 100ms: 12.7 busy, 24 with the margin
	if !strings.Contains(d.detail, "the signs of the downstream limit are gone") {
		t.Errorf("probe detail %q, want it to say the signs are gone", d.detail)
	}
	if r.now().After(r.c.ceilingUntil) {
		t.Fatalf("probed at %v, after the hold (%v): the test does not test the early probe", r.now(), r.c.ceilingUntil)
	}
	// At 27: 270 reconciles a second of 100ms, no waits: the downstream
	// serves all of them.
	free := load{done: 270, work: 100 * time.Millisecond}
	r.none(free, 1, "within two intervals of the probe")
	if d, _, ok := r.feed(free); ok && d.to < 27 {
		t.Errorf("a probe that found no limit: decision %d (%s), want no shrink", d.to, d.reason)
	}
	if r.c.ceiling != 0 || r.c.hold != initialHold || r.c.last == probing {
		t.Errorf("after a probe that found no limit: ceiling %d, hold %v, state %v; want 0, %v, not probing", r.c.ceiling, r.c.hold, r.c.last, initialHold)
	}
}

// TestDecideNoEarlyProbeUnseen: without the limit's signs seen at the
// ceiling since the shrink, windows without them do not make it probe
// early: the shrink itself is no sighting.
func TestDecideNoEarlyProbeUnseen(t *testing.T) {
	r := newCtlRun(t, 1, 32, 16)
	r.settle()
	r.none(clientLimited, 1, "one window over the downstream's count is not enough")
	r.want(clientLimited, 11, reasonClientRateLimit)
	r.none(limitGone, 10, "the limit not seen at the ceiling since the shrink")
}

// TestDecideBounds: the limit stays within [lo, hi] whatever the demand or
// the downstream asks.
func TestDecideBounds(t *testing.T) {
	t.Run("grow to hi", func(t *testing.T) {
		r := newCtlRun(t, 1, 6, 4)
		r.want(demand, 6, reasonDemand) // 8 but for hi
		r.none(demand, 10, "at hi")
	})
	t.Run("client limit to lo", func(t *testing.T) {
		r := newCtlRun(t, 8, 32, 10)
		// 10 busy where the downstream serves 2, with keys waiting.
		l := load{done: 20, work: 500 * time.Millisecond, limiter: 400 * time.Millisecond, depth: 100}
		r.none(l, 1, "one window over the downstream's count is not enough")
		r.want(l, 8, reasonClientRateLimit)
		if r.c.ceiling != 8 {
			t.Errorf("ceiling %d, want lo (8)", r.c.ceiling)
		}
		r.none(l, 10, "at lo")
	})
	t.Run("low utilization to lo", func(t *testing.T) {
		r := newCtlRun(t, 5, 32, 10)
		r.want(tiny, 5, reasonLowUtilization)
		r.none(tiny, 10, "at lo")
	})
}

// TestDecideInterval: no change within two intervals of the last, but a
// grow for a plain demand (no downstream limit seen), which may follow a
// grow by one interval: a surge is met in one step, and the next follows
// the next window.
func TestDecideInterval(t *testing.T) {
	t.Run("plain demand", func(t *testing.T) {
		r := newCtlRun(t, 1, 64, 4)
		r.want(demand, withMargin(12), reasonDemand) // straight to the demand's count, not ×2
		changed := r.now()
		more := demand
		more.depth = 1500 // 40/s + 1500 / 30 s of 100ms: 9 busy, 18 with the margin, 20 with the band
		if d, _, ok := r.feedAt(more, changed.Add(decideInterval/2)); ok {
			t.Fatalf("half an interval after the change: decision %d (%s), want none", d.to, d.reason)
		}
		if d, _, ok := r.feedAt(more, changed.Add(decideInterval)); !ok || d.to <= withMargin(12) || d.reason != reasonDemand {
			t.Errorf("an interval after the change: decision %v %+v, want a grow for the demand", ok, d)
		}
	})
	t.Run("after a shrink", func(t *testing.T) {
		r := newCtlRun(t, 1, 64, 32)
		quiet := load{done: 5, work: 100 * time.Millisecond} // no sample: no no-load work time
		r.want(quiet, withMargin(3), reasonLowUtilization)   // 0.5 busy: 3 with the staffing margin
		changed := r.now()
		more := demand
		more.depth = 3000 // 40/s + 3000 / 30 s of 100ms: 14 busy, 26 with the margin
		for _, after := range []time.Duration{decideInterval / 2, decideInterval, 2*decideInterval - time.Nanosecond} {
			if d, _, ok := r.feedAt(more, changed.Add(after)); ok {
				t.Fatalf("%v after a shrink: decision %d (%s), want none within 2 intervals", after, d.to, d.reason)
			}
		}
		if d, _, ok := r.feedAt(more, changed.Add(2*decideInterval)); !ok || d.to <= withMargin(3) {
			t.Errorf("2 intervals after the shrink: decision %v %+v, want a grow", ok, d)
		}
	})
}

// TestDecideLowUtilization: the highest demand of the shrink window
// (shrinkWindowIntervals intervals) with the grow band's margin, at most
// shrinkShare of the limit, shrinks it in one step to that count, by a step
// of at least 2 unless to lo; a higher demand within the window holds the
// limit until it ages out, and keys waiting over the objective hold it.
func TestDecideLowUtilization(t *testing.T) {
	t.Run("one step", func(t *testing.T) {
		r := newCtlRun(t, 1, 32, 16)
		r.want(light, withMargin(2), reasonLowUtilization) // 0.3 busy: 2 with the staffing margin
		r.none(light, 10, "at the demand's count")
	})
	t.Run("a step of 1 to lo", func(t *testing.T) {
		r := newCtlRun(t, 3, 32, 4)
		r.want(light, 3, reasonLowUtilization)
	})
	t.Run("no step of 1", func(t *testing.T) {
		r := newCtlRun(t, 1, 32, 4)
		r.none(light, 10, "4 → 3 is a step of 1 that is not to lo")
	})
	t.Run("the window's peak holds", func(t *testing.T) {
		r := newCtlRun(t, 1, 32, 16)
		r.none(steadyShort, 1, "steady: 14 of 16")
		// steadyShort's 14 is the highest for shrinkWindowIntervals
		// intervals: no shrink until it ages out of the window.
		r.none(light, shrinkWindowIntervals-1, "the steady window's demand is within the shrink window")
		r.want(light, withMargin(2), reasonLowUtilization)
	})
	t.Run("keys waiting", func(t *testing.T) {
		r := newCtlRun(t, 1, 32, 16)
		l := light
		l.wait = 2 * defaultWaitObjective
		r.none(l, 10, "keys wait over the objective")
	})
}

// TestDecideWait: keys that wait over the objective with the workers busy
// make the pool grow even when the demand's count says it has enough; with
// the workers idle under waitUtilization, they do not.
func TestDecideWait(t *testing.T) {
	// 3.6 busy at 4 with keys waiting 3s, a backlog of 85 that drains by 15
	// a second: 20 reconciles a second of 160ms, 5 arrivals a second; the
	// demand needs 5, not more than 4 + 1 (the grow band).
	l := load{done: 20, work: 160 * time.Millisecond, busy: 3.6, depth: 85, drained: 15, wait: 3 * time.Second}
	r := newCtlRun(t, 1, 32, 4)
	if _, f, _ := r.c.decide(l.window(4), decideT0); f.needed != 5 {
		t.Fatalf("needed %d, want 5: the test does not test the wait alone", f.needed)
	}
	r = newCtlRun(t, 1, 32, 4)
	r.want(l, 6, reasonWait) // with the band's margin

	l.busy = 2 // utilization 0.5
	r = newCtlRun(t, 1, 32, 4)
	r.none(l, 5, "keys wait, but the workers idle half the time")
}

// TestDecideIdleShrinks: an idle queue (no reconcile at all), or one with
// too few reconciles to make a sample, needs no more than Min: two windows
// in a row of it shrink the pool, as they would with a sample of low demand.
func TestDecideIdleShrinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    window
	}{
		{"idle", window{dur: decideInterval}},
		// The pool decides on a window of fewer than minSample reconciles
		// once it spans maxWindowIntervals intervals.
		{"a trickle", window{dur: maxWindowIntervals * decideInterval, started: 5, done: 5, work: 5 * time.Millisecond, busy: 5 * time.Millisecond, adds: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newController(1, 32, 16, defaultWaitObjective, decideInterval)
			now := decideT0
			var changes []string
			for range 60 {
				now = now.Add(tc.w.dur)
				w := tc.w
				w.limit = c.limit
				if d, f, ok := c.decide(&w, now); ok {
					changes = append(changes, fmt.Sprintf("%d (%s)", d.to, d.reason))
					if d.reason != reasonLowUtilization {
						t.Fatalf("decision %d (%s, %q), want only low-utilization; figures %+v", d.to, d.reason, d.detail, f)
					}
				}
			}
			// The regression this guards: decide reset its count of
			// low-demand windows unless the window was a sample (minSample
			// reconciles), so a queue with few or none kept its limit.
			if c.limit != 1 {
				t.Errorf("after 60 windows of %s from a limit of 16: limit %d (changes %v), want shrinks to Min (1)", tc.name, c.limit, changes)
			}
		})
	}
}

// TestDecideLowUtilizationReachesMin: a demand that needs one worker two
// windows in a row, again and again, brings the pool down to Min = 1.
func TestDecideLowUtilizationReachesMin(t *testing.T) {
	for _, start := range []int{16, 3} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			r := newCtlRun(t, 1, 32, start)
			var changes []string
			for range 60 {
				from := r.c.limit
				if d, f, ok := r.feed(tiny); ok {
					if d.reason != reasonLowUtilization || d.to >= from {
						t.Fatalf("decision %d → %d (%s), want only shrinks for low utilization; figures %+v", from, d.to, d.reason, f)
					}
					changes = append(changes, fmt.Sprintf("%d→%d", from, d.to))
				}
			}
			// The regression this guards: the shrink went to
			// withMargin(needed), 2 for a demand of 1, so it never reached
			// a Min of 1 (and from 3 did not move at all).
			if r.c.limit != 1 {
				t.Errorf("limit %d, want 1 (changes %v)", r.c.limit, changes)
			}
		})
	}
}

// decideReasons are the reasons a decision may give.
var decideReasons = []poolReason{reasonDemand, reasonWait, reasonLowUtilization, reasonClientRateLimit,
	reasonServerThrottling, reasonLatencyGradient, reasonProbe, reasonSlowerForAll}

// randomWalk feeds a controller between lo and hi n windows of random
// loads, at times one interval apart or less, and checks what holds for
// every decision: the limit within [lo, hi]; no change within two
// intervals of the last; a known reason whose direction matches it. It
// returns the count of decisions by reason.
func randomWalk(t *testing.T, seed uint64, lo, hi, n int) map[poolReason]int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	start := lo + rng.IntN(hi-lo+1)
	c := newController(lo, hi, start, defaultWaitObjective, decideInterval)
	now := decideT0
	var last time.Time
	var lastReason poolReason
	seen := make(map[poolReason]int)
	// A regime lasts a while, as loads do: a downstream that serves some
	// count at once, at some no-load work time, through some kind of limit.
	var usable, arrivals float64
	var work time.Duration
	var kind int
	for i := range n {
		if i%50 == 0 {
			usable = 1 + rng.Float64()*float64(hi)
			arrivals = rng.Float64() * 20 * float64(hi)
			work = time.Duration(1+rng.IntN(500)) * time.Millisecond
			kind = rng.IntN(4)
		}
		L := c.limit
		dur := decideInterval
		if rng.IntN(4) == 0 {
			dur = time.Duration(1 + rng.Int64N(int64(decideInterval)))
		}
		// Up to L busy; those over usable lose time to the limit.
		busy := min(float64(L), arrivals*work.Seconds()) * (0.5 + rng.Float64()/2)
		each := work
		if busy > usable {
			each = time.Duration(float64(work) * busy / usable)
		}
		done := int(busy * dur.Seconds() / each.Seconds())
		w := window{
			dur: dur, limit: L,
			started: uint64(done + rng.IntN(3)), done: uint64(done),
			work: time.Duration(done) * each, busy: time.Duration(busy * float64(dur)),
			depth: rng.IntN(1000), depthBefore: rng.IntN(1000),
			adds: uint64(done + 1), retries: uint64(rng.IntN(done/2 + 2)),
			waitP90: time.Duration(rng.Int64N(int64(3 * time.Second))),
		}
		lost := time.Duration(done) * (each - work)
		switch kind {
		case 1:
			w.limiterWait = lost
		case 2:
			w.retryAfterWait = lost
		}
		if rng.IntN(10) == 0 {
			w = window{dur: dur, limit: L} // idle
		}
		now = now.Add(dur)
		before := c.last
		d, f, ok := c.decide(&w, now)
		if c.limit < lo || c.limit > hi {
			t.Fatalf("window %d: limit %d outside [%d, %d]", i, c.limit, lo, hi)
		}
		if !ok {
			if c.limit != L {
				t.Fatalf("window %d: no decision, but the limit went %d → %d", i, L, c.limit)
			}
			// Without a change the state stays, or a verdict settles it.
			if c.last != before && c.last != settled {
				t.Fatalf("window %d: no decision, but the state went %v → %v", i, before, c.last)
			}
			continue
		}
		// The change is one of the state machine's transitions
		// (transitions, docs/tuning.md#the-rule-as-a-state-machine): from
		// a state it may be decided from, to its state, for a reason of
		// its kind.
		tr, ok := transitions[d.kind]
		switch {
		case !ok:
			t.Fatalf("window %d: a change for %s of no kind in transitions (%d)", i, d.reason, d.kind)
		case !slices.Contains(tr.from, before):
			t.Fatalf("window %d: a change of kind %d for %s from %v, which transitions allows only from %v", i, d.kind, d.reason, before, tr.from)
		case c.last != tr.to:
			t.Fatalf("window %d: after a change of kind %d for %s the state is %v, want %v", i, d.kind, d.reason, c.last, tr.to)
		case !slices.Contains(kindReasons[d.kind], d.reason):
			t.Fatalf("window %d: a change of kind %d for %s, want one of %v", i, d.kind, d.reason, kindReasons[d.kind])
		}
		seen[d.reason]++
		if d.to != c.limit {
			t.Fatalf("window %d: decision to %d, limit %d", i, d.to, c.limit)
		}
		// Two intervals at least between changes, but for a grow for a
		// plain demand (no ceiling), which may follow a grow or a change
		// that was no shrink for low utilization by one.
		if since := now.Sub(last); !last.IsZero() && since < 2*decideInterval &&
			(since < decideInterval || d.reason != reasonDemand || lastReason == reasonLowUtilization || c.ceiling != 0) {
			t.Fatalf("window %d: decision %d → %d (%s) %v after the last one (%s), want at least 2 intervals", i, L, d.to, d.reason, since, lastReason)
		}
		last, lastReason = now, d.reason
		if d.detail == "" {
			t.Errorf("window %d: decision %s with no detail", i, d.reason)
		}
		switch d.reason {
		case reasonDemand, reasonWait, reasonProbe:
			if d.to <= L {
				t.Fatalf("window %d: %s from %d to %d, want a grow; figures %+v", i, d.reason, L, d.to, f)
			}
			if d.reason != reasonProbe && !f.class.MoreWorkers() {
				t.Fatalf("window %d: %s under %v, which forbids more workers", i, d.reason, f.class)
			}
		case reasonLowUtilization:
			target := max(lo, withMargin(f.needed))
			if d.to >= L || (d.to > L-minStep && d.to != lo && 2*target > L) {
				t.Fatalf("window %d: %s from %d to %d, want a step of at least %d, one to lo (%d), or one towards a demand under half the limit (target %d)", i, d.reason, L, d.to, minStep, lo, target)
			}
		case reasonClientRateLimit, reasonServerThrottling, reasonLatencyGradient, reasonCPU:
			if d.to > L {
				t.Fatalf("window %d: %s from %d to %d, want no grow", i, d.reason, L, d.to)
			}
		case reasonSlowerForAll:
			if d.to != L {
				t.Fatalf("window %d: %s from %d to %d, want no change", i, d.reason, L, d.to)
			}
		default:
			t.Fatalf("window %d: decision with the reason %q, want one of %q", i, d.reason, decideReasons)
		}
	}
	return seen
}

// kindReasons are the reasons a change of each kind may give.
var kindReasons = map[stepKind][]poolReason{
	stepProbeFound:     {reasonClientRateLimit, reasonServerThrottling, reasonLatencyGradient, reasonCPU},
	stepSlowerForAll:   {reasonSlowerForAll},
	stepDownstream:     {reasonClientRateLimit, reasonServerThrottling, reasonCPU},
	stepGradientShrink: {reasonLatencyGradient},
	stepProbe:          {reasonProbe},
	stepGrow:           {reasonDemand, reasonWait},
	stepShrink:         {reasonLowUtilization},
}

// TestDecideRandomWalk checks the invariants of randomWalk over long walks,
// and that the walks exercise most of the rule.
func TestDecideRandomWalk(t *testing.T) {
	total := make(map[poolReason]int)
	for seed := range uint64(20) {
		for reason, n := range randomWalk(t, seed, 1+int(seed%3), 8+int(seed*3), 3000) {
			total[reason] += n
		}
	}
	t.Logf("decisions by reason: %v", total)
	for _, r := range []poolReason{reasonDemand, reasonWait, reasonLowUtilization, reasonProbe} {
		if total[r] == 0 {
			t.Errorf("no decision for %s in the walks: they do not test it (decisions %v)", r, total)
		}
	}
	downstream := total[reasonClientRateLimit] + total[reasonServerThrottling] + total[reasonLatencyGradient]
	if downstream == 0 {
		t.Errorf("no shrink for a downstream limit in the walks (decisions %v)", total)
	}
	if !slices.ContainsFunc(decideReasons, func(r poolReason) bool { return total[r] > 0 }) {
		t.Errorf("no decision at all")
	}
}

// FuzzDecide runs randomWalk on the fuzzer's seed and bounds.
func FuzzDecide(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint8(16))
	f.Add(uint64(2), uint8(4), uint8(4))
	f.Add(uint64(3), uint8(2), uint8(64))
	f.Fuzz(func(t *testing.T, seed uint64, lo, span uint8) {
		l := 1 + int(lo%32)
		randomWalk(t, seed, l, l+int(span%64), 500)
	})
}

// TestDecideWorkChangeIsNoGradient: the work itself gets slower at the same
// concurrency (an initial list of reconciles with nothing to do, 2.6ms
// each, then real ones of 57ms, 1.2 busy workers both times): the no-load
// time is not the real work's, and the pool must not shrink for a latency
// gradient; with more busy workers than the fast work had, the same
// slowdown is one.
func TestDecideWorkChangeIsNoGradient(t *testing.T) {
	r := newCtlRun(t, 1, 32, 4)
	fast := load{done: 460, work: 2600 * time.Microsecond, busy: 1.2}
	slow := load{done: 21, work: 57 * time.Millisecond, busy: 1.2}
	r.none(fast, 3, "a steady light load")
	for range 8 {
		if d, f, ok := r.feed(slow); ok && (d.reason == reasonLatencyGradient || d.to < r.c.lo) {
			t.Fatalf("window %d: %s to %d with the work slower at the same concurrency (figures %+v)", r.n, d.reason, d.to, f)
		} else if f.gradient || f.usable < 1 {
			t.Fatalf("window %d: gradient %v, usable %.2f; want no gradient, usable the busy workers", r.n, f.gradient, f.usable)
		}
	}

	// The real work at the concurrency the fast work had, three windows:
	// its work time becomes the no-load one, and more busy workers with
	// the same work time are no gradient either.
	r = newCtlRun(t, 1, 32, 8)
	r.none(fast, 2, "a steady light load")
	for range 3 {
		r.feed(slow)
	}
	if r.c.noLoad < 50*time.Millisecond {
		t.Fatalf("after three windows of 57ms work at 1.2 busy, the no-load time is %v, want the new work's", r.c.noLoad)
	}
	busier := load{done: 105, work: 57 * time.Millisecond, busy: 6}
	for range 4 {
		if d, f, ok := r.feed(busier); ok && d.reason == reasonLatencyGradient || f.gradient {
			t.Fatalf("window %d: %+v (gradient %v) with 6 busy at the work time of 1.2 busy; want no gradient", r.n, d, f.gradient)
		}
	}

	r = newCtlRun(t, 1, 32, 16)
	for range 3 {
		r.feed(fast) // may shrink the limit for low utilization
	}
	// Every worker busy now, each reconcile 57ms.
	L := r.c.limit
	crowded := load{done: L * 1000 / 57, work: 57 * time.Millisecond, busy: float64(L), depth: 100}
	var (
		d  decision
		f  figures
		ok bool
	)
	for range 3 { // two limited windows, two intervals after the last change
		if d, f, ok = r.feed(crowded); ok {
			break
		}
	}
	if !ok || d.reason != reasonLatencyGradient || !f.gradient || d.to >= L {
		t.Fatalf("with %d busy against 1.2 when fast: decision %+v, %v (figures %+v); want a shrink for a latency gradient", L, d, ok, f)
	}
}

// cpuBusy is a window of the CPU-bound pool: done reconciles of work each
// in a second, running at a time, cores used of the cores there are.
func cpuBusy(limit, done int, work time.Duration, used, cores float64, depth int) *window {
	w := load{done: done, work: work, depth: depth}.window(limit)
	w.typicalWork, w.typicalDone = work, uint64(done)
	w.cpu = bottleneck.CPUUse{Known: true, Used: used, Cores: cores}
	return w
}

// TestDecideCPU: while the process uses the CPU it has (the table's cpu
// class), the pool does not grow, however much the demand asks; when more
// run at once than the CPU serves at the no-load work time, it comes down
// to the CPU's count for the reason cpu; and once the CPU has room again
// and the work is back at its no-load time, it probes.
func TestDecideCPU(t *testing.T) {
	t.Run("no grow", func(t *testing.T) {
		r := newCtlRun(t, 1, 64, 16)
		r.settle() // 100ms of work, no CPU read
		for i := range 10 {
			r.n++
			// 16 running on 16 cores at 100ms: 160/s, with 3000 keys
			// waiting.
			if d, f, ok := r.c.decide(cpuBusy(r.c.limit, 160, 100*time.Millisecond, 15.9, 16, 3000), r.now()); ok {
				t.Fatalf("window %d: decision %d (%s, %q) with the CPU full; figures %+v", i, d.to, d.reason, d.detail, f)
			}
		}
	})
	t.Run("down to the CPU's count", func(t *testing.T) {
		r := newCtlRun(t, 1, 64, 16)
		r.settle()
		// 16 running on 8 cores: each takes 200ms, 80/s; the CPU serves 8
		// at the no-load 100ms.
		w := func() *window { return cpuBusy(r.c.limit, 80, 200*time.Millisecond, 8, 8, 500) }
		r.n++
		if d, _, ok := r.c.decide(w(), r.now()); ok {
			t.Fatalf("first window over the CPU's count: decision %+v, want none yet", d)
		}
		r.n++
		d, f, ok := r.c.decide(w(), r.now())
		if !ok || d.reason != reasonCPU || d.to != 9 || r.c.ceiling != 9 {
			t.Fatalf("decision %v %+v, ceiling %d; want 16 → 9 (⌊1.1 × 8⌉) for cpu; figures %+v", ok, d, r.c.ceiling, f)
		}
		if !strings.Contains(d.detail, "the CPU serves 8.0 at once") {
			t.Errorf("detail %q does not say what the CPU serves", d.detail)
		}
		// At 9 on 8 cores, still full: no grow, no probe before the hold.
		for range 10 {
			r.n++
			if d, _, ok := r.c.decide(cpuBusy(r.c.limit, 80, 112*time.Millisecond, 8, 8, 500), r.now()); ok {
				t.Fatalf("at the CPU's ceiling: decision %+v, want none", d)
			}
		}
		// The CPU limit lifted: 9 running on 32 cores at the no-load time.
		// The CPU's signs need no sighting at the ceiling: two windows
		// without them make it probe.
		r.n++
		if d, _, ok := r.c.decide(cpuBusy(r.c.limit, 90, 100*time.Millisecond, 9, 32, 500), r.now()); ok {
			t.Fatalf("one window with room: decision %+v, want none yet", d)
		}
		r.n++
		d, _, ok = r.c.decide(cpuBusy(r.c.limit, 90, 100*time.Millisecond, 9, 32, 500), r.now())
		if !ok || d.reason != reasonProbe || d.to <= 9 {
			t.Errorf("two windows with room: decision %v %+v, want a probe", ok, d)
		}
	})
}

// TestDecideCPULiftedAtOnce: a CPU limit lifted in the window after the
// shrink to the CPU's ceiling (no window at the ceiling while the CPU
// limited): the pool probes once the CPU's signs are gone two windows, not
// when the ceiling's hold is over.
func TestDecideCPULiftedAtOnce(t *testing.T) {
	r := newCtlRun(t, 1, 64, 16)
	r.settle()
	for range 2 {
		r.n++
		r.c.decide(cpuBusy(r.c.limit, 80, 200*time.Millisecond, 8, 8, 500), r.now())
	}
	if r.c.limit != 9 {
		t.Fatalf("limit %d, want 9 (the CPU's ceiling)", r.c.limit)
	}
	var probed bool
	for range 4 {
		r.n++
		if d, _, ok := r.c.decide(cpuBusy(r.c.limit, 90, 100*time.Millisecond, 9, 32, 500), r.now()); ok {
			probed = d.reason == reasonProbe
			break
		}
	}
	if !probed {
		t.Errorf("the CPU limit lifted at once: no probe within 4 windows (hold until %v)", r.c.ceilingUntil)
	}
}

// TestDecideLongRuns: long reconciles in the tail and hung ones are no
// downstream limit (the excess is read from the typical attempt's work
// time), and the workers they hold count in the demand.
func TestDecideLongRuns(t *testing.T) {
	t.Run("a tail of 60s", func(t *testing.T) {
		r := newCtlRun(t, 1, 64, 8)
		for i := range 20 {
			// 40/s of 50ms, and in every other window a 60s reconcile
			// ends: the mean work time jumps to 1.5s, the typical one
			// stays.
			w := load{done: 40, work: 50 * time.Millisecond}.window(r.c.limit)
			w.typicalWork, w.typicalDone = 50*time.Millisecond, 40
			if i%2 == 1 {
				w.done, w.work = 41, w.work+60*time.Second
			}
			// The busy time, as the pool reads it: the work done in the
			// window and the time of the 5 long runs in flight.
			w.inFlight, w.longest = 7, 40*time.Second
			w.busy = 2*decideInterval + 5*decideInterval
			r.n++
			if d, f, ok := r.c.decide(w, r.now()); ok && d.reason != reasonDemand && d.reason != reasonLowUtilization {
				t.Fatalf("window %d: decision %+v; figures %+v: a tail is no downstream limit", i, d, f)
			}
		}
	})
	t.Run("three hung", func(t *testing.T) {
		r := newCtlRun(t, 1, 64, 5)
		// 40/s of 50ms beside 3 runs in flight for 10 minutes: 2 busy on
		// the others, 5 in flight.
		w := load{done: 40, work: 50 * time.Millisecond}.window(5)
		w.typicalWork, w.typicalDone = 50*time.Millisecond, 40
		w.inFlight, w.longest = 5, 10*time.Minute
		w.busy = 5 * decideInterval // the pool's busy time: the hung runs' too
		f := r.c.figures(w)
		if f.held != 3 {
			t.Errorf("held %d, want 3 (5 in flight, 2 = 40/s × 50ms typical)", f.held)
		}
		if f.needed < 3+2 {
			t.Errorf("needed %d, want the demand of the others (2 busy, 7 with the staffing margin) and the 3 held", f.needed)
		}
		for i := range 20 {
			r.n++
			w := load{done: 40, work: 50 * time.Millisecond}.window(r.c.limit)
			w.typicalWork, w.typicalDone = 50*time.Millisecond, 40
			w.inFlight, w.longest = 5, 10*time.Minute
			w.busy = time.Duration(r.c.limit) * decideInterval
			if d, f, ok := r.c.decide(w, r.now()); ok && d.to < 5+f.needed-f.held && d.to < r.c.limit {
				t.Fatalf("window %d: decision %+v; figures %+v: hung runs must not bring the pool under them and the others' demand", i, d, f)
			}
		}
		if r.c.limit < 8 {
			t.Errorf("limit %d, want at least 3 hung + the others' 5", r.c.limit)
		}
	})
}

// TestDecideCeilingRounding: the ceiling is the nearest count to 1.1 × what
// the downstream serves: a client limit that serves 2 workers' worth holds
// the pool at 2, not 3.
func TestDecideCeilingRounding(t *testing.T) {
	c := newController(1, 64, 8, defaultWaitObjective, decideInterval)
	for _, tc := range []struct {
		usable float64
		want   int
	}{{2, 2}, {2.3, 3}, {10, 11}, {0.3, 1}, {100, 64}} {
		if got := c.ceilingFor(tc.usable); got != tc.want {
			t.Errorf("ceilingFor(%v) = %d, want %d", tc.usable, got, tc.want)
		}
	}
}

// TestDecideWorkChangeByCPU: a no-load work time measured on reconciles
// with nothing to do (an initial list: 20µs, next to no CPU) is no measure
// of real ones: when each reconcile costs more than twice the CPU, the work
// changed, and the new work time is the no-load one, not a latency
// gradient; measured while the CPU limits, it does not stand for the
// reconcile alone when the CPU's count is worked out.
func TestDecideWorkChangeByCPU(t *testing.T) {
	r := newCtlRun(t, 1, 32, 4)
	noop := func() *window {
		// 400 no-op reconciles a second of 20µs, 20µs of CPU each.
		w := cpuBusy(r.c.limit, 400, 20*time.Microsecond, 0.008, 2, 0)
		return w
	}
	for range 3 {
		r.n++
		r.c.decide(noop(), r.now())
	}
	if r.c.noLoad > 100*time.Microsecond || r.c.noLoadCPU > 100*time.Microsecond {
		t.Fatalf("after no-op windows: no-load %v, its CPU %v; want about 20µs", r.c.noLoad, r.c.noLoadCPU)
	}
	// Real reconciles: 2 running at 90ms each, 60ms of CPU each, with keys
	// waiting; the CPU has room (1.3 of 2 cores).
	for i := range 6 {
		r.n++
		w := cpuBusy(r.c.limit, 22, 90*time.Millisecond, 1.32, 2, 50)
		if d, f, ok := r.c.decide(w, r.now()); ok && d.reason == reasonLatencyGradient {
			t.Fatalf("window %d: %+v (gradient %v, no-load %v): the work changed, no latency gradient", i, d, f.gradient, f.noLoad)
		}
	}
	if r.c.noLoad < 80*time.Millisecond || r.c.noLoadCPUBound {
		t.Errorf("no-load %v (CPU-bound %v) after real reconciles, want about 90ms, measured with the CPU free", r.c.noLoad, r.c.noLoadCPUBound)
	}

	// Measured while the CPU limits, the no-load time is not the
	// reconcile's: the CPU's count is the cores' (w0 = the CPU per
	// reconcile).
	r = newCtlRun(t, 1, 32, 4)
	for range 3 {
		r.n++
		r.c.decide(noop(), r.now())
	}
	r.n++
	// 8 running on 2 cores, about 60ms of CPU each: 32/s of 250ms.
	_, f, _ := r.c.decide(cpuBusy(r.c.limit, 32, 250*time.Millisecond, 1.96, 2, 50), r.now())
	if !r.c.noLoadCPUBound || f.cpuUsable > 2.01 {
		t.Errorf("CPU-bound real work: no-load measured CPU-bound %v, the CPU serves %.2f; want true and the 2 cores' 2", r.c.noLoadCPUBound, f.cpuUsable)
	}
}

// TestDecideNoGrowthAgainstTheControlPlane: keys waiting with every worker
// busy grow the pool, but not while the API server fails the process's
// requests (more workers only retry faster) or answers slowly, requests
// stalled in flight included (more workers only queue there, unless it has
// room, which the static figures cannot tell): seen on a real API server,
// whose etcd stalled for 15 s with every worker's request in flight.
func TestDecideNoGrowthAgainstTheControlPlane(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  bottleneck.APIServerUse
	}{
		{"unavailable", bottleneck.APIServerUse{Known: true, Unavailable: 1}},
		{"slow", bottleneck.APIServerUse{Known: true, LatencyKnown: true, Latency: decideInterval}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newCtlRun(t, 1, 64, 4)
			l := demand
			l.apiserver = tc.use
			r.none(l, 10, "the control plane limits the queue")
			l.apiserver = bottleneck.APIServerUse{Known: true, LatencyKnown: true, Latency: 5 * time.Millisecond}
			r.want(l, withMargin(12), reasonDemand)
		})
	}
}

// TestDecideNoShrinkAtStart: a pool that has just started does not know the
// shrink window's highest demand (its first windows an initial list, or a
// workload not yet begun: seen on a real API server with 1 seat, where the
// pool went from 4 to 1 on its first window and then met 200 updates a
// second with one worker), so it shrinks for low utilization only once the
// windows it decided on cover the shrink window; a grow needs no history.
func TestDecideNoShrinkAtStart(t *testing.T) {
	r := newStartedCtlRun(t, 1, 32, 16)
	r.none(light, shrinkWindowIntervals-1, "the windows decided on do not cover the shrink window yet")
	r.want(light, withMargin(2), reasonLowUtilization)

	r = newStartedCtlRun(t, 1, 64, 4)
	r.want(demand, withMargin(12), reasonDemand)
}

// TestDecideNoShrinkWhileBusy: the demand's estimate under the count while
// the workers are busy (an initial list of no-op reconciles, the typical
// ones, beside real ones) shrinks nothing: the busy workers say the
// estimate is short.
func TestDecideNoShrinkWhileBusy(t *testing.T) {
	r := newCtlRun(t, 1, 32, 4)
	// 60 no-op reconciles of 20µs, the typical ones, and 3.7 workers busy
	// with real ones that have not ended.
	l := load{done: 60, work: 20 * time.Microsecond, busy: 3.7}
	r.none(l, 5, "3.7 of 4 workers busy")
	l.busy = 0.5
	if d, _, ok := r.feed(l); !ok || d.reason != reasonLowUtilization {
		t.Errorf("the same windows with the workers idle: decision %v %+v, want a shrink for low utilization", ok, d)
	}
}

// TestSurgeWaitsForTheWorkMeasured: the surge check between decisions does
// not grow before a decision has measured the work: nothing says yet that
// the work is no slower or the downstream has room (on a throttled API
// server the first Retry-After waits end in a later window; the pool grew
// 4 → 8 → 11 in its first seconds there), nor while a class that forbids
// more workers holds since the last decision. Once measured, a backlog
// grows it.
func TestSurgeWaitsForTheWorkMeasured(t *testing.T) {
	r := newCtlRun(t, 1, 64, 4)
	big := demand
	big.depth = 1500
	if d, _, ok := r.c.surge(big.window(r.c.limit), nil, r.now().Add(decideInterval/5)); ok {
		t.Fatalf("a surge check before any decision measured the work: %d (%s), want none", d.to, d.reason)
	}
	r.want(demand, withMargin(12), reasonDemand) // the first decision measures the work
	// The API server throttled since the last decision: the attempts that
	// waited on its Retry-After ended in an earlier check's window, and
	// this one's (those since) waited on nothing. Seen on a real server:
	// the pool grew 4 → 8 a second after the summary said throttled.
	throttled := demand
	throttled.retryAfter = demand.work
	if d, _, ok := r.c.surge(big.window(r.c.limit), throttled.window(r.c.limit), r.now().Add(decideInterval/5)); ok {
		t.Errorf("a surge check with the server throttling since the last decision: %d (%s), want none", d.to, d.reason)
	}
	d, _, ok := r.c.surge(big.window(r.c.limit), demand.window(r.c.limit), r.now().Add(decideInterval/5))
	if !ok || d.to <= withMargin(12) || d.reason != reasonDemand {
		t.Errorf("a surge check after the work was measured: %v %+v, want a grow for the backlog", ok, d)
	}
}
