package otelqueue

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
	"weak"

	"github.com/otelqueue/otelqueue/inspect"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/program"
	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Inspector is a read-only http.Handler that shows the queues of the
// process instrumented with Instrument (and so those of package
// controllerruntime): per queue, its numbers, the keys waiting by priority
// and wait reason, the keys that have waited longest with why they wait,
// their priority, attempts and the trace that enqueued them or their last
// attempt, the keys in flight with how long they have run, the last failed
// attempts with their error and trace, the adaptive pool's count and last
// decision, and whether the queue is standby. It
// serves an HTML page, or JSON (inspect.Page) when the request asks for it
// (?format=json, or an Accept header of application/json).
//
// Keys are object names, and the page shows trace ids: serve it only where
// the metrics may be read (a loopback address, or behind the same
// authentication as /metrics); it never listens by itself. Nothing is
// recorded for it on the queues' hot path: each request reads the queues
// (scheduler.Scheduler.Inspect, under each queue's lock in turn) and
// renders them, with at most Limit keys per list. Each look also ends a
// window of the queue's counters, which gives its bottleneck class
// (inspect.Bottleneck). An Inspector must not be copied after first use.
type Inspector struct {
	// Limit is the number of keys listed per queue in each list: 0 (or
	// less) means 20, and more than 1000 means 1000.
	Limit int
	// TraceURL, when set, makes every trace id a link: the URL with its
	// "{trace_id}" replaced by the id in hex, e.g.
	// "http://127.0.0.1:16686/trace/{trace_id}" for Jaeger's UI.
	TraceURL string
	// Sizer, when set, puts its recommendation at the top of the page
	// (inspect.Page.Recommendation): the workers, cores and memory the
	// queues it sizes and their process need.
	Sizer *Sizer
	// Shard, when set, is the replica's shard, a *shard.Shard (package
	// shard), said at the top of the page (inspect.Page.Shard).
	Shard interface {
		Ordinal() (ordinal, total int)
		By() string
		String() string
	}
	// Instrumentations, when set, are the queues the page shows: those of
	// one program of several in a process (a test binary, two managers).
	// Nil shows every queue of the process instrumented and not stopped:
	// the process's list of Instrumentations is the default a program
	// replaces with its own.
	Instrumentations []*Instrumentation

	// mu guards looks: the start of each queue's current window, per
	// Inspector (inspect.Bottleneck).
	mu    sync.Mutex
	looks map[*inspectable]*look
}

// defaultInspectorLimit is the number of keys an Inspector lists per queue
// and list unless told otherwise; maxInspectorLimit the most it lists.
const (
	defaultInspectorLimit = 20
	maxInspectorLimit     = 1000
)

// inspectable is a live Instrumentation, as an Inspector reads it. It
// refers to its scheduler through a weak pointer only (the Instrumentation
// refers to it strongly): a scheduler dropped without Stop is not kept
// alive by the list of inspectables.
type inspectable struct {
	name    string
	inspect func(limit int) (inspected, bool)
	standby *standby // nil without WithStandby
	b       *binding
	// client is the Instrumentation's client instruments WithClientTime,
	// nil without; workers is WithWorkers' count, 0 without.
	client  *clientInstruments
	workers int
	// realClock says whether the queue runs on the real clock, so that
	// its windows are the process's time (for its CPU); start is the
	// reading at registration, the start of every Inspector's first
	// window.
	realClock bool
	start     queueReading
}

// inspected is one reading of a queue for a page.
type inspected struct {
	raw         scheduler.Inspection[string]
	stats       scheduler.Stats
	maxInFlight int
}

// registerInspectable adds the Instrumentation of s to what Inspectors
// show, and returns the function that removes it. The scheduler is held by
// a weak pointer: a scheduler dropped without Stop is not kept alive.
func registerInspectable[K comparable](s *scheduler.Scheduler[K], sb *standby, b *binding, client *clientInstruments, workers int) (*inspectable, func()) {
	wp := weak.Make(s)
	clk := schedhooks.Of(s).Clock
	_, real := clk.(clock.RealClock)
	in := &inspectable{name: s.Name(), standby: sb, b: b, client: client, workers: workers, realClock: real}
	// The start of the first windows: the queue's counters now, without
	// the process's (a program that never looks pays no read of them).
	in.start = queueReading{at: clk.Now(), q: s.Stats()}
	if client != nil {
		in.start.client = client.stats()
	}
	in.inspect = func(limit int) (inspected, bool) {
		s := wp.Value()
		if s == nil {
			return inspected{}, false
		}
		st := s.Stats()
		raw := s.Inspect(limit)
		out := scheduler.Inspection[string]{At: raw.At, Pending: raw.Pending, InFlight: raw.InFlight, ByPriority: raw.ByPriority}
		for _, p := range raw.Oldest {
			out.Oldest = append(out.Oldest, scheduler.PendingKey[string]{
				Key: keyString(p.Key), EnqueuedAt: p.EnqueuedAt, ReadyAt: p.ReadyAt, Reason: p.Reason, Trigger: p.Trigger, Source: p.Source,
				Priority: p.Priority, Requeues: p.Requeues, Coalesced: p.Coalesced, Delayed: p.Delayed, Held: p.Held,
				Origin: p.Origin, PreviousAttempt: p.PreviousAttempt,
			})
		}
		for _, r := range raw.Running {
			out.Running = append(out.Running, scheduler.RunningKey[string]{Key: keyString(r.Key), StartedAt: r.StartedAt, SpanContext: r.SpanContext, Trigger: r.Trigger, Source: r.Source})
		}
		return inspected{raw: out, stats: st, maxInFlight: s.MaxInFlight()}, true
	}
	return in, program.Register(in)
}

