package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// FuzzModel runs a sequence of operations decoded from the input against a
// Scheduler on a fake clock and against a small reference model of the
// documented semantics, and compares them after every operation.
//
// Input: the first byte chooses the configuration, then each pair of bytes
// is one operation (see modelRun.step).
func FuzzModel(f *testing.F) {
	f.Add([]byte("\x03\x00\x01\x06\x00\x00\x01\x08\x00\x06\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		r := newModelRun(t, data[0])
		defer r.s.ShutDown()
		ops := data[1:]
		for i := 0; i+1 < len(ops) && i < 2*modelMaxOps; i += 2 {
			r.step(ops[i], ops[i+1])
			r.check()
		}
		r.finish()
	})
}

const (
	modelKeys    = 4
	modelUnknown = 99 // a key never added
	modelMaxOps  = 400

	modelBackoffBase = time.Second
	modelBackoffMax  = 8 * time.Second
	modelWindow      = time.Second
)

var (
	modelDelays = [...]time.Duration{-time.Second, 0, 500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second, 8 * time.Second}
	modelSteps  = [...]time.Duration{time.Nanosecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, time.Millisecond, 10 * time.Second}
	modelMax    = [...]int{0, 1, 3, -1}
	// modelPrios are the priorities of Add (0: a plain Add), some beyond
	// the int32 range.
	modelPrios = [...]int{0, 5, -100, math.MaxInt, math.MinInt, math.MaxInt32 + 1}
)

// modelSpan is the span context an add carries: n in [0, 4) is one of four,
// 4 is none.
func modelSpan(n int) trace.SpanContext {
	if n >= 4 {
		return trace.SpanContext{}
	}
	return span(n)
}

// runSpan is the span context the fuzz Observer processes run number n in;
// every third run has none.
func runSpan(n int) trace.SpanContext {
	if n%3 == 0 {
		return trace.SpanContext{}
	}
	return span(1000 + n)
}

// fuzzObserver returns a context carrying runSpan(n) for the n-th dequeue.
type fuzzObserver struct {
	mu       sync.Mutex
	dequeued []dequeuedCall[int]
	done     []doneCall[int]
	changes  []doneCall[int] // ChangeDone's: started is the change's time
}

// It asks for changes (see change.go).
func (o *fuzzObserver) ObservesChanges() bool { return true }

func (o *fuzzObserver) ChangeDone(ctx context.Context, key int, changed, ended time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.changes = append(o.changes, doneCall[int]{ctx: ctx, key: key, started: changed, ended: ended})
}

func (o *fuzzObserver) lastChange() (int, doneCall[int]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.changes); n > 0 {
		return n, o.changes[n-1]
	}
	return 0, doneCall[int]{}
}

func (o *fuzzObserver) Dequeued(ctx context.Context, it *Item[int]) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	ret := context.WithValue(ctx, obsMarker{}, len(o.dequeued)+1)
	if sc := runSpan(len(o.dequeued) + 1); sc.IsValid() {
		ret = trace.ContextWithSpanContext(ret, sc)
	}
	o.dequeued = append(o.dequeued, dequeuedCall[int]{ctx: ctx, item: *it, ret: ret})
	return ret
}

func (o *fuzzObserver) Done(ctx context.Context, key int, started, ended time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, doneCall[int]{ctx: ctx, key: key, started: started, ended: ended})
}

func (o *fuzzObserver) counts() (int, int, dequeuedCall[int], doneCall[int]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var d dequeuedCall[int]
	var c doneCall[int]
	if n := len(o.dequeued); n > 0 {
		d = o.dequeued[n-1]
	}
	if n := len(o.done); n > 0 {
		c = o.done[n-1]
	}
	return len(o.dequeued), len(o.done), d, c
}

