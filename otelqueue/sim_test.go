package otelqueue

// The adaptive pool's proof: a deterministic simulation on the scheduler's
// fake clock, of the real scheduler, observer and pool, with a downstream
// model, run once with the adaptive pool and once with each fixed count
// (docs/tuning.md, "Adaptive workers", has the table of one run).

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
	"github.com/otelqueue/otelqueue/scheduler"
)

// simPhase is a stretch of the simulation: the load and the downstream.
type simPhase struct {
	name string
	dur  time.Duration
	rate float64 // keys added per second (Poisson), over simKeys keys
	// knee: reconciles are as fast as alone up to knee at once, then
	// slower in proportion (a shared resource of knee slots); 0: none.
	knee int
	// qps: each reconcile makes one request through a client rate limiter
	// of qps requests a second (burst simBurst); 0: none.
	qps float64
	// usable is the count the downstream can use, for the workers target:
	// knee, or qps × the no-load work time.
	usable float64
}

const (
	simKeys   = 10000
	simWork   = 100 * time.Millisecond // mean no-load work time (uniform ±50%)
	simBurst  = 10
	simSettle = 60 * time.Second
)

var simPhases = []simPhase{
	{name: "low", dur: 3 * time.Minute, rate: 20},
	{name: "surge", dur: 3 * time.Minute, rate: 200},
	{name: "knee", dur: 3 * time.Minute, rate: 200, knee: 12, usable: 12},
	{name: "client-limit", dur: 3 * time.Minute, rate: 200, qps: 100, usable: 10},
	{name: "recovery", dur: 3 * time.Minute, rate: 200},
	{name: "quiet", dur: 3 * time.Minute, rate: 20},
}

// simChange is a change of the limit.
type simChange struct {
	at       time.Duration
	from, to int
	reason   string
}

