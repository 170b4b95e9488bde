package otelqueue

import (
	"fmt"
	"math"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// The constants of an adaptive pool's rule (docs/tuning.md, "Adaptive
// workers", says why each has its value).
const (
	// staffingBeta is β of the square-root staffing rule: for an offered
	// load of a busy workers, a + β·√a workers keep the share of keys that
	// wait at all under about 1 in 500 (Halfin and Whitt), so that the
	// pool, where nothing downstream limits it, matches a generous fixed
	// count's queue wait.
	staffingBeta = 3.0
	// drainHorizon is the time the demand estimate gives the workers to
	// clear the keys already waiting, beside the arrivals.
	drainHorizon = 30 * time.Second
	// minSample is the number of finished reconciles an interval needs
	// before the downstream estimate is trusted; an interval with fewer is
	// extended, up to maxWindowIntervals intervals.
	minSample          = 20
	maxWindowIntervals = 6
	// excessShare: more reconciles run at once than the downstream can
	// serve when the excess (busy workers minus the throughput times the
	// no-load work time) is at least this share of the latter (and minExcess).
	excessShare = 0.25
	// minExcess is the least excess (in reconciles) that is a limit: at
	// small counts excessShare of the usable count is under one
	// reconcile, and one more than a downstream of two serves (an excess
	// of 1, the work 1.5 times slower) must count; the estimate's noise
	// over minSample reconciles is well under a quarter of one.
	minExcess = 0.75
	// ceilingHeadroom is the ceiling over the downstream's usable count.
	ceilingHeadroom = 1.1
	// shrinkWindowIntervals: a shrink for low utilization goes to the
	// highest demand of the last shrinkWindowIntervals intervals (a minute
	// at the default interval), as Kubernetes' HorizontalPodAutoscaler
	// stabilizes its scale-downs over a window: a load that comes in waves
	// (keys that requeue every minute, an informer's resync) keeps the
	// workers its waves need, and the estimate's noise moves nothing.
	shrinkWindowIntervals = 12
	// shrinkShare: that demand, with the grow band's margin, must be at most
	// this share of the limit to shrink, but to Min (the band between it
	// and 1 is the hysteresis against a load that drifts).
	shrinkShare = 0.6
	// surgeChecks is how many times an interval the pool checks for a
	// surge of plain demand (controller.surge) between two decisions: a
	// surge's keys wait a fifth of an interval for the workers they need.
	surgeChecks = 5
	// probeStep is the step of a probe above the ceiling.
	probeStep = 1.5
	// pressureHold (intervals): a ceiling whose signs cannot say its limit
	// lifted is probed, while keys wait over the objective, pressureHold
	// intervals after the last change. Half as many again running
	// (probeStep) for the two intervals of a probe in eight keeps the mean
	// within an eighth of the ceiling, and a limit that lifted is found
	// within eight intervals (40 s at the default interval).
	pressureHold = 6
	// waitUtilization is the utilization from which a wait above the
	// objective makes the pool grow.
	waitUtilization = 0.8
	// The hold of a ceiling starts at initialHold and doubles, up to
	// maxHold, each time a probe finds the limit still there.
	initialHold = 2 * time.Minute
	maxHold     = 16 * time.Minute
	// baseSmoothing is the weight of a window in the smoothed base work
	// time whose lowest value is the no-load work time (an exponentially
	// weighted mean: the lowest of raw windows would be biased low by
	// their noise).
	baseSmoothing = 0.3
	// goneShare: at the ceiling, the signs of a measured limit are gone
	// when the limiter and Retry-After waits are each under goneShare of
	// the work time (and the CPU's when its class is gone), goneWindows
	// windows in a row. A latency limit's are never seen there (the work
	// time over the no-load one, which is the lowest seen and biased low
	// by its noise, says nothing at the ceiling): it is probed.
	goneShare   = 0.03
	goneWindows = 2
	// growBand: the demand's count must exceed the limit by this share
	// (and at least 1) to grow; with the shrink window, the band keeps the
	// staffing estimate's noise from moving the limit.
	growBand = 0.1
	// minStep is the smallest shrink for low utilization (but to Min) and
	// the smallest step that goes on with an ascent.
	minStep = 2
	// workChangeCPU: besides growing workChangeFactor times, the CPU per
	// reconcile must grow by this much for the work to count as changed
	// (the CPU time of a reconcile that does next to nothing is noise).
	workChangeCPU    = time.Millisecond
	workChangeFactor = 2
	// minBaseDivisor: the base work time (the typical one less the waits
	// for the limiter and Retry-After) is at least the typical one divided
	// by this: waits measured a little longer than the work they were part
	// of must not make it zero.
	minBaseDivisor = 100
	// heldFactor: a run in flight for longer than the window and this many
	// typical work times holds its worker apart from the typical work: the
	// runs over the concurrency the throughput explains count as demand.
	heldFactor = 4
	// gradientStep: the no-load time is compared (a latency gradient, a
	// changed work) only with at least this many more reconciles running
	// at once than when it was measured.
	gradientStep = 1
	// staleWindows: windows in a row whose work is slower than the no-load
	// time at the concurrency it was measured at make their work time the
	// no-load one.
	staleWindows = 3
	// changeIntervals: a change waits this many intervals after the last
	// (one for a grow for plain demand), so that the window it is decided
	// on is wholly after the last change.
	changeIntervals = 2
	// ascentIntervals: after a grow for the demand, the ascent goes on
	// while the demand with its margin is a step above the count, for this
	// many intervals after it.
	ascentIntervals = 4
	// limitedWindows: a shrink to the downstream's count waits for this
	// many limited windows in a row (one may be a burst's tail).
	limitedWindows = 2
	// holdGrowth: each probe that finds the limit again multiplies the
	// ceiling's hold by it, up to maxHold.
	holdGrowth = 2
	// fasterShare: after a shrink for a latency gradient, work at least
	// this share of the base work time before it is no faster (a
	// downstream slower for everyone).
	fasterShare = 0.95
)

// window is what happened in one decision interval: the difference of two
// snapshots.
type window struct {
	dur   time.Duration
	limit int

	started, done uint64
	work          time.Duration // summed work time of the attempts done
	busy          time.Duration // worker time spent processing in the window
	waitP90       time.Duration // of the attempts started
	oldest        time.Duration // oldest key waiting at the end
	longest       time.Duration // longest run in flight at the end
	depth         int           // ready keys at the end
	depthBefore   int           // and at the start
	adds, retries uint64
	delayedAdds   uint64 // of the retries, those with a delay the caller chose (RequeueAfter)
	// typicalWork is the mean work time of the attempts done whose work
	// time is at most about four times the median (typicalDone of them):
	// the typical attempt's, which a long tail or a hung reconcile does
	// not move.
	typicalWork time.Duration
	typicalDone uint64
	inFlight    int // attempts in flight at the end
	// dueSoon is the delayed keys that become ready within dueWindow
	// after the end (scheduler.Scheduler.DueWithin): arrivals already
	// scheduled, such as a polling controller's requeues.
	dueSoon   int
	dueWindow time.Duration
	cpu       bottleneck.CPUUse
	// apiserver is how the API server answered the process's instrumented
	// clients, once the queue's attempts have used one.
	apiserver bottleneck.APIServerUse

	// From instrumented clients (ClientStats).
	limiterWait, retryAfterWait time.Duration
}

// figures are the derived numbers of a window, as a decision's log line
// gives them.
type figures struct {
	throughput float64       // reconciles finished per second
	arrivals   float64       // keys that became ready per second, or those due in the next two intervals if more
	work       time.Duration // mean work time of a reconcile
	typical    time.Duration // the typical reconcile's (tail trimmed)
	base       time.Duration // of it, the part not spent waiting on a downstream limit
	noLoad     time.Duration // the lowest base seen: the no-load work time
	// busy is the workers busy on average, runs in flight included (for
	// the utilization); concurrency the typical reconciles' (throughput ×
	// typical work time: finished work only, so that long and hung runs
	// are no downstream limit).
	busy, concurrency float64
	utilization       float64 // busy over the limit
	usable            float64 // the reconciles the downstream serves at once at no-load speed
	// held is the runs in flight beyond the typical concurrency while one
	// has run longer than the window and four typical work times: long or
	// hung reconciles, which hold workers the arrivals do not show.
	held         int
	needed       int           // the demand's count (staffing, plus held)
	wait         time.Duration // the queue wait: 90th percentile or oldest waiting
	limiter      float64       // limiter wait's share of the work time
	retryAfter   float64       // Retry-After wait's share
	errorRetries float64       // backoff retries over adds (RequeueAfter not counted)
	cpu          bottleneck.CPUUse
	// cpuPer is the process's CPU time per reconcile of the queue, and
	// cpuUsable the reconciles the CPU serves at once at no-load speed:
	// the cores × the no-load work time over the CPU per reconcile.
	cpuPer    time.Duration
	cpuUsable float64
	backlog   bool               // keys were ready and waiting at the end
	class     bottleneck.Verdict // the table's class of the window
	sample    bool               // enough reconciles finished to trust usable
	gradient  bool               // the base is above the no-load time with more running than it was measured at
}

// decision is a change of the limit.
type decision struct {
	to     int
	reason poolReason
	detail string
	kind   stepKind // which step decided it (transitions)
}

// controller is an adaptive pool's rule and its state between decisions.
// It reads no clock and takes no lock: the pool feeds it windows.
type controller struct {
	lo, hi    int
	objective time.Duration
	interval  time.Duration

	limit      int
	smoothBase time.Duration // exponentially weighted base work time; 0 before a sample
	smoothBusy float64       // and typical concurrency
	noLoad     time.Duration // lowest smoothBase seen; 0 before a sample
	noLoadBusy float64       // smoothBusy when noLoad was measured
	// noLoadCPU is the process's CPU per reconcile when noLoad was
	// measured (0: unknown), noLoadCPUBound whether the CPU limited then
	// (a no-load time measured so is no reconcile's alone).
	noLoadCPU      time.Duration
	noLoadCPUBound bool
	staleRun       int  // consecutive windows slower than noLoad at its concurrency
	ceiling        int  // 0: none
	ceilingSeen    bool // the signs of the limit were seen at the ceiling
	goneRun        int  // consecutive windows at the ceiling without the signs of its limit
	// goneProbe: the last probe was for the signs gone; goneFailed: such a
	// probe found the limit still there (signs that come and go at the
	// ceiling): the next probe waits for the hold.
	goneProbe, goneFailed bool
	ceilingUntil          time.Time
	hold                  time.Duration
	ceilingBy             poolReason // the class of the limit the ceiling is for
	// last is the state the last change left the rule in.
	last       move
	probeFound probeFinding  // while probing: the first window that found the limit
	baseBefore time.Duration // while verifying: the base work time before the shrink

	lastChange time.Time
	limitedRun int // consecutive windows over the downstream's count
	// recentNeeded is the demand's count of the windows of the shrink
	// window, oldest first.
	recentNeeded []neededAt
	// firstWindow is the end of the first window the controller decided
	// on: until the windows since cover the shrink window, its highest
	// demand is not known, and the pool does not shrink for it.
	firstWindow time.Time
}

// move is the state the pool's last change left its rule in: what the next
// decisions make of it. The other half of the rule's state is the ceiling
// (none, or a count held until a time). docs/tuning.md#the-rule-as-a-state-machine
// draws both.
type move uint8

const (
	// settled: no change yet, or a change that needs no follow-up (the
	// verdict on a probe or on a gradient shrink, a shrink to a ceiling).
	settled move = iota
	// growing: the last change was a grow for the demand. The ascent goes
	// on for two windows after it, as soon as the demand with its margin
	// is a step above the count.
	growing
	// shrinking: the last change was a shrink for low utilization. A grow
	// after it waits out two intervals, even for plain demand.
	shrinking
	// probing: the last change was a probe above the ceiling. It is judged
	// on the first window allowed to change, on every window since it
	// (probeFound): the limit found again sets the ceiling there and
	// doubles its hold; no limit lifts the ceiling.
	probing
	// verifying: the last change was a shrink for a latency gradient. It
	// is judged on the first window allowed to change: work no faster
	// means the downstream got slower for everyone (slower-for-all).
	verifying
)

func (m move) String() string {
	switch m {
	case settled:
		return "settled"
	case growing:
		return "growing"
	case shrinking:
		return "shrinking"
	case probing:
		return "probing"
	case verifying:
		return "verifying"
	}
	return fmt.Sprintf("move(%d)", uint8(m))
}

// probeFinding is the first window since a probe that found more running
// than the downstream serves: what it served, and why.
type probeFinding struct {
	limited bool
	usable  float64
	reason  poolReason
	class   bottleneck.Verdict
}

// neededAt is the demand's count of the window that ended at at.
type neededAt struct {
	at     time.Time
	needed int
}

// peakNeeded records the demand's count of the window that ends at now and
// returns the highest of the shrink window's, and whether the windows
// decided on cover the shrink window: a pool that started less than a
// shrink window ago (its first windows an initial list, a workload that
// has not yet begun) knows the demand of part of it only.
func (c *controller) peakNeeded(now time.Time, needed int) (peak int, full bool) {
	if c.firstWindow.IsZero() {
		c.firstWindow = now
	}
	from := now.Add(-shrinkWindowIntervals * c.interval)
	keep := c.recentNeeded[:0]
	for _, n := range c.recentNeeded {
		if n.at.After(from) && !n.at.After(now) {
			keep = append(keep, n)
		}
	}
	c.recentNeeded = append(keep, neededAt{at: now, needed: needed})
	for _, n := range c.recentNeeded {
		peak = max(peak, n.needed)
	}
	// The first window covers an interval before its end; half an
	// interval's slack for the timer's jitter.
	full = now.Sub(c.firstWindow) >= (shrinkWindowIntervals-1)*c.interval-c.interval/2
	return peak, full
}

func newController(lo, hi, start int, objective, interval time.Duration) *controller {
	return &controller{lo: lo, hi: hi, limit: start, objective: objective, interval: interval, hold: initialHold}
}

// figures derives the figures of w from the controller's no-load work time
// as it is: a reading that changes nothing (decide learns from the window
// between measuring and estimating).
func (c *controller) figures(w *window) figures {
	f := measure(w)
	c.estimate(&f, w)
	return f
}

// measure derives the figures of w that depend on nothing else.
func measure(w *window) figures {
	var f figures
	secs := w.dur.Seconds()
	if secs <= 0 {
		return f
	}
	f.busy = w.busy.Seconds() / secs
	f.utilization = f.busy / float64(max(w.limit, 1))
	f.wait = max(w.waitP90, w.oldest)
	// The table's figures of the window, as package bottleneck reads any
	// window: the share of the adds that were backoff retries, and of the
	// client attempts' work time spent on the client's limiter and the
	// server's Retry-After.
	bw := bottleneck.Window{Duration: w.dur, Adds: w.adds, Retries: w.retries, DelayedAdds: w.delayedAdds,
		Client: bottleneck.Client{Used: w.done > 0, Work: w.work, RateLimiterWait: w.limiterWait, RetryAfterWait: w.retryAfterWait}}
	var addsKnown bool
	f.errorRetries, addsKnown = bw.ErrorRetries()
	f.arrivals = max(0, (float64(w.started)+float64(w.depth-w.depthBefore))/secs)
	if w.dueSoon > 0 && w.dueWindow > 0 {
		// The keys already scheduled to come in the next window: a wave of
		// requeues is met when it comes, not a window after.
		f.arrivals = max(f.arrivals, float64(w.dueSoon)/w.dueWindow.Seconds())
	}
	f.cpu = w.cpu
	f.backlog = w.depth > 0
	if w.done > 0 {
		n := float64(w.done)
		f.throughput = n / secs
		f.work = time.Duration(float64(w.work) / n)
		f.typical = w.typicalWork
		if w.typicalDone == 0 {
			f.typical = f.work
		}
		waits := time.Duration(float64(w.limiterWait+w.retryAfterWait) / n)
		f.base = max(f.typical-waits, f.typical/minBaseDivisor)
		f.limiter, f.retryAfter = bw.Client.Share(w.limiterWait), bw.Client.Share(w.retryAfterWait)
		f.concurrency = f.throughput * f.typical.Seconds()
		f.sample = w.done >= minSample
		if f.cpu.Known {
			f.cpuPer = time.Duration(f.cpu.Used * float64(w.dur) / n)
		}
	}
	f.class = bottleneck.Classify(bottleneck.Figures{
		CPU: f.cpu, APIServer: w.apiserver,
		Client: bw.Client.Used && bw.Client.Work > 0, RetryAfterShare: f.retryAfter, RateLimiterShare: f.limiter,
		ErrorRetries: f.errorRetries, AddsKnown: addsKnown,
		// No worker count: the pool's own staffing rule is its workers
		// class; it reads the table's classes that forbid more workers.
		Utilization: f.utilization,
	})
	return f
}

// estimate derives the figures that depend on the no-load work time: the
// gradient, what the downstream and the CPU serve, and the demand.
func (c *controller) estimate(f *figures, w *window) {
	if w.dur <= 0 {
		return
	}
	f.noLoad = c.noLoad
	// A latency gradient is work that takes longer with more of it at
	// once: the no-load time counts only with at least one more reconcile
	// running than when it was measured. Otherwise the work itself changed
	// (an initial list of reconciles with nothing to do, then real ones),
	// not the concurrency.
	f.gradient = c.noLoad > 0 && f.concurrency >= c.noLoadBusy+gradientStep && c.noLoad < f.base
	if f.sample {
		ref := f.base
		if f.gradient {
			ref = c.noLoad
		}
		f.usable = f.throughput * ref.Seconds()
	}
	if f.cpuPer > 0 && f.cpu.Cores > 0 {
		// A reconcile takes at least its CPU time; more, alone, when it
		// also waits on something (the no-load work time, when it was
		// measured with the CPU free).
		w0 := f.cpuPer
		if c.noLoad > 0 && !c.noLoadCPUBound {
			w0 = max(w0, min(c.noLoad, f.typical))
		}
		f.cpuUsable = f.cpu.Cores * w0.Seconds() / f.cpuPer.Seconds()
	}
	// The demand: the keys that arrive and those waiting, each for the
	// typical work time, plus the staffing margin, plus the runs that hold
	// workers for longer than the window.
	work := f.typical
	if w.done == 0 {
		work = max(c.noLoad, w.longest)
	} else if w.longest > max(w.dur, heldFactor*f.typical) {
		f.held = max(1, w.inFlight-int(math.Ceil(f.concurrency)))
	}
	a := (f.arrivals + float64(w.depth)/drainHorizon.Seconds()) * work.Seconds()
	if a > 0 {
		f.needed = int(math.Ceil(a + staffingBeta*math.Sqrt(a)))
	}
	f.needed = max(f.needed, 1) + f.held
}

// cpuBound says whether the table's CPU class holds for the window.
func (f *figures) cpuBound() bool { return f.class.Class == bottleneck.CPU }

// learn updates the smoothed base work time and the no-load work time from
// a window's figures: only from a sample, and, while the process's CPU is
// what limits, never upwards (work slowed down by a full CPU is no change
// of the work).
func (c *controller) learn(f *figures) {
	if !f.sample {
		return
	}
	if c.smoothBase == 0 {
		c.smoothBase, c.smoothBusy = f.base, f.concurrency
	} else {
		c.smoothBase += time.Duration(baseSmoothing * float64(f.base-c.smoothBase))
		c.smoothBusy += baseSmoothing * (f.concurrency - c.smoothBusy)
	}
	switch {
	case c.noLoad == 0 || c.smoothBase < c.noLoad:
		c.noLoad, c.noLoadBusy, c.staleRun = c.smoothBase, c.smoothBusy, 0
		c.noLoadCPU, c.noLoadCPUBound = f.cpuPer, f.cpuBound()
	case c.noLoadCPU > 0 && f.cpuPer > workChangeFactor*c.noLoadCPU+workChangeCPU:
		// Each reconcile costs more than workChangeFactor times the CPU
		// it cost when the no-load time was measured: the work changed (an initial list of
		// reconciles with nothing to do, then real ones), whatever the
		// concurrency or a full CPU make of its time. Its time now is the
		// no-load one.
		c.smoothBase, c.smoothBusy = f.base, f.concurrency
		c.noLoad, c.noLoadBusy, c.staleRun = f.base, f.concurrency, 0
		c.noLoadCPU, c.noLoadCPUBound = f.cpuPer, f.cpuBound()
	case !f.cpuBound() && f.concurrency < c.noLoadBusy+gradientStep && float64(f.base) > (1+excessShare)*float64(c.noLoad):
		// Slower at the concurrency the no-load time was measured at: the
		// work changed (an initial list of no-op reconciles, then real
		// ones). Three such windows in a row make the new work time the
		// no-load one.
		if c.staleRun++; c.staleRun >= staleWindows {
			c.smoothBase, c.smoothBusy = f.base, f.concurrency
			c.noLoad, c.noLoadBusy, c.staleRun = f.base, f.concurrency, 0
			c.noLoadCPU, c.noLoadCPUBound = f.cpuPer, false
		}
	default:
		c.staleRun = 0
	}
}

// limitClass names what makes the reconciles slower than at no load: the
// table's class when it is a downstream one, else the largest of the
// client's rate limiter, the API server's Retry-After, and the base work
// time over the no-load one (a latency gradient).
func (c *controller) limitClass(f *figures) poolReason {
	switch f.class.Class {
	case bottleneck.ServerThrottling:
		return reasonServerThrottling
	case bottleneck.ClientRateLimit:
		return reasonClientRateLimit
	}
	gradient := 0.0
	if f.work > 0 && f.gradient {
		gradient = float64(f.base-c.noLoad) / float64(f.work)
	}
	switch {
	case f.retryAfter >= f.limiter && f.retryAfter >= gradient:
		return reasonServerThrottling
	case f.limiter >= gradient:
		return reasonClientRateLimit
	}
	return reasonLatencyGradient
}

// ceilingFor returns the ceiling for a downstream that serves usable
// reconciles at once: the nearest count to ceilingHeadroom × usable, within
// the bounds.
func (c *controller) ceilingFor(usable float64) int {
	return min(c.hi, max(c.lo, int(math.Round(ceilingHeadroom*usable))))
}

// decide returns the change w calls for at now, if any, and the window's
// figures: the window measured and assessed, then, on a window allowed to
// change, the rule's steps in order until one decides.
func (c *controller) decide(w *window, now time.Time) (decision, figures, bool) {
	f := measure(w)
	c.learn(&f)
	c.estimate(&f, w)
	a := c.assess(&f, now)
	if c.tooSoon(&a, now) {
		return decision{}, f, false
	}
	for _, s := range ruleSteps {
		switch d, v := s(c, &f, &a, now); v {
		case changed:
			return d, f, true
		case unchanged:
			return decision{}, f, false
		}
	}
	return decision{}, f, false
}

// assessment is what the rule reads of a window besides its figures.
type assessment struct {
	// usable is the reconciles the downstream serves at once, reason what
	// limits them when the CPU does (else "", for limitClass).
	usable float64
	reason poolReason
	// limited: more run at once than the downstream serves, keys waiting.
	limited bool
	// low: the demand of the shrink window is low enough to shrink to
	// shrinkTo (peak is that demand).
	low            bool
	shrinkTo, peak int
	// byDemand: the demand needs more than the limit; wantMore: it does,
	// or keys wait over the objective with the workers busy; plain: no
	// downstream limit seen or set.
	byDemand, wantMore, plain bool
}

// assess reads the window for the steps, and counts the windows in a row
// that were limited, and those at the ceiling without its signs.
func (c *controller) assess(f *figures, now time.Time) assessment {
	L := c.limit
	// More run at once than the downstream serves: by the CPU when the
	// table's class is cpu (the CPU's count), else by the throughput at the
	// no-load work time (Vegas's estimate).
	a := assessment{usable: f.usable}
	if f.cpuBound() && f.cpuUsable > 0 {
		a.usable, a.reason = min(f.cpuUsable, f.concurrency), reasonCPU
		if f.gradient {
			a.usable = min(a.usable, f.usable)
		}
	}
	// Only while keys wait: a downstream that serves what arrives holds
	// nothing back, and the window after a burst (its throughput that of
	// the arrivals, its waits those of the burst's last attempts) says
	// nothing of what it serves. A probe is judged on every window since
	// it, not on the last only (probeFound).
	excess := f.concurrency - a.usable
	a.limited = f.sample && excess >= max(minExcess, excessShare*a.usable) && f.backlog
	if a.limited {
		c.limitedRun++
		if c.last == probing && !c.probeFound.limited {
			class := a.reason
			if class == "" {
				class = c.limitClass(f)
			}
			c.probeFound = probeFinding{limited: true, usable: a.usable, reason: class, class: f.class}
		}
	} else {
		c.limitedRun = 0
	}
	// Low demand: the highest demand of the shrink window (once the
	// windows decided on cover it), with the grow band's margin, at most
	// shrinkShare of the limit and under it by a step of 2, or Min, with
	// the workers under waitUtilization (busy workers say the estimate is
	// short: an initial list of no-op reconciles, the typical ones, beside
	// real ones), and no key waiting over the objective. Few or no
	// reconciles is low demand too: the sample matters for the
	// downstream's estimate, not for an idle queue.
	var full bool
	a.peak, full = c.peakNeeded(now, f.needed)
	a.shrinkTo = max(c.lo, withMargin(a.peak))
	a.low = full && a.shrinkTo < L && (a.shrinkTo <= int(shrinkShare*float64(L)) && a.shrinkTo <= L-minStep || a.shrinkTo == c.lo) &&
		f.wait <= c.objective && f.utilization < waitUtilization
	c.watchCeiling(f)
	// Grow, when the demand needs more or keys wait with the workers busy.
	// An ascent goes on for ascentIntervals after its last step.
	a.byDemand = f.needed > L+max(1, int(math.Ceil(growBand*float64(L))))
	if c.last == growing && now.Sub(c.lastChange) <= ascentIntervals*c.interval {
		a.byDemand = withMargin(f.needed) >= L+minStep
	}
	a.wantMore = a.byDemand || (f.wait > c.objective && f.utilization >= waitUtilization)
	slower := f.sample && c.noLoad > 0 && float64(f.base) > (1+excessShare)*float64(c.noLoad)
	a.plain = c.ceiling == 0 && !slower && !a.limited && f.class.MoreWorkers() && c.last != verifying && c.last != probing
	return a
}

// watchCeiling counts the windows in a row at the ceiling without the
// signs of its limit (goneRun), and notes when the signs are seen there:
// the waits of a measured limit (the client's limiter, Retry-After) or the
// CPU's. A latency limit's signs at its ceiling (a work time a little over
// the no-load one, which is the lowest seen and so biased low) are no
// sighting: such a limit is probed instead (grow).
func (c *controller) watchCeiling(f *figures) {
	gone := f.sample && !f.cpuBound() && f.limiter < goneShare && f.retryAfter < goneShare
	switch {
	case c.ceiling == 0 || c.limit < c.ceiling || !f.sample:
		c.goneRun = 0
	case gone:
		c.goneRun++
	default:
		c.goneRun = 0
		c.ceilingSeen = c.ceilingSeen || c.ceilingBy != reasonLatencyGradient
	}
}

// surge returns, for a window shorter than the interval, a grow to the
// demand's count (of the keys taken and waiting) when the demand is plain
// and over the limit by the grow band: keys waiting, a sample of
// reconciles, no ceiling or verdict pending, no shrink within
// changeIntervals, no class that forbids more workers in w nor in
// sinceDecision (the window from the last decision to w's end, nil for
// none), and the work no slower than its no-load time (no sign of a
// downstream limit). It records the window's demand for the shrink window
// and changes nothing else otherwise: the window goes on to its decision.
func (c *controller) surge(w, sinceDecision *window, now time.Time) (decision, figures, bool) {
	// The keys the workers took, over the window so far, are its
	// arrivals, and the keys waiting the backlog to clear within the
	// drain horizon: the depth's growth over a fraction of an interval is
	// no rate (an initial list added at once would read as thousands a
	// second). While the workers are all busy, what they took is less than
	// what came: each check grows again, about doubling a second.
	short := *w
	short.depthBefore = short.depth
	f := c.figures(&short)
	if f.sample {
		// Its demand is the shrink window's too: a shrink must not forget
		// the surge that the next decision's window no longer shows.
		c.peakNeeded(now, f.needed)
	}
	L := c.limit
	// Before a decision has measured the work (noLoad 0) nothing says the
	// work is no slower, nor that the downstream has room: a throttled
	// server's first Retry-After waits end in the next window. The first
	// decision grows for demand then.
	unmeasured := c.noLoad == 0
	slower := !unmeasured && float64(f.base) > (1+excessShare)*float64(c.noLoad)
	// As in decide: a grow after a shrink waits out changeIntervals.
	afterShrink := c.last == shrinking && now.Sub(c.lastChange) < changeIntervals*c.interval
	// A throttled server's Retry-After waits end with their attempts, all
	// perhaps in an earlier check's window: a class that forbids more
	// workers since the last decision holds the surge for the decision to
	// judge the whole interval.
	held := !f.class.MoreWorkers() || (sinceDecision != nil && !measure(sinceDecision).class.MoreWorkers())
	if !f.sample || !f.backlog || unmeasured || slower || afterShrink || c.ceiling > 0 || c.last == verifying || c.last == probing || held || L >= c.hi {
		return decision{}, f, false
	}
	target := withMargin(f.needed)
	if f.needed <= L+max(1, int(math.Ceil(growBand*float64(L)))) || target < L+minStep {
		return decision{}, f, false
	}
	return c.change(min(target, c.hi), reasonDemand, stepGrow, now, "surge: "+c.demandDetail(&f)), f, true
}

// tooSoon says whether the window comes too soon after the last change to
// change again: changeIntervals, but one interval for a grow for plain
// demand (the pool then goes to the demand's count at once, and may follow
// its last grow by one interval) unless the last change was a shrink.
func (c *controller) tooSoon(a *assessment, now time.Time) bool {
	sinceLast := now.Sub(c.lastChange)
	return !c.lastChange.IsZero() && sinceLast < changeIntervals*c.interval &&
		!(a.plain && a.byDemand && !a.limited && c.limit < c.hi && sinceLast >= c.interval && c.last != shrinking)
}

// verdict is what a step of the rule made of a window.
type verdict uint8

const (
	next      verdict = iota // no decision: the next step decides
	changed                  // a change (the step's decision)
	unchanged                // nothing changes this interval
)

// ruleStep is one step of the rule, for the states the rule may be in.
type ruleStep func(c *controller, f *figures, a *assessment, now time.Time) (decision, verdict)

// ruleSteps are the rule's steps in the order decide tries them.
var ruleSteps = []ruleStep{
	(*controller).judgeProbe,
	(*controller).judgeGradientShrink,
	(*controller).toDownstream,
	(*controller).grow,
	(*controller).shrinkLow,
}

// stepKind is the kind of change a step decides.
type stepKind uint8

const (
	stepProbeFound     stepKind = iota + 1 // a probe found the limit again: back to the ceiling
	stepSlowerForAll                       // after a gradient shrink, the work no faster: the ceiling lifted
	stepDownstream                         // to the ceiling of a measured limit (limiter, Retry-After) or the CPU's
	stepGradientShrink                     // by half towards the ceiling of a latency gradient
	stepProbe                              // a probe above the ceiling
	stepGrow                               // for the demand, or a wait with the workers busy
	stepShrink                             // for low utilization
)

// transitions is the rule's state machine
// (docs/tuning.md#the-rule-as-a-state-machine): for each kind of change,
// the states it is decided from and the state it leaves the rule in. The
// rule sets its state from it, and the tests hold every change to it.
var transitions = map[stepKind]struct {
	from []move
	to   move
}{
	stepProbeFound:     {from: []move{probing}, to: settled},
	stepSlowerForAll:   {from: []move{verifying}, to: settled},
	stepDownstream:     {from: allMoves, to: settled},
	stepGradientShrink: {from: allMoves, to: verifying},
	stepProbe:          {from: allMoves, to: probing},
	stepGrow:           {from: allMoves, to: growing},
	stepShrink:         {from: allMoves, to: shrinking},
}

// allMoves are the rule's states: a probe or a gradient shrink judged
// without a change settles the rule, and the same window goes on.
var allMoves = []move{settled, growing, shrinking, probing, verifying}

// judgeProbe judges a probe, on the first window allowed to change: the
// limit found again (in this window or one since the probe) sets the
// ceiling where the first such window says, with its hold doubled; none
// lifts the ceiling.
func (c *controller) judgeProbe(f *figures, _ *assessment, now time.Time) (decision, verdict) {
	if c.last != probing {
		return decision{}, next
	}
	c.last = settled
	found := c.probeFound
	c.probeFound = probeFinding{}
	if !found.limited {
		c.ceiling, c.hold, c.goneFailed = 0, initialHold, false
		return decision{}, next
	}
	c.goneFailed = c.goneProbe
	f.class = found.class
	c.ceiling = c.ceilingFor(found.usable)
	// The CPU's signs (its utilization) show at any count, the ceiling's
	// too: they need no sighting there to be missed.
	c.ceilingSeen = found.reason == reasonCPU
	class := found.reason
	if class == "" {
		class = c.limitClass(f)
	}
	if class != reasonLatencyGradient {
		// A latency limit's hold does not grow: at its ceiling it leaves
		// no sign that could say it lifted, a probe is the only way to
		// see it.
		c.hold = min(holdGrowth*c.hold, maxHold)
	}
	c.ceilingUntil, c.ceilingBy = now.Add(c.hold), class
	return c.change(max(c.ceiling, c.lo), class, stepProbeFound, now,
		fmt.Sprintf("probe found the limit still there: %s; ceiling %d held %v", c.excessDetail(f, found.usable), c.ceiling, c.hold)), changed
}

// judgeGradientShrink judges a shrink for a latency gradient, on the first
// window allowed to change: work no faster than before it means the
// downstream got slower for everyone; the ceiling is lifted.
func (c *controller) judgeGradientShrink(f *figures, _ *assessment, now time.Time) (decision, verdict) {
	if c.last != verifying {
		return decision{}, next
	}
	c.last = settled
	if !f.sample || float64(f.base) < fasterShare*float64(c.baseBefore) || float64(f.base) <= (1+excessShare)*float64(c.noLoad) || f.cpuBound() {
		return decision{}, next
	}
	old := c.noLoad
	c.noLoad, c.noLoadBusy, c.ceiling, c.hold = f.base, f.concurrency, 0, initialHold
	return c.change(c.limit, reasonSlowerForAll, stepSlowerForAll, now,
		fmt.Sprintf("work time %v with %d workers, %v before the shrink: the downstream is slower for everyone; no-load work time %v → %v, ceiling lifted", round(f.base), c.limit, round(c.baseBefore), round(old), round(f.base))), changed
}

// toDownstream shrinks, after limitedWindows limited windows in a row, to
// what the downstream serves: straight to the ceiling when the waits on
// the limit were measured (the client's limiter, Retry-After), by halves
// when the limit is inferred from the work time (a gradient, the CPU).
func (c *controller) toDownstream(f *figures, a *assessment, now time.Time) (decision, verdict) {
	if !a.limited || c.limitedRun < limitedWindows {
		return decision{}, next
	}
	c.ceiling, c.goneFailed = c.ceilingFor(a.usable), false
	c.ceilingSeen = a.reason == reasonCPU
	class := a.reason
	if class == "" {
		class = c.limitClass(f)
	}
	c.ceilingUntil, c.ceilingBy = now.Add(c.hold), class
	L := c.limit
	to := max(c.ceiling, c.lo)
	if class != reasonClientRateLimit && class != reasonServerThrottling {
		to = max(to, (L+1)/2)
	}
	if to >= L {
		return decision{}, next
	}
	kind := stepDownstream
	if class == reasonLatencyGradient {
		kind, c.baseBefore = stepGradientShrink, f.base
	}
	return c.change(to, class, kind, now, fmt.Sprintf("%s; ceiling %d held %v", c.excessDetail(f, a.usable), c.ceiling, c.hold)), changed
}

// grow grows the pool when the demand needs more or keys wait with the
// workers busy, unless a class of the table forbids more workers. At the
// ceiling, it probes once the ceiling's hold is over or the signs of its
// limit, seen there, are gone (then straight to the demand's count, which
// their absence says the downstream may serve), and changes nothing before.
func (c *controller) grow(f *figures, a *assessment, now time.Time) (decision, verdict) {
	L := c.limit
	if !a.wantMore || a.limited || L >= c.hi {
		return decision{}, next
	}
	if c.ceiling > 0 && L >= c.ceiling {
		gone := c.ceilingSeen && c.goneRun >= goneWindows && !c.goneFailed
		// A limit whose signs at the ceiling cannot say it lifted (a
		// latency limit's are never seen there; a measured one's may not
		// be, at its edge, or come and go) is probed every pressureHold
		// while keys wait over the objective, since what a limit that
		// lifted costs them is worth more than the probe.
		until := c.ceilingUntil
		if t := c.lastChange.Add(pressureHold * c.interval); (!c.ceilingSeen || c.goneFailed) && f.wait > c.objective && t.Before(until) {
			until = t
		}
		if !now.After(until) && !gone {
			return decision{}, unchanged
		}
		target := max(L+1, int(math.Ceil(probeStep*float64(L))))
		if gone {
			target = max(target, withMargin(f.needed))
		}
		c.goneProbe = gone
		return c.change(min(target, c.hi), reasonProbe, stepProbe, now,
			fmt.Sprintf("at the ceiling %d, %s; %s", c.ceiling, probeWhy(gone), c.demandDetail(f))), changed
	}
	if !f.class.MoreWorkers() {
		return decision{}, next
	}
	// Straight to the demand's count when it is plain, or within the
	// ceiling a downstream limit set; by doubling otherwise (a downstream
	// that slows down is still in sight).
	target := max(L+1, min(2*L, withMargin(f.needed)))
	switch {
	case a.plain:
		target = max(L+1, withMargin(f.needed))
	case c.ceiling > 0:
		target = max(L+1, min(withMargin(f.needed), c.ceiling))
	}
	reason := reasonDemand
	if !a.byDemand {
		reason = reasonWait
	}
	return c.change(min(target, c.hi), reason, stepGrow, now, c.demandDetail(f)), changed
}

// shrinkLow shrinks, in one step, to the shrink window's highest demand
// with the grow band's margin, so that the next window's noise neither
// grows nor shrinks it again.
func (c *controller) shrinkLow(f *figures, a *assessment, now time.Time) (decision, verdict) {
	if !a.low {
		return decision{}, next
	}
	return c.change(a.shrinkTo, reasonLowUtilization, stepShrink, now,
		fmt.Sprintf("%s; highest in the last %v %d", c.demandDetail(f), shrinkWindowIntervals*c.interval, a.peak)), changed
}

// withMargin returns the count for a demand of needed: with the grow
// band's margin, so that the next windows' noise neither grows nor shrinks
// it again.
// A demand of one worker or none needs no margin: one worker is Min's
// floor, and the grow band still keeps it from growing on noise.
func withMargin(needed int) int {
	if needed <= 1 {
		return 1
	}
	return needed + max(1, int(math.Ceil(growBand*float64(needed))))
}

func probeWhy(gone bool) string {
	if gone {
		return "the signs of the downstream limit are gone"
	}
	return "its hold is over"
}

// change records a change to to at now; the rule is settled after it
// unless the caller names another state.
// change makes the limit to, for reason, as a change of kind, and leaves
// the rule in the state transitions gives that kind.
func (c *controller) change(to int, reason poolReason, kind stepKind, now time.Time, detail string) decision {
	c.limit = to
	c.lastChange = now
	c.limitedRun = 0
	c.last, c.goneRun = transitions[kind].to, 0
	return decision{to: to, reason: reason, detail: detail, kind: kind}
}

func (c *controller) excessDetail(f *figures, usable float64) string {
	if f.cpuBound() && f.cpuUsable > 0 {
		return fmt.Sprintf("%.1f running, the CPU serves %.1f at once (%.2f of %.2f cores used, %v of CPU per reconcile; work time %v)",
			f.concurrency, usable, f.cpu.Used, f.cpu.Cores, round(f.cpuPer), round(f.typical))
	}
	return fmt.Sprintf("%.1f running, the downstream serves %.1f at once (%.1f/s × no-load work time %v; work time %v, limiter %.2f, retry-after %.2f)",
		f.concurrency, usable, f.throughput, round(c.noLoad), round(f.typical), f.limiter, f.retryAfter)
}

func (c *controller) demandDetail(f *figures) string {
	held := ""
	if f.held > 0 {
		held = fmt.Sprintf(", %d held by long runs", f.held)
	}
	return fmt.Sprintf("needed %d (arrivals %.1f/s, work time %v%s), wait %v (objective %v), utilization %.2f, backoff retries/adds %.2f, %s",
		f.needed, f.arrivals, round(f.typical), held, round(f.wait), c.objective, f.utilization, f.errorRetries, f.class)
}

// round shortens a duration for a log line.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
