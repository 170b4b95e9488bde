package otelqueue

// The adaptive pool's proof: a deterministic simulation on the scheduler's
// fake clock, of the real scheduler, observer and pool, with a downstream
// model, run once with the adaptive pool and once with each fixed count,
// scenario by scenario (sim_scenarios_test.go has the scenarios and their
// targets; docs/tuning.md, "Adaptive workers", has the table of one run of
// the base scenario).

import (
	"container/heap"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/procstat"
	"github.com/otelqueue/otelqueue/scheduler"
)

// simScenario is a load and its downstream, the fixed counts the adaptive
// pool is held against, and the targets it must meet.
type simScenario struct {
	name   string
	phases []simPhase
	// keys is the number of keys the events pick from: 0 to keys-1.
	keys int
	work simWorkModel
	// batches are keys added at once, beside the events.
	batches []simBatch
	// requeue: every reconcile ends by requeueing its key after requeue,
	// as a Runner does for Result{RequeueAfter: requeue}; 0: none.
	requeue time.Duration
	// cores: the reconciles are CPU work on cores cores, and the pool reads
	// the process's CPU, of which they keep min(running, cores) cores busy
	// (the phases' knee stretches the work beyond); 0: the pool reads none.
	cores int
	// settle is the start of every phase that its judgement leaves out:
	// the pool's time to settle; 0: each phase is judged whole.
	settle time.Duration
	// counts are the fixed counts the pool is held against; the pool runs
	// between 1 and the largest of them, from 4.
	counts []int
	// targets returns the lines to print under the table, and the targets
	// missed, one line each.
	targets func(r *simReport) (notes, misses []string)
}

// simPhase is a stretch of a scenario: the load and the downstream.
type simPhase struct {
	name string
	dur  time.Duration
	rate float64 // keys added per second (Poisson), over the scenario's keys
	// knee: reconciles are as fast as alone up to knee at once, then
	// slower in proportion (a shared resource of knee slots); 0: none.
	knee int
	// qps: each reconcile makes one request through a client rate limiter
	// of qps requests a second (burst simLimiterBurst); 0: none.
	qps float64
	// usable is the count the downstream can use, for the workers target:
	// knee, or qps × the no-load work time.
	usable float64
	// probeEvery: the pool may probe the limit once per probeEvery once
	// settled, each probe and its revert two changes of direction (a limit
	// that leaves no sign at its ceiling is probed on purpose); 0: one
	// probe at most.
	probeEvery time.Duration
}

// simWorkModel is the work time of a reconcile: uniform within ±50% of
// mean, except, with probability tail, tailWork.
type simWorkModel struct {
	mean     time.Duration
	tail     float64
	tailWork time.Duration
}

func (m simWorkModel) draw(rng *rand.Rand) time.Duration {
	work := time.Duration(float64(m.mean) * (0.5 + rng.Float64()))
	if m.tail > 0 && rng.Float64() < m.tail {
		work = m.tailWork
	}
	return work
}

// simBatch is n keys, first to first+n-1, added at once at at; work, when
// not 0, is the work time of every reconcile of theirs.
type simBatch struct {
	at       time.Duration
	first, n int
	work     time.Duration
}

func (b simBatch) holds(key int) bool { return key >= b.first && key < b.first+b.n }

const (
	simKeys         = 10000
	simLimiterBurst = 10
	simSettle       = 60 * time.Second
	// simPrompt is the wait within which an attempt counts as started
	// promptly (simPhaseResult.prompt).
	simPrompt = time.Second
	// simNoneStarted is the p99 wait of a settled part in which keys were
	// ready and none was handed out (a count whose every worker hangs):
	// longer than any.
	simNoneStarted = time.Duration(math.MaxInt64)
)

// simWait formats a p99 wait, rounded to round (0: not rounded).
func simWait(d, round time.Duration) string {
	if d == simNoneStarted {
		return "none started"
	}
	return d.Round(round).String()
}

// simChange is a change of the limit.
type simChange struct {
	at       time.Duration
	from, to int
	reason   poolReason
}

// simPhaseResult is what one run did in one phase, over the phase and over
// its settled part (after the scenario's settle).
type simPhaseResult struct {
	throughput, settledThroughput float64
	p99, settledP99               time.Duration
	meanWorkers, settledWorkers   float64
	workerSeconds                 float64       // the limit integrated over the phase
	waitingLimit                  float64       // the limit's time-weighted mean while keys are ready (depth > 0)
	laterWaitingLimit             float64       // the same from the second batch on
	prompt                        float64       // of the settled attempts of the events' keys, the share that waited at most simPrompt
	settledEvents                 float64       // the events' adds per second in the settled part
	settledAt                     time.Duration // after the phase start: its last change but probes
	settledBy                     poolReason    // that change's reason
	reversals                     int           // changes of direction after settledAt
	changes                       []simChange
}