// mEntry is the model's state of one key.
type mEntry struct {
	pending    bool // a run is pending (ready, delayed or held)
	processing bool // a run is in flight
	delayed    bool // pending, not processing, and waiting for readyAt

	enqueued, readyAt int64 // ns since t0
	reason            WaitReason
	trigger           Trigger // of the add that set readyAt
	// The pending run's change (change.go): open, since changeAt; the run
	// in flight's, and whether a rate-limited add marked it failed.
	changeOpen, runChangeOpen, runFailed bool
	changeAt, runChangeAt                int64
	prio                                 int // the pending run's: the highest it was added with
	coalesced                            int
	debounced                            bool
	deadline                             int64

	origin   trace.SpanContext
	links    []trace.SpanContext
	dropped  int
	previous trace.SpanContext
	requeues int

	// The run in flight.
	started int64
	runSpan trace.SpanContext
	runCtx  context.Context
}

func (e *mEntry) ready() bool { return e.pending && !e.processing && !e.delayed }

func (e *mEntry) resetRun() {
	e.origin, e.links, e.dropped, e.previous, e.requeues = trace.SpanContext{}, nil, 0, trace.SpanContext{}, 0
	e.coalesced, e.debounced, e.deadline = 0, false, 0
	e.changeOpen = false
}

// model is the reference: the documented semantics, kept naively.
type model struct {
	now                      int64
	timed, observed          bool
	maxLinks                 int
	debounce, maxWait        int64
	shutdown, stopOnShutdown bool
	adds, retries, coalesced uint64
	delayedAdds              uint64
	keys                     [modelKeys]mEntry
	failures                 [modelKeys]int
	runs, dones              int
	changes                  int   // changes closed
	busy                     int64 // run time of the runs done, in a timed queue
	limit                    int   // SetMaxInFlight; 0: none
	log                      []string
}

type modelRun struct {
	t   *testing.T
	fc  *testingclock.FakeClock
	s   *Scheduler[int]
	obs *fuzzObserver
	m   model
}

// newModelRun makes the queue and its model. cfgByte: bit 0 names the queue
// (timed), bit 1 installs an Observer (timed too), bits 2-3 choose MaxLinks
// (0, 1, 3, -1), bits 4-5 debouncing (none, none, 1s window, 1s window with
// a 3s max wait), bit 7 StopOnShutDown.
func newModelRun(t *testing.T, cfgByte byte) *modelRun {
	r := &modelRun{t: t, fc: testingclock.NewFakeClock(t0)}
	cfg := Config[int]{
		Clock:       r.fc,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[int](modelBackoffBase, modelBackoffMax),
		MaxLinks:    modelMax[(cfgByte>>2)&3],
	}
	m := &r.m
	if cfgByte&1 != 0 {
		cfg.Name = "fuzz"
		m.timed = true
	}
	m.maxLinks = cfg.MaxLinks
	if m.maxLinks == 0 {
		m.maxLinks = defaultMaxLinks
	}
	switch (cfgByte >> 4) & 3 {
	case 2:
		cfg.Debounce = modelWindow
		m.debounce, m.maxWait = int64(modelWindow), int64(10*modelWindow)
	case 3:
		cfg.Debounce, cfg.DebounceMaxWait = modelWindow, 3*modelWindow
		m.debounce, m.maxWait = int64(modelWindow), int64(3*modelWindow)
	}
	if cfgByte&0x80 != 0 {
		cfg.StopOnShutDown, m.stopOnShutdown = true, true
	}
	r.s = New(cfg)
	if cfgByte&2 != 0 {
		r.obs = &fuzzObserver{}
		r.s.SetObserver(r.obs)
		m.timed, m.observed = true, true
	}
	m.logf("config: name %q, observer %v, MaxLinks %d, Debounce %v, DebounceMaxWait %v, StopOnShutDown %v", cfg.Name, r.obs != nil, cfg.MaxLinks, cfg.Debounce, cfg.DebounceMaxWait, cfg.StopOnShutDown)
	return r
}

func (m *model) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf("t0+%v: ", time.Duration(m.now))+fmt.Sprintf(format, args...))
}