// live returns the process's live inspectables (internal/program's list),
// in the order they were made.
func live() []*inspectable {
	var list []*inspectable
	for _, x := range program.Live() {
		if in, ok := x.(*inspectable); ok {
			list = append(list, in)
		}
	}
	return list
}

// shown returns the queues the Inspector shows: its Instrumentations not
// stopped, or every one of the process.
func (i *Inspector) shown() []*inspectable {
	all := live()
	if i == nil || i.Instrumentations == nil {
		return all
	}
	var list []*inspectable
	for _, in := range all {
		if slices.ContainsFunc(i.Instrumentations, func(inst *Instrumentation) bool { return inst != nil && inst.inspectable == in }) {
			list = append(list, in)
		}
	}
	return list
}

// Page returns what the Inspector shows now.
func (i *Inspector) Page() inspect.Page {
	limit := defaultInspectorLimit
	if i != nil && i.Limit > 0 {
		limit = min(i.Limit, maxInspectorLimit)
	}
	list := i.shown()
	page := inspect.Page{At: time.Now(), Queues: []inspect.Queue{}}
	var gone []*inspectable
	var proc processReading
	for _, in := range list {
		got, ok := in.inspect(limit)
		if !ok {
			gone = append(gone, in) // its scheduler was dropped without Stop
			continue
		}
		raw, st := got.raw, got.stats
		q := inspect.Queue{
			Name: in.name, Standby: in.standby.isStandby(),
			Depth: st.Depth, Delayed: st.Delayed, Held: st.Held, InFlight: st.InFlight, OldestPending: st.OldestPending,
			// Empty lists, not null, in the JSON.
			Pending: []inspect.Count{}, Oldest: []inspect.Key{}, Running: []inspect.Run{},
			Failures: in.b.failures.last(),
		}
		for _, c := range raw.ByPriority {
			place := "ready"
			switch {
			case c.Held:
				place = "held"
			case c.Delayed:
				place = "delayed"
			}
			q.Pending = append(q.Pending, inspect.Count{Priority: c.Priority, Reason: c.Reason.String(), Place: place, Keys: c.Keys})
		}
		now := raw.At
		for _, p := range raw.Oldest {
			k := inspect.Key{
				Key: p.Key, Reason: p.Reason.String(), Trigger: p.Trigger.String(), Source: p.Source, Priority: p.Priority,
				Attempts: p.Requeues + 1, Coalesced: p.Coalesced,
				EnqueuedBy: traceID(p.Origin), LastAttempt: traceID(p.PreviousAttempt),
			}
			if !now.IsZero() {
				k.Wait = now.Sub(p.EnqueuedAt)
				if p.Delayed {
					k.ReadyIn = max(0, p.ReadyAt.Sub(now))
				}
			}
			q.Oldest = append(q.Oldest, k)
		}
		for _, r := range raw.Running {
			run := inspect.Run{Key: r.Key, Trigger: r.Trigger.String(), Source: r.Source, TraceID: traceID(r.SpanContext)}
			if !now.IsZero() {
				run.Running = now.Sub(r.StartedAt)
			}
			q.Running = append(q.Running, run)
		}
		if p := in.b.pool.Load(); p != nil {
			a := p.Stats()
			q.Adaptive = &a
			q.Decisions = p.decisions()
		}
		workers := int(in.b.workerCount())
		if workers == 0 {
			workers = in.workers
		}
		if workers == 0 {
			workers = got.maxInFlight
		}
		if w, since, ok := i.sizerWindow(in); ok {
			q.Bottleneck = inspectedBottleneck(w, since)
			if q.Standby {
				q.Bottleneck.Class, q.Bottleneck.Recommended = "", 0
				q.Bottleneck.Verdict = "none while standby: the workers wait for leadership"
			}
		} else if !now.IsZero() {
			q.Bottleneck = i.bottleneckOf(in, in.reading(now, st, &proc), workers, q.Standby)
		}
		page.Queues = append(page.Queues, q)
	}
	if len(gone) > 0 {
		xs := make([]any, len(gone))
		for j, in := range gone {
			xs[j] = in
		}
		program.Remove(xs...)
	}
	i.forget(list, gone)
	slices.SortStableFunc(page.Queues, func(a, b inspect.Queue) int { return cmp.Compare(a.Name, b.Name) })
	if i != nil && i.Sizer != nil {
		r := i.Sizer.Recommend()
		page.Recommendation = &r
	}
	if i != nil && i.Shard != nil && i.Shard.String() != "" {
		page.Shard = shardText(i.Shard)
	}
	return page
}

// sizerWindow is the window of in's queue that the Inspector's Sizer read
// last, when it sizes the queue: the same for every reader.
func (i *Inspector) sizerWindow(in *inspectable) (bottleneck.Window, time.Time, bool) {
	if i == nil || i.Sizer == nil {
		return bottleneck.Window{}, time.Time{}, false
	}
	return i.Sizer.lastWindow(in.b)
}

// shardText is s as the page says it: "1 of 3 by uid: shardRange(...)".
func shardText(s interface {
	Ordinal() (int, int)
	By() string
	String() string
}) string {
	if o, n := s.Ordinal(); n > 0 {
		return fmt.Sprintf("%d of %d by %s: %s", o, n, s.By(), s)
	}
	return fmt.Sprintf("by %s: %s", s.By(), s)
}

// traceID is sc's trace id in hex, or "" for an invalid sc.
func traceID(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// ServeHTTP serves the page (inspect.Serve): JSON for ?format=json or an
// Accept header that prefers application/json, HTML otherwise. Only GET
// and HEAD are allowed.
func (i *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	traceURL := ""
	if i != nil {
		traceURL = i.TraceURL
	}
	inspect.Serve(w, r, i.Page, traceURL)
}