// simResult is what one run did.
type simResult struct {
	phases []simPhaseResult
	// drained is, per batch, when its last key finished after the batch
	// came (-1: not by the end), for batches of keys reconciled once.
	drained []time.Duration
	// At the end: the reconciles finished, the adds that became work
	// (scheduler.Stats.Adds) and the keys still pending.
	completed, pending int
	adds               uint64
}

// simPhaseSums are the sums a run keeps for one phase.
type simPhaseSums struct {
	waits, settledWaits         []time.Duration
	completed, settledCompleted int
	// The limit integrated over time, exactly (worker-nanoseconds), and
	// the same and the time while keys are ready.
	workers, settledWorkers int64
	waitingWorkers          int64
	waiting                 time.Duration
	// And from the second batch on (once the pool has met the first).
	laterWaitingWorkers int64
	laterWaiting        time.Duration
	settledReady        bool // keys were ready in the settled part
	prompt, promptOf    int
	settledEvents       int // the events' adds in the settled part
	changes             []simChange
}

type simCompletion struct {
	at  time.Duration
	key int
}

type simHeap []simCompletion

func (h simHeap) Len() int           { return len(h) }
func (h simHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h simHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)        { *h = append(*h, x.(simCompletion)) }
func (h *simHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// simEngine is one run of a scenario, with a fixed count or the adaptive
// pool, in one goroutine: it steps the fake clock from event to event
// (completions, arrivals, batches, requeued keys coming due, the pool's
// ticks, phase ends) and hands keys out up to the limit after each.
type simEngine struct {
	tb    testing.TB
	sc    *simScenario
	start time.Time
	fc    *testingclock.FakeClock
	s     *scheduler.Scheduler[int]
	p     *pool // nil with a fixed count
	fixed int
	rng   *rand.Rand

	now, phaseAt time.Duration
	phase        int
	inflight     int
	done         simHeap
	dues         []time.Duration // when the requeued keys come due, in order
	tat          time.Duration   // the client limiter's theoretical arrival time
	cpu          time.Duration   // the process's CPU so far
	lastLimit    int

	sums      []simPhaseSums
	completed int
	batchLeft []int
	drained   []time.Duration
}

// simulate runs sc with a fixed count (fixed > 0) or the adaptive pool
// (fixed == 0).
func simulate(tb testing.TB, sc *simScenario, fixed int, seed uint64) simResult {
	e := &simEngine{
		tb: tb, sc: sc, fixed: fixed,
		start:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		rng:       rand.New(rand.NewPCG(seed, 1)),
		sums:      make([]simPhaseSums, len(sc.phases)),
		batchLeft: make([]int, len(sc.batches)),
		drained:   make([]time.Duration, len(sc.batches)),
	}
	e.fc = testingclock.NewFakeClock(e.start)
	e.s = scheduler.New(scheduler.Config[int]{Name: "sim", Clock: e.fc})
	defer e.s.ShutDown() // stops the delay loop of requeued keys
	// WithClientTime: the pool reads the simulated client's waits (the
	// fixed counts' runs carry the same Work, so both runs cost the same).
	inst, err := Instrument(e.s, WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider()), WithClientTime())
	if err != nil {
		tb.Fatal(err)
	}
	defer inst.Stop()
	if fixed == 0 {
		hi := slices.Max(sc.counts)
		a := AdaptiveWorkers{Min: 1, Max: hi}
		if err := a.check(); err != nil {
			tb.Fatal(err)
		}
		var out io.Writer = io.Discard
		if testing.Verbose() && os.Getenv("SIM_DEBUG") != "" {
			out = os.Stderr
		}
		e.p = newPool(e.s, bindingOf(e.s), a, 1, hi, 4, func() *slog.Logger { return slog.New(slog.NewTextHandler(out, nil)) })
		if sc.cores > 0 {
			e.p.readCPU = func() procstat.Sample {
				return procstat.Sample{At: e.fc.Now(), CPUKnown: true, User: e.cpu, GOMAXPROCS: sc.cores, NumCPU: sc.cores}
			}
		}
		if err := e.p.attach(); err != nil {
			tb.Fatal(err)
		}
		defer e.p.detach()
	} else {
		e.s.SetMaxInFlight(fixed)
	}
	e.lastLimit = e.limit()
	for i := range e.drained {
		e.drained[i] = -1
	}
	e.run()
	return e.result()
}