func (r *modelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	log := r.m.log
	if len(log) > 60 {
		log = append([]string{"..."}, log[len(log)-60:]...)
	}
	r.t.Fatalf("%s\noperations:\n  %s", fmt.Sprintf(format, args...), strings.Join(log, "\n  "))
}

// step performs one operation: op chooses what, arg the key (arg%4) and a
// parameter (arg/4).
func (r *modelRun) step(op, arg byte) {
	s, m := r.s, &r.m
	k, sub := int(arg%modelKeys), int(arg/modelKeys)
	switch op % 12 {
	case 0:
		if p := modelPrios[sub%len(modelPrios)]; p != 0 {
			// An event handler's add: its trigger said.
			m.logf("AddWithOptions(Priority %d, Trigger update, %d)", p, k)
			s.AddWithOptions(context.Background(), AddOptions{Priority: p, Trigger: TriggerUpdate}, k)
			m.addTrigger(k, trace.SpanContext{}, 0, addPlain, TriggerUpdate, 0, p)
			return
		}
		m.logf("Add(%d)", k)
		s.Add(k)
		m.add(k, trace.SpanContext{}, 0, addPlain, 0, 0)
	case 1:
		sc := modelSpan(sub % 5)
		m.logf("AddContext(span %d, %d)", sub%5, k)
		s.AddContext(trace.ContextWithSpanContext(context.Background(), sc), k)
		m.add(k, sc, 0, addPlain, 0, 0)
	case 2:
		d := modelDelays[sub%len(modelDelays)]
		m.logf("AddAfter(%d, %v)", k, d)
		s.AddAfter(k, d)
		m.add(k, trace.SpanContext{}, d, addDelayed, 0, 0)
	case 3:
		sc, d := modelSpan(sub%4), modelDelays[(sub/4)%len(modelDelays)]
		m.logf("AddAfterContext(span %d, %d, %v)", sub%4, k, d)
		s.AddAfterContext(trace.ContextWithSpanContext(context.Background(), sc), k, d)
		m.add(k, sc, d, addDelayed, 0, 0)
	case 4:
		m.logf("AddRateLimited(%d)", k)
		s.AddRateLimited(k)
		m.addRateLimited(k, trace.SpanContext{})
	case 5:
		sc := modelSpan(sub % 5)
		m.logf("AddRateLimitedContext(span %d, %d)", sub%5, k)
		s.AddRateLimitedContext(trace.ContextWithSpanContext(context.Background(), sc), k)
		m.addRateLimited(k, sc)
	case 6:
		r.getContext()
	case 7:
		if m.handsOut() == 0 && !m.shutdown {
			// Get would block.
			r.getContext()
			return
		}
		m.logf("GetWithPriority()")
		key, prio, shutdown := s.GetWithPriority()
		if shutdown {
			if m.handsOut() != 0 || !m.shutdown {
				r.fatalf("Get reported shutdown; model: %d ready, shut down %v", m.readyCount(), m.shutdown)
			}
			return
		}
		var it *Item[int]
		if r.obs != nil {
			_, _, last, _ := r.obs.counts()
			it = &last.item
		}
		if key >= 0 && key < modelKeys && prio != m.keys[key].prio {
			r.fatalf("GetWithPriority: %d with priority %d, model %d", key, prio, m.keys[key].prio)
		}
		r.got(key, it, nil)
	case 8:
		if sub%8 == 7 {
			k = modelUnknown
		}
		r.done(k)
	case 9:
		if sub >= 48 {
			// A quarter of these: the in-flight limit an adaptive pool
			// sets, 0 (none) to 3.
			n := (sub - 48) % 4
			m.logf("SetMaxInFlight(%d)", n)
			s.SetMaxInFlight(n)
			m.limit = n
			return
		}
		m.logf("Forget(%d)", k)
		s.Forget(k)
		m.failures[k] = 0
	case 10:
		d := modelSteps[sub%len(modelSteps)]
		m.logf("Step(%v)", d)
		r.fc.Step(d)
		m.now += int64(d)
		m.promote()
	case 11:
		switch {
		case sub%4 != 0:
			// Done of the key in flight the longest (the lowest key
			// among equals): makes progress likelier.
			best := -1
			for i := range m.keys {
				if m.keys[i].processing && (best < 0 || m.keys[i].started < m.keys[best].started) {
					best = i
				}
			}
			if best >= 0 {
				r.done(best)
			}
		case sub%8 == 4 && m.inFlight() == 0:
			m.logf("ShutDownWithDrain()")
			s.ShutDownWithDrain()
			m.shutDown()
		default:
			m.logf("ShutDown()")
			s.ShutDown()
			m.shutDown()
		}
	}
}