// simPhaseResult is what one run did in one phase, over the phase and over
// its settled part (after simSettle).
type simPhaseResult struct {
	throughput, settledThroughput float64
	p99, settledP99               time.Duration
	meanWorkers, settledWorkers   float64
	settledAt                     time.Duration // after the phase start: its last change but probes
	reversals                     int           // changes of direction after settledAt
	changes                       []simChange
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

// simulate runs the phases with a fixed count (fixed > 0) or the adaptive
// pool (fixed == 0), and returns the results per phase.
func simulate(tb testing.TB, fixed int, seed uint64) []simPhaseResult {
	was := clientwork.SetEnabled(true)
	defer clientwork.SetEnabled(was)

	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := testingclock.NewFakeClock(start)
	s := scheduler.New(scheduler.Config[int]{Name: "sim", Clock: fc})
	inst, err := Instrument(s, WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		tb.Fatal(err)
	}
	defer inst.Stop()
	var p *pool
	limit := func() int { return fixed }
	if fixed == 0 {
		a := AdaptiveWorkers{Min: 1, Max: 64}
		if err := a.check(); err != nil {
			tb.Fatal(err)
		}
		var out io.Writer = io.Discard
		if testing.Verbose() && os.Getenv("SIM_DEBUG") != "" {
			out = os.Stderr
		}
		p = newPool(s, bindingOf(s), a, 1, 64, 4, func() *slog.Logger { return slog.New(slog.NewTextHandler(out, nil)) })
		if err := p.attach(); err != nil {
			tb.Fatal(err)
		}
		defer p.detach()
		limit = func() int { return int(p.limit.Load()) }
	} else {
		s.SetMaxInFlight(fixed)
	}

	rng := rand.New(rand.NewPCG(seed, 1))
	var (
		now       time.Duration
		inflight  int
		done      simHeap
		tat       time.Duration // the client limiter's theoretical arrival time
		phaseIdx  int
		phaseAt   time.Duration
		results   = make([]simPhaseResult, len(simPhases))
		waits     = make([][]time.Duration, len(simPhases))
		settled   = make([][]time.Duration, len(simPhases))
		completed = make([][2]int, len(simPhases)) // all, settled
		workerInt = make([][2]float64, len(simPhases))
		lastLimit = limit()
	)
	total := time.Duration(0)
	for _, ph := range simPhases {
		total += ph.dur
	}
	advance := func(to time.Duration) {
		if to > now {
			dt := (to - now).Seconds()
			workerInt[phaseIdx][0] += float64(limit()) * dt
			if now-phaseAt >= simSettle {
				workerInt[phaseIdx][1] += float64(limit()) * dt
			}
			fc.SetTime(start.Add(to))
			now = to
		}
	}
	noteChange := func() {
		if l := limit(); l != lastLimit {
			st := p.Stats()
			results[phaseIdx].changes = append(results[phaseIdx].changes, simChange{at: now - phaseAt, from: lastLimit, to: l, reason: st.Reason})
			lastLimit = l
		}
	}
	dispatch := func() {
		ph := simPhases[phaseIdx]
		for inflight < limit() && s.Len() > 0 {
			it, err := s.GetContext(tb.Context())
			if err != nil {
				tb.Fatal(err)
			}
			inflight++
			wait := it.DequeuedAt.Sub(it.ReadyAt)
			waits[phaseIdx] = append(waits[phaseIdx], wait)
			if now-phaseAt >= simSettle {
				settled[phaseIdx] = append(settled[phaseIdx], wait)
			}
			work := time.Duration(float64(simWork) * (0.5 + rng.Float64()))
			if ph.knee > 0 && inflight > ph.knee {
				work = work * time.Duration(inflight) / time.Duration(ph.knee)
			}
			if ph.qps > 0 {
				interval := time.Duration(float64(time.Second) / ph.qps)
				tolerance := interval * (simBurst - 1)
				at := max(now, tat-tolerance)
				limiterWait := at - now
				tat = max(tat, at) + interval
				if w := clientwork.FromContext(it.Context()); w != nil {
					w.Begin(start.Add(now))
					w.LimiterWaited(limiterWait)
				}
				work += limiterWait
			}
			heap.Push(&done, simCompletion{at: now + work, key: it.Key})
		}
	}

	nextArrival := time.Duration(0)
	nextTick := DefaultAdaptiveInterval
	phaseEnd := simPhases[0].dur
	arrival := func() time.Duration {
		return time.Duration(rng.ExpFloat64() / simPhases[phaseIdx].rate * float64(time.Second))
	}
	nextArrival = arrival()
	for now < total {
		next := min(nextArrival, nextTick, phaseEnd)
		if len(done) > 0 && done[0].at < next {
			next = done[0].at
		}
		advance(next)
		switch {
		case len(done) > 0 && done[0].at == now:
			c := heap.Pop(&done).(simCompletion)
			inflight--
			s.Done(c.key)
			completed[phaseIdx][0]++
			if now-phaseAt >= simSettle {
				completed[phaseIdx][1]++
			}
			noteChange()
			dispatch()
		case now == phaseEnd:
			phaseIdx++
			phaseAt = now
			if phaseIdx == len(simPhases) {
				break
			}
			phaseEnd += simPhases[phaseIdx].dur
			nextArrival = now + arrival()
		case now == nextTick:
			nextTick += DefaultAdaptiveInterval
			if p != nil {
				p.evaluate(fc.Now(), nil)
				noteChange()
				dispatch()
			}
		default:
			s.Add(rng.IntN(simKeys))
			nextArrival = now + arrival()
			dispatch()
		}
	}
	for i, ph := range simPhases {
		r := &results[i]
		r.throughput = float64(completed[i][0]) / ph.dur.Seconds()
		r.settledThroughput = float64(completed[i][1]) / (ph.dur - simSettle).Seconds()
		r.p99 = p99(waits[i])
		r.settledP99 = p99(settled[i])
		r.meanWorkers = workerInt[i][0] / ph.dur.Seconds()
		r.settledWorkers = workerInt[i][1] / (ph.dur - simSettle).Seconds()
		r.settledAt, r.reversals = settling(r.changes)
	}
	return results
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
// their reverts, 0 for none) and the changes of direction after it.
func settling(changes []simChange) (time.Duration, int) {
	var at time.Duration
	last := -1
	for i, c := range changes {
		probe := c.reason == ReasonProbe || (i > 0 && changes[i-1].reason == ReasonProbe && c.to < c.from)
		if !probe {
			at, last = c.at, i
		}
	}
	reversals := 0
	for i := max(last, 0) + 1; i < len(changes); i++ {
		prev := changes[i-1]
		if (prev.to > prev.from) != (changes[i].to > changes[i].from) {
			reversals++
		}
	}
	return at, reversals
}

// simFixedCounts are the fixed counts the adaptive pool is held against.
var simFixedCounts = []int{1, 2, 4, 8, 16, 32, 64}

// simTable runs the simulation and returns its table and the targets
// missed, one line each.
func simTable(tb testing.TB, seed uint64) (table string, misses []string) {
	adaptive := simulate(tb, 0, seed)
	fixed := make(map[int][]simPhaseResult)
	for _, n := range simFixedCounts {
		fixed[n] = simulate(tb, n, seed)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| phase | throughput/s (best fixed) | p99 wait (best fixed) | mean workers (usable) | settled after | reversals after | changes |\n|---|---|---|---|---|---|---|\n")
	for i, ph := range simPhases {
		a := adaptive[i]
		bestX, bestXn := 0.0, 0
		bestP, bestPn := time.Duration(math.MaxInt64), 0
		for _, n := range simFixedCounts {
			f := fixed[n][i]
			if f.settledThroughput > bestX {
				bestX, bestXn = f.settledThroughput, n
			}
			if f.settledP99 < bestP {
				bestP, bestPn = f.settledP99, n
			}
		}
		usable := "—"
		if ph.usable > 0 {
			usable = fmt.Sprintf("%.0f", ph.usable)
		}
		var steps []string
		for _, c := range a.changes {
			steps = append(steps, fmt.Sprintf("%ds %d→%d %s", int(c.at.Seconds()), c.from, c.to, c.reason))
		}
		fmt.Fprintf(&b, "| %s | %.1f (%.1f at %d) | %v (%v at %d) | %.1f (%s) | %ds | %d | %s |\n",
			ph.name, a.settledThroughput, bestX, bestXn, a.settledP99.Round(time.Millisecond), bestP.Round(time.Millisecond), bestPn,
			a.settledWorkers, usable, int(a.settledAt.Seconds()), a.reversals, strings.Join(steps, ", "))
		// A count still clearing an earlier phase's backlog finishes more
		// than arrives: the target is capped at the arrival rate.
		if a.settledThroughput < 0.9*min(bestX, ph.rate) {
			misses = append(misses, fmt.Sprintf("%s: throughput %.1f/s < 0.9 × min(%.1f/s, arrivals %.0f/s)", ph.name, a.settledThroughput, bestX, ph.rate))
		}
		if float64(a.settledP99) > 1.5*float64(bestP) {
			misses = append(misses, fmt.Sprintf("%s: p99 wait %v > 1.5 × %v", ph.name, a.settledP99, bestP))
		}
		if ph.usable > 0 && a.settledWorkers > 1.25*ph.usable {
			misses = append(misses, fmt.Sprintf("%s: mean workers %.2f > 1.25 × %.0f", ph.name, a.settledWorkers, ph.usable))
		}
		if a.settledAt > simSettle {
			misses = append(misses, fmt.Sprintf("%s: settled after %v > %v", ph.name, a.settledAt, simSettle))
		}
		if a.reversals > 2 {
			misses = append(misses, fmt.Sprintf("%s: %d changes of direction once settled > 2", ph.name, a.reversals))
		}
	}
	return b.String(), misses
}

// TestAdaptiveSimulation holds the adaptive pool to the targets of its
// design in the simulation: per phase, once settled, throughput ≥ 0.9 × the
// best fixed count's, p99 queue wait ≤ 1.5 × the best fixed count's, mean
// workers ≤ 1.25 × the count the downstream can use (knee, client limit),
// settled within 60 s of the phase change, at most two changes of
// direction after. The simulation is deterministic (fake clock, one
// goroutine, a seeded generator); nothing in it is timed.
func TestAdaptiveSimulation(t *testing.T) {
	table, misses := simTable(t, 1)
	t.Logf("\n%s", table)
	for _, m := range misses {
		t.Error(m)
	}
}

// BenchmarkAdaptiveSimulation runs the simulation with other seeds and
// reports the targets missed; -v prints the table.
func BenchmarkAdaptiveSimulation(b *testing.B) {
	b.ReportAllocs()
	var missed int
	for i := 0; b.Loop(); i++ {
		table, misses := simTable(b, uint64(i+1))
		b.Logf("seed %d\n%s%s", i+1, table, strings.Join(misses, "\n"))
		missed += len(misses)
	}
	b.ReportMetric(float64(missed)/float64(b.N), "targets-missed/op")
}