func (e *simEngine) limit() int {
	if e.p == nil {
		return e.fixed
	}
	return int(e.p.limit.Load())
}

func (e *simEngine) settled() bool { return e.now-e.phaseAt >= e.sc.settle }

// run steps through the scenario's events to its end.
func (e *simEngine) run() {
	var total time.Duration
	for _, ph := range e.sc.phases {
		total += ph.dur
	}
	nextTick := defaultAdaptiveInterval
	phaseEnd := e.sc.phases[0].dur
	nextArrival := e.arrival()
	batch := 0 // the next batch
	for e.now < total {
		next := min(nextArrival, nextTick, phaseEnd)
		if batch < len(e.sc.batches) {
			next = min(next, e.sc.batches[batch].at)
		}
		if len(e.dues) > 0 {
			next = min(next, e.dues[0])
		}
		if len(e.done) > 0 && e.done[0].at < next {
			next = e.done[0].at
		}
		e.advance(next)
		switch {
		case len(e.done) > 0 && e.done[0].at == e.now:
			e.complete()
		case e.now == phaseEnd:
			e.phase++
			e.phaseAt = e.now
			if e.phase == len(e.sc.phases) {
				break
			}
			phaseEnd += e.sc.phases[e.phase].dur
			nextArrival = e.now + e.arrival()
		case batch < len(e.sc.batches) && e.sc.batches[batch].at == e.now:
			b := e.sc.batches[batch]
			for k := b.first; k < b.first+b.n; k++ {
				e.s.Add(k)
			}
			e.batchLeft[batch] = b.n
			batch++
			e.dispatch()
		case len(e.dues) > 0 && e.dues[0] == e.now:
			e.dues = e.dues[1:]
			e.dispatch() // Len, in dispatch, makes the keys due ready
		case e.now == nextTick:
			nextTick += defaultAdaptiveInterval
			if e.p != nil {
				e.p.evaluate(e.fc.Now(), nil)
				e.noteChange()
				e.dispatch()
			}
		default:
			e.s.Add(e.rng.IntN(e.sc.keys))
			if e.settled() {
				e.sums[e.phase].settledEvents++
			}
			nextArrival = e.now + e.arrival()
			e.dispatch()
		}
	}
}

func (e *simEngine) arrival() time.Duration {
	return time.Duration(e.rng.ExpFloat64() / e.sc.phases[e.phase].rate * float64(time.Second))
}

// advance moves the clock to to, integrating the limit and the CPU over
// the time between: nothing changes between two events.
func (e *simEngine) advance(to time.Duration) {
	if to <= e.now {
		return
	}
	dt := to - e.now
	w := int64(e.limit()) * int64(dt)
	ps := &e.sums[e.phase]
	ps.workers += w
	if e.settled() {
		ps.settledWorkers += w
	}
	if e.s.Len() > 0 {
		ps.waitingWorkers += w
		ps.waiting += dt
		if len(e.sc.batches) > 1 && e.now >= e.sc.batches[1].at {
			ps.laterWaitingWorkers += w
			ps.laterWaiting += dt
		}
		ps.settledReady = ps.settledReady || e.settled()
	}
	if e.sc.cores > 0 {
		e.cpu += time.Duration(min(e.inflight, e.sc.cores)) * (to - e.now)
	}
	e.fc.SetTime(e.start.Add(to))
	e.now = to
}

// complete ends the reconcile that finishes first.
func (e *simEngine) complete() {
	c := heap.Pop(&e.done).(simCompletion)
	e.inflight--
	if e.sc.requeue > 0 {
		e.s.Forget(c.key)
		e.s.AddAfter(c.key, e.sc.requeue)
		e.dues = append(e.dues, e.now+e.sc.requeue)
	}
	e.s.Done(c.key)
	e.completed++
	ps := &e.sums[e.phase]
	ps.completed++
	if e.settled() {
		ps.settledCompleted++
	}
	for i, b := range e.sc.batches {
		if b.holds(c.key) {
			if e.batchLeft[i]--; e.batchLeft[i] == 0 {
				e.drained[i] = e.now - b.at
			}
		}
	}
	e.noteChange()
	e.dispatch()
}