// getContext takes a key with GetContext and a done context, which never
// blocks.
func (r *modelRun) getContext() {
	m := &r.m
	m.logf("GetContext(cancelled)")
	it, err := r.s.GetContext(cancelled)
	switch {
	case err == nil:
		r.got(it.Key, &it, it.Context())
	case errors.Is(err, ErrShutDown):
		if m.handsOut() != 0 || !m.shutdown {
			r.fatalf("GetContext: ErrShutDown; model: %d ready, shut down %v", m.readyCount(), m.shutdown)
		}
	case errors.Is(err, context.Canceled):
		if m.handsOut() != 0 || m.shutdown {
			r.fatalf("GetContext: context.Canceled; model: %d ready, shut down %v", m.readyCount(), m.shutdown)
		}
	default:
		r.fatalf("GetContext: unexpected error %v", err)
	}
}

// got checks a key handed out (and its Item when known) against the model
// and records the run.
func (r *modelRun) got(key int, it *Item[int], ctx context.Context) {
	r.t.Helper()
	m := &r.m
	if key < 0 || key >= modelKeys {
		r.fatalf("handed out key %d, never added", key)
	}
	e := &m.keys[key]
	if e.processing {
		r.fatalf("key %d handed out while still in flight", key)
	}
	if m.shutdown && m.stopOnShutdown {
		r.fatalf("key %d handed out after ShutDown with StopOnShutDown", key)
	}
	if m.limit > 0 && m.inFlight() >= m.limit {
		r.fatalf("key %d handed out with %d in flight, at the limit %d", key, m.inFlight(), m.limit)
	}
	if !e.ready() {
		r.fatalf("key %d handed out, but the model has it pending %v, delayed %v (ready at t0+%v)", key, e.pending, e.delayed, time.Duration(e.readyAt))
	}
	for i := range m.keys {
		if o := &m.keys[i]; o.ready() && o.prio > e.prio {
			r.fatalf("key %d (priority %d) handed out before key %d (priority %d)", key, e.prio, i, o.prio)
		}
	}
	m.runs++
	if r.obs != nil {
		n, _, last, _ := r.obs.counts()
		if n != m.runs {
			r.fatalf("Observer.Dequeued called %d times for %d runs", n, m.runs)
		}
		if last.item.Key != key {
			r.fatalf("Observer.Dequeued got key %d, want %d", last.item.Key, key)
		}
		if ctx != nil && ctx != last.ret {
			r.fatalf("Item.Context() is not the context Dequeued returned")
		}
		e.runCtx = last.ret
		e.runSpan = runSpan(m.runs)
	} else {
		e.runCtx, e.runSpan = nil, trace.SpanContext{}
	}
	if it != nil {
		r.checkItem(key, e, it)
	}
	m.logf("  -> %d", key)
	e.pending, e.processing, e.started = false, true, m.now
	e.runChangeOpen, e.runChangeAt, e.runFailed = e.changeOpen, e.changeAt, false
	e.resetRun()
}