func (e *simEngine) noteChange() {
	if l := e.limit(); l != e.lastLimit {
		st := e.p.Stats()
		ps := &e.sums[e.phase]
		ps.changes = append(ps.changes, simChange{at: e.now - e.phaseAt, from: e.lastLimit, to: l, reason: poolReason(st.Reason)})
		e.lastLimit = l
	}
}

// dispatch hands keys out up to the limit and schedules their completions.
func (e *simEngine) dispatch() {
	ph := e.sc.phases[e.phase]
	ps := &e.sums[e.phase]
	for e.inflight < e.limit() && e.s.Len() > 0 {
		it, err := e.s.GetContext(e.tb.Context())
		if err != nil {
			e.tb.Fatal(err)
		}
		e.inflight++
		wait := it.DequeuedAt.Sub(it.ReadyAt)
		ps.waits = append(ps.waits, wait)
		if e.settled() {
			ps.settledWaits = append(ps.settledWaits, wait)
			if it.Key < e.sc.keys {
				ps.promptOf++
				if wait <= simPrompt {
					ps.prompt++
				}
			}
		}
		work := e.workOf(it.Key)
		if ph.knee > 0 && e.inflight > ph.knee {
			work = work * time.Duration(e.inflight) / time.Duration(ph.knee)
		}
		if ph.qps > 0 {
			interval := time.Duration(float64(time.Second) / ph.qps)
			tolerance := interval * (simLimiterBurst - 1)
			at := max(e.now, e.tat-tolerance)
			limiterWait := at - e.now
			e.tat = max(e.tat, at) + interval
			if w := clientwork.FromContext(it.Context()); w != nil {
				w.Begin(e.start.Add(e.now))
				w.LimiterWaited(limiterWait)
			}
			work += limiterWait
		}
		heap.Push(&e.done, simCompletion{at: e.now + work, key: it.Key})
	}
}

// workOf returns the work time of a reconcile of key: its batch's, or the
// scenario's model's.
func (e *simEngine) workOf(key int) time.Duration {
	for _, b := range e.sc.batches {
		if b.work > 0 && b.holds(key) {
			return b.work
		}
	}
	return e.sc.work.draw(e.rng)
}

// result derives the run's figures from its sums.
func (e *simEngine) result() simResult {
	st := e.s.Stats()
	res := simResult{
		phases:    make([]simPhaseResult, len(e.sc.phases)),
		drained:   e.drained,
		completed: e.completed,
		adds:      st.Adds,
		pending:   st.Depth + st.Delayed + st.Held + st.InFlight,
	}
	for i, ph := range e.sc.phases {
		ps := &e.sums[i]
		r := &res.phases[i]
		judged := (ph.dur - e.sc.settle).Seconds()
		r.throughput = float64(ps.completed) / ph.dur.Seconds()
		r.settledThroughput = float64(ps.settledCompleted) / judged
		r.p99 = p99(ps.waits)
		r.settledP99 = p99(ps.settledWaits)
		if len(ps.settledWaits) == 0 && ps.settledReady {
			r.settledP99 = simNoneStarted
		}
		r.meanWorkers = float64(ps.workers) / float64(ph.dur)
		r.settledWorkers = float64(ps.settledWorkers) / float64(ph.dur-e.sc.settle)
		r.settledEvents = float64(ps.settledEvents) / judged
		r.workerSeconds = float64(ps.workers) / float64(time.Second)
		if ps.laterWaiting > 0 {
			r.laterWaitingLimit = float64(ps.laterWaitingWorkers) / float64(ps.laterWaiting)
		}
		if ps.waiting > 0 {
			r.waitingLimit = float64(ps.waitingWorkers) / float64(ps.waiting)
		}
		if ps.promptOf > 0 {
			r.prompt = float64(ps.prompt) / float64(ps.promptOf)
		}
		r.changes = ps.changes
		r.settledAt, r.settledBy, r.reversals = settling(r.changes)
	}
	return res
}

// p99 returns the 99th percentile of ws (nearest rank).
func p99(ws []time.Duration) time.Duration {
	if len(ws) == 0 {
		return 0
	}
	s := slices.Clone(ws)
	slices.Sort(s)
	return s[int(math.Ceil(0.99*float64(len(s))))-1]
}