func (r *modelRun) checkItem(key int, e *mEntry, it *Item[int]) {
	m := &r.m
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if it.Key != key {
		bad("Key %d", it.Key)
	}
	if m.timed {
		at := func(ns int64) time.Time { return t0.Add(time.Duration(ns)) }
		if !it.EnqueuedAt.Equal(at(e.enqueued)) {
			bad("EnqueuedAt t0+%v, want t0+%v", it.EnqueuedAt.Sub(t0), time.Duration(e.enqueued))
		}
		if want := at(max(e.readyAt, e.enqueued)); !it.ReadyAt.Equal(want) {
			bad("ReadyAt t0+%v, want t0+%v", it.ReadyAt.Sub(t0), want.Sub(t0))
		}
		if !it.DequeuedAt.Equal(at(m.now)) {
			bad("DequeuedAt t0+%v, want t0+%v", it.DequeuedAt.Sub(t0), time.Duration(m.now))
		}
		if it.Trigger != e.trigger {
			bad("Trigger %v, want %v", it.Trigger, e.trigger)
		}
		if it.Reason != e.reason {
			bad("Reason %v, want %v", it.Reason, e.reason)
		}
	} else if !it.EnqueuedAt.IsZero() || !it.ReadyAt.IsZero() || !it.DequeuedAt.IsZero() {
		bad("times %v %v %v in an untimed queue", it.EnqueuedAt, it.ReadyAt, it.DequeuedAt)
	}
	if it.Coalesced != e.coalesced {
		bad("Coalesced %d, want %d", it.Coalesced, e.coalesced)
	}
	if it.Priority != e.prio {
		bad("Priority %d, want %d", it.Priority, e.prio)
	}
	if it.Requeues != e.requeues {
		bad("Requeues %d, want %d", it.Requeues, e.requeues)
	}
	if !it.Origin.Equal(e.origin) {
		bad("Origin %v, want %v", it.Origin.SpanID(), e.origin.SpanID())
	}
	if !sameSpans(it.Links, e.links) {
		bad("Links %v, want %v", it.Links, e.links)
	}
	if it.DroppedLinks != e.dropped {
		bad("DroppedLinks %d, want %d", it.DroppedLinks, e.dropped)
	}
	if !it.PreviousAttempt.Equal(e.previous) {
		bad("PreviousAttempt %v, want %v", it.PreviousAttempt.SpanID(), e.previous.SpanID())
	}
	if len(problems) > 0 {
		r.fatalf("item of key %d: %s", key, strings.Join(problems, "; "))
	}
}

func (r *modelRun) done(k int) {
	m := &r.m
	m.logf("Done(%d)", k)
	r.s.Done(k)
	if k < 0 || k >= modelKeys || !m.keys[k].processing {
		return // harmless
	}
	e := &m.keys[k]
	e.processing = false
	m.dones++
	if m.timed {
		m.busy += m.now - e.started
	}
	if r.obs != nil {
		_, n, _, last := r.obs.counts()
		if n != m.dones {
			r.fatalf("Observer.Done called %d times for %d Dones", n, m.dones)
		}
		if last.key != k || last.ctx != e.runCtx || !last.started.Equal(t0.Add(time.Duration(e.started))) || !last.ended.Equal(t0.Add(time.Duration(m.now))) {
			r.fatalf("Observer.Done(%d, t0+%v, t0+%v), want (%d, t0+%v, t0+%v) in the run's context",
				last.key, last.started.Sub(t0), last.ended.Sub(t0), k, time.Duration(e.started), time.Duration(m.now))
		}
		// The run closes its change unless it failed.
		if e.runChangeOpen && !e.runFailed {
			m.changes++
		}
		n, c := r.obs.lastChange()
		if n != m.changes {
			r.fatalf("ChangeDone called %d times, the model closed %d changes (this run: open %v since t0+%v, failed %v)",
				n, m.changes, e.runChangeOpen, time.Duration(e.runChangeAt), e.runFailed)
		}
		if e.runChangeOpen && !e.runFailed && (c.key != k || c.ctx != e.runCtx || !c.started.Equal(t0.Add(time.Duration(e.runChangeAt))) || !c.ended.Equal(t0.Add(time.Duration(m.now)))) {
			r.fatalf("ChangeDone(%d, t0+%v, t0+%v), want (%d, t0+%v, t0+%v) in the run's context",
				c.key, c.started.Sub(t0), c.ended.Sub(t0), k, time.Duration(e.runChangeAt), time.Duration(m.now))
		}
	}
	if !e.pending {
		return
	}
	switch {
	case e.readyAt > m.now && m.shutdown:
		e.pending, e.delayed = false, false
		e.resetRun()
	case e.readyAt > m.now:
		e.delayed = true
	default:
		if e.readyAt < m.now {
			e.readyAt, e.reason = m.now, WaitHeld
		}
		e.delayed = false
	}
}

func (m *model) addRateLimited(k int, sc trace.SpanContext) {
	if m.shutdown {
		// Dropped, but the run in flight failed all the same.
		if m.observed && m.keys[k].processing {
			m.keys[k].runFailed = true
		}
		return
	}
	exp := m.failures[k]
	m.failures[k]++
	d := modelBackoffMax
	if exp < 8 && modelBackoffBase<<exp < modelBackoffMax {
		d = modelBackoffBase << exp
	}
	m.add(k, sc, d, addRateLimited, m.failures[k], 0)
}

// add is the model of an add that names no trigger.
func (m *model) add(k int, sc trace.SpanContext, delay time.Duration, kind addKind, requeues, priority int) {
	trigger := TriggerAdd
	switch kind {
	case addDelayed:
		trigger = TriggerRequeueAfter
	case addRateLimited:
		trigger = TriggerBackoff
	}
	m.addTrigger(k, sc, delay, kind, trigger, requeues, priority)
}

// addTrigger is the model of every add.
func (m *model) addTrigger(k int, sc trace.SpanContext, delay time.Duration, kind addKind, trigger Trigger, requeues, priority int) {
	if m.shutdown {
		return
	}
	if kind != addPlain {
		m.retries++
		if kind == addDelayed {
			m.delayedAdds++
		}
	}
	e := &m.keys[k]
	now := m.now
	prio := priority
	debounce := kind == addPlain && m.debounce > 0
	immediate := delay <= 0 && !debounce
	reason, target := WaitImmediate, now
	switch {
	case debounce:
		reason = WaitDebounced
	case immediate:
	case kind == addRateLimited:
		reason, target = WaitRateLimited, now+int64(delay)
	default:
		reason, target = WaitDelayed, now+int64(delay)
	}
	if !e.pending {
		m.adds++
		e.pending, e.enqueued, e.coalesced = true, now, 0
		if m.debounce > 0 {
			e.deadline = now + m.maxWait
		}
		if debounce {
			// A burst runs a window after its last add, at most maxWait
			// after its first.
			target = min(now+m.debounce, e.deadline)
			e.debounced = true
		} else if !immediate && m.debounce > 0 {
			e.deadline = min(e.deadline, target)
		}
		e.readyAt, e.reason, e.trigger = target, reason, trigger
		e.delayed = !e.processing && !immediate
		e.prio = prio
	} else {
		e.prio = max(e.prio, prio)
		m.coalesced++
		e.coalesced++
		if e.processing || e.delayed {
			if debounce {
				if t := min(now+m.debounce, e.deadline); e.debounced || t < e.readyAt {
					e.readyAt, e.reason, e.trigger, e.debounced = t, WaitDebounced, trigger, true
				}
			} else {
				if m.debounce > 0 {
					e.deadline = min(e.deadline, target)
				}
				// The earliest ready time wins.
				if target < e.readyAt || immediate {
					e.readyAt, e.reason, e.trigger, e.debounced = target, reason, trigger, false
				}
			}
		}
	}
	m.addSpan(e, sc)
	if kind == addRateLimited && e.processing && e.runSpan.IsValid() {
		e.previous = e.runSpan
	}
	if m.observed {
		switch {
		case kind == addRateLimited:
			// A failure of the run in flight: its change goes on with the
			// pending run, the earliest winning.
			if e.processing {
				e.runFailed = true
				if e.runChangeOpen && (!e.changeOpen || e.runChangeAt < e.changeAt) {
					e.changeOpen, e.changeAt = true, e.runChangeAt
				}
			}
		case trigger == TriggerRequeueAfter || trigger == TriggerBackoff:
		case !e.changeOpen:
			e.changeOpen, e.changeAt = true, now
		}
	}
	if requeues > 0 {
		e.requeues = requeues
	}
	m.promote()
}