// settling returns when a phase settled (its last change but probes and
// their reverts, 0 for none), that change's reason, and the changes of
// direction after it.
func settling(changes []simChange) (time.Duration, poolReason, int) {
	var at time.Duration
	var by poolReason
	last := -1
	for i, c := range changes {
		probe := c.reason == reasonProbe || (i > 0 && changes[i-1].reason == reasonProbe && c.to < c.from)
		if !probe {
			at, by, last = c.at, c.reason, i
		}
	}
	reversals := 0
	for i := max(last, 0) + 1; i < len(changes); i++ {
		prev := changes[i-1]
		if (prev.to > prev.from) != (changes[i].to > changes[i].from) {
			reversals++
		}
	}
	return at, by, reversals
}

// simReport is a scenario's runs: the pool's, each fixed count's, and per
// phase the best of the fixed counts.
type simReport struct {
	sc       *simScenario
	adaptive simResult
	fixed    map[int]simResult
	best     []simBest
}

// simBest is the best of the fixed counts in a phase's settled part: the
// highest throughput and the lowest p99 wait, and the counts that had them
// (the smallest on a tie).
type simBest struct {
	x  float64
	xn int
	p  time.Duration
	pn int
}

// simTable runs sc with the pool and every fixed count, and returns its
// table and the targets missed, one line each.
func simTable(tb testing.TB, sc *simScenario, seed uint64) (table string, misses []string) {
	r := &simReport{sc: sc, adaptive: simulate(tb, sc, 0, seed), fixed: make(map[int]simResult)}
	for _, n := range sc.counts {
		r.fixed[n] = simulate(tb, sc, n, seed)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| phase | throughput/s (best fixed) | p99 wait (best fixed) | mean workers (usable) | settled after | reversals after | changes |\n|---|---|---|---|---|---|---|\n")
	for i, ph := range sc.phases {
		a := r.adaptive.phases[i]
		best := simBest{p: time.Duration(math.MaxInt64)}
		for _, n := range sc.counts {
			f := r.fixed[n].phases[i]
			if f.settledThroughput > best.x {
				best.x, best.xn = f.settledThroughput, n
			}
			if f.settledP99 < best.p {
				best.p, best.pn = f.settledP99, n
			}
		}
		r.best = append(r.best, best)
		usable := "—"
		if ph.usable > 0 {
			usable = fmt.Sprintf("%.0f", ph.usable)
		}
		var steps []string
		for _, c := range a.changes {
			steps = append(steps, fmt.Sprintf("%ds %d→%d %s", int(c.at.Seconds()), c.from, c.to, c.reason))
		}
		fmt.Fprintf(&b, "| %s | %.1f (%.1f at %d) | %s (%s at %d) | %.1f (%s) | %ds | %d | %s |\n",
			ph.name, a.settledThroughput, best.x, best.xn, simWait(a.settledP99, time.Millisecond), simWait(best.p, time.Millisecond), best.pn,
			a.settledWorkers, usable, int(a.settledAt.Seconds()), a.reversals, strings.Join(steps, ", "))
	}
	notes, misses := sc.targets(r)
	for _, n := range notes {
		fmt.Fprintf(&b, "%s\n", n)
	}
	return b.String(), misses
}

// TestAdaptiveSimulation holds the adaptive pool to the targets of its
// design in every scenario of the simulation (simScenarios; each states its
// targets), against the best of the fixed counts. The simulation is
// deterministic (fake clock, one goroutine, a seeded generator); nothing in
// it is timed.
func TestAdaptiveSimulation(t *testing.T) {
	for _, sc := range simScenarios {
		t.Run(sc.name, func(t *testing.T) {
			table, misses := simTable(t, sc, 1)
			t.Logf("\n%s", table)
			for _, m := range misses {
				t.Error(m)
			}
		})
	}
}

// BenchmarkAdaptiveSimulation runs every scenario with other seeds and
// reports the targets missed, in all and per scenario; -v prints the
// tables.
func BenchmarkAdaptiveSimulation(b *testing.B) {
	b.ReportAllocs()
	missed := make([]int, len(simScenarios))
	for i := 0; b.Loop(); i++ {
		for j, sc := range simScenarios {
			table, misses := simTable(b, sc, uint64(i+1))
			b.Logf("%s, seed %d\n%s%s", sc.name, i+1, table, strings.Join(misses, "\n"))
			missed[j] += len(misses)
		}
	}
	total := 0
	for j, sc := range simScenarios {
		total += missed[j]
		b.ReportMetric(float64(missed[j])/float64(b.N), sc.name+"-missed/op")
	}
	b.ReportMetric(float64(total)/float64(b.N), "targets-missed/op")
}