// addSpan: the first valid context is the origin; further distinct ones are
// links, up to maxLinks in all; the rest are counted.
func (m *model) addSpan(e *mEntry, sc trace.SpanContext) {
	if !sc.IsValid() {
		return
	}
	if m.maxLinks < 0 {
		e.dropped++
		return
	}
	if !e.origin.IsValid() {
		e.origin = sc
		return
	}
	if e.origin.Equal(sc) {
		return
	}
	for _, l := range e.links {
		if l.Equal(sc) {
			return
		}
	}
	if 1+len(e.links) >= m.maxLinks {
		e.dropped++
		return
	}
	e.links = append(e.links, sc)
}

func (m *model) promote() {
	for i := range m.keys {
		if e := &m.keys[i]; e.delayed && e.readyAt <= m.now {
			e.delayed = false
		}
	}
}

func (m *model) shutDown() {
	m.shutdown = true
	for i := range m.keys {
		if e := &m.keys[i]; e.delayed {
			e.pending, e.delayed = false, false
			e.resetRun()
		}
	}
}

// handsOut is the number of keys Get may hand out: the ready ones, none
// after ShutDown with StopOnShutDown.
func (m *model) handsOut() int {
	if m.shutdown && m.stopOnShutdown {
		return 0
	}
	if m.limit > 0 && m.inFlight() >= m.limit {
		return 0 // the keys wait for a Done
	}
	return m.readyCount()
}

func (m *model) readyCount() int {
	n := 0
	for i := range m.keys {
		if m.keys[i].ready() {
			n++
		}
	}
	return n
}

func (m *model) inFlight() int {
	n := 0
	for i := range m.keys {
		if m.keys[i].processing {
			n++
		}
	}
	return n
}

// check compares the scheduler with the model.
func (r *modelRun) check() {
	r.t.Helper()
	s, m := r.s, &r.m
	// Len promotes the keys whose time has come, like the delay loop.
	if n := s.MaxInFlight(); n != m.limit {
		r.fatalf("MaxInFlight() = %d, model %d", n, m.limit)
	}
	if n, want := s.Len(), m.readyCount(); n != want {
		r.fatalf("Len = %d, model has %d ready", n, want)
	}
	want := Stats{
		Depth: m.readyCount(), InFlight: m.inFlight(), Adds: m.adds, Retries: m.retries, DelayedAdds: m.delayedAdds, Coalesced: m.coalesced,
		Finished: uint64(m.dones), Busy: time.Duration(m.busy),
	}
	var oldest []time.Duration
	for i := range m.keys {
		e := &m.keys[i]
		switch {
		case e.processing && e.pending:
			want.Held++
		case e.delayed:
			want.Delayed++
		}
		if !m.timed {
			continue
		}
		if e.processing {
			age := time.Duration(m.now - e.started)
			want.UnfinishedWork += age
			want.Busy += age
			want.LongestRunning = max(want.LongestRunning, age)
		}
		if e.ready() {
			oldest = append(oldest, time.Duration(m.now-max(e.readyAt, e.enqueued)))
		}
	}
	// The delayed keys due within a second and within the longest delay
	// the model uses (the model's clock is the scheduler's: nothing moves
	// between the two reads but the promotion DueWithin does itself).
	for _, within := range []time.Duration{time.Second, time.Hour} {
		due := 0
		for i := range m.keys {
			if e := &m.keys[i]; e.delayed && e.readyAt <= m.now+int64(within) {
				due++
			}
		}
		if got := s.DueWithin(within); got != due {
			r.fatalf("DueWithin(%v) = %d, model %d", within, got, due)
		}
	}
	depths := map[int]int{}
	for i := range m.keys {
		if e := &m.keys[i]; e.ready() {
			depths[e.prio]++
		}
	}
	for _, d := range s.DepthByPriority(nil) {
		if d.Depth != depths[d.Priority] {
			r.fatalf("DepthByPriority: %d at priority %d, model %v", d.Depth, d.Priority, depths)
		}
		delete(depths, d.Priority)
	}
	if len(depths) > 0 {
		r.fatalf("DepthByPriority lacks the model's priorities %v", depths)
	}
	got := s.Stats()
	// Which ready key heads the queue depends on the order of events the
	// model does not keep; the age must be that of one of them.
	if len(oldest) > 0 {
		for _, age := range oldest {
			if got.OldestPending == age {
				want.OldestPending = age
			}
		}
		if want.OldestPending == 0 && got.OldestPending != 0 {
			r.fatalf("OldestPending = %v, want one of %v", got.OldestPending, oldest)
		}
	}
	if got != want {
		r.fatalf("Stats:\n got %+v\nwant %+v", got, want)
	}
	for k := range modelKeys {
		if n := s.NumRequeues(k); n != m.failures[k] {
			r.fatalf("NumRequeues(%d) = %d, model %d", k, n, m.failures[k])
		}
	}
	// No key lost or leaked: the scheduler's entries are the model's.
	s.mu.Lock()
	defer s.mu.Unlock()
	live := 0
	for k := range modelKeys {
		me := &m.keys[k]
		e, ok := s.entries[k]
		if me.pending || me.processing {
			live++
		}
		if !ok {
			if me.pending || me.processing {
				r.fatalf("key %d lost: model has it pending %v, processing %v", k, me.pending, me.processing)
			}
			continue
		}
		wantPlace := nowhere
		switch {
		case me.ready():
			wantPlace = inReady
		case me.delayed:
			wantPlace = inDelay
		}
		if e.pending != me.pending || e.processing != me.processing || e.place != wantPlace {
			r.fatalf("key %d: pending %v, processing %v, place %d; model: %v, %v, %d", k, e.pending, e.processing, e.place, me.pending, me.processing, wantPlace)
		}
		if me.pending && e.readyAt != me.readyAt && (m.timed || e.readyAt != 0) {
			r.fatalf("key %d ready at t0+%v, model t0+%v", k, time.Duration(e.readyAt), time.Duration(me.readyAt))
		}
	}
	if len(s.entries) != live {
		r.fatalf("the scheduler has %d entries, the model %d live keys", len(s.entries), live)
	}
}

// finish shuts the queue down and drains it: every key ready or held must
// come out once more, and nothing may be left.
func (r *modelRun) finish() {
	s, m := r.s, &r.m
	m.logf("ShutDown() to finish")
	s.ShutDown()
	m.shutDown()
	r.check()
	for range 3 * modelKeys {
		for k := range modelKeys {
			if m.keys[k].processing {
				r.done(k)
				r.check()
			}
		}
		for m.handsOut() > 0 {
			r.getContext()
			r.check()
		}
	}
	if _, err := s.GetContext(cancelled); !errors.Is(err, ErrShutDown) {
		r.fatalf("drained queue: GetContext error %v, want ErrShutDown", err)
	}
	// With StopOnShutDown the ready keys stay, never handed out.
	if st := s.Stats(); st.Depth != m.readyCount() || st.Delayed != 0 || st.Held != 0 || st.InFlight != 0 {
		r.fatalf("drained queue: Stats %+v, model %d ready", st, m.readyCount())
	}
}
