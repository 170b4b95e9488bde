package otelqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Link attribute values (`workqueue.link`) telling what a link of the root span
// points to.
var (
	linkEnqueue  = []attribute.KeyValue{semconv.AttrLinkKind.String("enqueue")}
	linkPrevious = []attribute.KeyValue{semconv.AttrLinkKind.String("previous_attempt")}
)

// observer implements scheduler.Observer with spans and the two histograms.
type observer[K comparable] struct {
	queue      string
	tracer     trace.Tracer
	tracing    bool
	clientTime bool // WithClientTime: every attempt's client time is recorded
	parentMode bool
	rootName   string
	linkSource LinkSource[K] // nil without WithLinkSource

	queueDuration metric.Float64Histogram
	workDuration  metric.Float64Histogram
	// changeDuration is nil without WithChangeDuration: the scheduler
	// then keeps no changes (ObservesChanges).
	changeDuration metric.Float64Histogram
	client         *clientInstruments
	record         []metric.RecordOption // the queue's attributes, prepared once
	// waitByPriority is the queue wait by priority's instrument and
	// attributes, nil without WithWaitByPriority.
	waitByPriority *waitByPriority
	// lateness is nil without WithLateness; lateRecord its record
	// options by the scheduler.WaitReason of a delayed run.
	lateness   metric.Float64Histogram
	lateRecord [scheduler.WaitHeld + 1][]metric.RecordOption
	b          *binding // where an adaptive pool, if any, is found
	standby    *standby // WithStandby's state, nil without
}

// rootKey is the context key of the root span of an attempt, which Done ends.
type rootKey struct{}

func newObserver[K comparable](c *config, in *instruments, b *binding, queue string, attrs attribute.Set) *observer[K] {
	o := &observer[K]{
		b:              b,
		queue:          queue,
		tracing:        c.tracing(),
		clientTime:     c.clientTime,
		parentMode:     c.parentMode,
		rootName:       "process " + queue,
		queueDuration:  in.queueDuration,
		workDuration:   in.workDuration,
		changeDuration: in.changeDuration,
		client:         newClientInstruments(in),
		record:         []metric.RecordOption{metric.WithAttributeSet(attrs)},
	}
	if in.lateness != nil {
		o.lateness = in.lateness
		for _, r := range []scheduler.WaitReason{scheduler.WaitDelayed, scheduler.WaitRateLimited, scheduler.WaitDebounced} {
			o.lateRecord[r] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(attrs.ToSlice(), semconv.AttrWaitReason.String(r.String()))...))}
		}
	}
	if in.queueDurationByPriority != nil {
		o.waitByPriority = newWaitByPriority(in.queueDurationByPriority, attrs)
	}
	if o.tracing {
		o.tracer = c.tracerProvider.Tracer(semconv.ScopeOtelqueue, trace.WithInstrumentationVersion(Version))
		o.linkSource = linkSourceFor[K](c)
	}
	return o
}

// NeedsWallClock tells the scheduler whether the times it reports become span
// timestamps (they must then follow the wall clock); with tracing off only
// durations are recorded.
func (o *observer[K]) NeedsWallClock() bool { return o.tracing }

// ObservesChanges tells the scheduler whether to keep the queue's changes:
// with WithChangeDuration.
func (o *observer[K]) ObservesChanges() bool { return o.changeDuration != nil }

// ChangeDone records a change closed by the attempt of ctx, with its span
// context for the exemplar when the attempt is recorded.
func (o *observer[K]) ChangeDone(ctx context.Context, _ K, changed, ended time.Time) {
	if o.changeDuration == nil {
		return
	}
	if a, _ := ctx.(*attemptContext); a == nil || a.root == nil {
		ctx = context.Background() // no span of this queue's to point to
	}
	// A change a standby queue saw was its leader's to act on: it counts
	// from when this queue became active (WithStandby), as the queue wait.
	if at, ok := o.standby.activeSince(); ok && changed.Before(at) {
		changed = at
	}
	o.changeDuration.Record(ctx, max(0, ended.Sub(changed)).Seconds(), o.record...)
}

// NextRun puts on the attempt's "reconcile" span, when it is recorded, for
// what and how soon after its end the key runs again.
func (o *observer[K]) NextRun(ctx context.Context, _ K, ended, next time.Time, trigger scheduler.Trigger) {
	if a, _ := ctx.(*attemptContext); a == nil || a.root == nil {
		return // no span of this queue's
	}
	trace.SpanFromContext(ctx).SetAttributes(
		semconv.AttrNextTrigger.String(trigger.String()),
		semconv.AttrNextDelay.Float64(max(0, next.Sub(ended)).Seconds()),
	)
}

// DurationsOnly tells the scheduler whether it may tell o of each run by
// its durations alone (Waited, Worked) instead of Dequeued and Done: when
// o reads no time or context of a run, with tracing off and no standby,
// client time or change durations.
func (o *observer[K]) DurationsOnly() bool {
	return !o.tracing && o.standby == nil && !o.clientTime && o.changeDuration == nil
}

// Waited records a run's queue wait, as Dequeued does with tracing off.
func (o *observer[K]) Waited(w schedhooks.Wait) {
	if p := o.b.pool.Load(); p != nil {
		p.sig.dequeued(w.Wait)
	}
	o.recordWait(context.Background(), w.Wait.Seconds(), w.Priority, scheduler.WaitReason(w.Reason))
}

// Worked records a run's work, as Done does with tracing off.
func (o *observer[K]) Worked(work time.Duration, ended time.Time) {
	if p := o.b.pool.Load(); p != nil {
		p.sig.finished(work, 0, 0, false)
		p.evaluate(ended, nil)
	}
	o.workDuration.Record(context.Background(), work.Seconds(), o.record...)
}

// The scheduler finds NeedsWallClock, ObservesChanges, ChangeDone,
// NextRun and the durations-only path by these signatures (see
// scheduler.Observer and schedhooks.DurationObserver).
var _ interface {
	scheduler.Observer[string]
	schedhooks.DurationObserver
	NeedsWallClock() bool
	ObservesChanges() bool
	ChangeDone(ctx context.Context, key string, changed, ended time.Time)
	NextRun(ctx context.Context, key string, ended, next time.Time, trigger scheduler.Trigger)
} = (*observer[string])(nil)

// Dequeued starts the attempt's trace and records the queue wait inside it.
func (o *observer[K]) Dequeued(ctx context.Context, it *scheduler.Item[K]) context.Context {
	// The wait for a worker: from the key's ready time, or from when a
	// standby queue became active if later (WithStandby).
	d := it.DequeuedAt.Sub(it.ReadyAt)
	var standbyPart time.Duration
	var activeAt time.Time
	if o.standby != nil {
		d, standbyPart, activeAt = o.standby.wait(it.ReadyAt, it.DequeuedAt)
	}
	p := o.b.pool.Load()
	if p != nil {
		p.sig.dequeued(d)
	}
	// The attempt carries a Work for the clients of package kubeclient to
	// add to, recorded at Done, and read by the adaptive pool there
	// (WithClientTime). Otherwise an attempt that is not sampled costs no
	// allocation; a sampled one's context holds a Work anyway.
	work := o.clientTime
	wait := d.Seconds()
	if !o.tracing {
		// Not in ctx: a span the worker's context carries must not become
		// an exemplar when tracing is off.
		o.recordWait(context.Background(), wait, it.Priority, it.Reason)
		if !work {
			return ctx
		}
		return &attemptContext{Context: ctx, clientTime: true}
	}

	rootCtx, root := o.startRoot(ctx, it)
	if !root.IsRecording() {
		// The sampler dropped the attempt: its trace is never exported, so
		// its durations are recorded with no span context (an exemplar
		// linking to it would lead nowhere, whatever the exemplar filter).
		o.recordWait(context.Background(), wait, it.Priority, it.Reason)
		if !work {
			return rootCtx
		}
		return &attemptContext{Context: rootCtx, clientTime: true}
	}

	reconcileCtx := o.startSpans(rootCtx, root, it, wait, standbyPart, activeAt)
	return &attemptContext{Context: reconcileCtx, root: root, clientTime: work}
}

// startRoot starts the attempt's root span, which decides sampling, once
// per attempt, before anything else is paid for: an unsampled attempt
// starts no other span. The option and link slices are recycled: the SDK
// copies what it keeps.
func (o *observer[K]) startRoot(ctx context.Context, it *scheduler.Item[K]) (context.Context, trace.Span) {
	b := startBufs.Get().(*startBuf)
	opts := append(b.opts[:0], trace.WithTimestamp(it.EnqueuedAt), spanKindConsumer)
	parent := ctx
	var parentSC trace.SpanContext
	switch {
	case o.parentMode && it.Origin.IsValid():
		parent = trace.ContextWithRemoteSpanContext(ctx, it.Origin)
		parentSC = it.Origin
	case trace.SpanContextFromContext(ctx).IsValid():
		opts = append(opts, trace.WithNewRoot())
	}
	links := o.links(it, b.links[:0])
	if o.linkSource != nil {
		// Before Start, so that the sampler sees the link.
		links = o.addLookupLink(ctx, it.Key, parentSC, links)
	}
	if len(links) > 0 {
		opts = append(opts, b.withLinks(links))
	}
	rootCtx, root := o.tracer.Start(parent, o.rootName, opts...)
	// Drop the references the buffers hold (only the slots used: clearing
	// the whole buffer costs write barriers for nothing).
	clear(b.opts[:min(len(opts), len(b.opts))])
	clear(b.links[:min(len(links), len(b.links))])
	startBufs.Put(b)
	return rootCtx, root
}

// startSpans gives a recorded attempt's root its attributes, records the
// wait in its "queued" span, and starts its "reconcile" span.
func (o *observer[K]) startSpans(rootCtx context.Context, root trace.Span, it *scheduler.Item[K], wait float64, standbyPart time.Duration, activeAt time.Time) context.Context {
	// One array (one allocation) holds the attempt's attributes: the root
	// carries all of them, "reconcile" those that identify the attempt and
	// why it ran, "queued" the wait reason.
	attrs := [8]attribute.KeyValue{
		semconv.AttrQueueName.String(o.queue),
		semconv.AttrKey.String(keyString(it.Key)),
		semconv.AttrAttempt.Int(it.Requeues + 1),
		semconv.AttrTrigger.String(it.Trigger.String()),
	}
	n := 4
	if it.Source != "" {
		attrs[n] = semconv.AttrTriggerSource.String(it.Source)
		n++
	}
	attrs[n] = semconv.AttrWaitReason.String(it.Reason.String())
	attrs[n+1] = semconv.AttrCoalesced.Int(it.Coalesced)
	ident, reason, all := attrs[:n], attrs[n:n+1], attrs[:n+2]
	if it.DroppedLinks > 0 {
		all = append(all, semconv.AttrDroppedLinks.Int(it.DroppedLinks))
	}
	root.SetAttributes(all...)

	queuedCtx, queued := o.tracer.Start(rootCtx, semconv.SpanQueued, trace.WithTimestamp(it.EnqueuedAt))
	queued.SetAttributes(reason...)
	if it.ReadyAt.After(it.EnqueuedAt) {
		queued.AddEvent(semconv.EventReady, trace.WithTimestamp(it.ReadyAt))
	}
	if standbyPart > 0 {
		queued.AddEvent(semconv.EventActive, trace.WithTimestamp(activeAt))
	}
	o.recordWait(queuedCtx, wait, it.Priority, it.Reason)
	queued.End(trace.WithTimestamp(it.DequeuedAt))

	reconcileCtx, reconcile := o.tracer.Start(rootCtx, semconv.SpanReconcile, trace.WithTimestamp(it.DequeuedAt))
	reconcile.SetAttributes(ident...)
	return reconcileCtx
}

// recordWait records the queue wait of a run of priority and reason: in
// the queue-wait histogram, by priority with WithWaitByPriority, and as
// lateness with WithLateness when it waited for a time.
func (o *observer[K]) recordWait(ctx context.Context, wait float64, priority int, reason scheduler.WaitReason) {
	o.queueDuration.Record(ctx, wait, o.record...)
	if w := o.waitByPriority; w != nil {
		w.hist.Record(ctx, wait, w.options(priority)...)
	}
	if o.lateness != nil && int(reason) < len(o.lateRecord) && o.lateRecord[reason] != nil {
		o.lateness.Record(ctx, wait, o.lateRecord[reason]...)
	}
}

// spanKindConsumer is the root's span kind option, made once: each
// trace.WithSpanKind call allocates.
var spanKindConsumer = trace.WithSpanKind(trace.SpanKindConsumer)

// startBuf holds the slices one root span start needs, and trace.WithLinks
// options made once over its links array (each WithLinks call allocates;
// the SDK copies the links at Start, so the array is free again after it).
type startBuf struct {
	opts      [4]trace.SpanStartOption
	links     [schedhooks.DefaultMaxLinks + 2]trace.Link            // enqueues, previous attempt, lookup
	linksOpts [schedhooks.DefaultMaxLinks + 3]trace.SpanStartOption // by count
}

var startBufs = sync.Pool{New: func() any {
	b := new(startBuf)
	for n := 1; n < len(b.linksOpts); n++ {
		b.linksOpts[n] = trace.WithLinks(b.links[:n]...)
	}
	return b
}}

// withLinks returns the option that passes links to Start: a prepared one
// when links is a prefix of b.links.
func (b *startBuf) withLinks(links []trace.Link) trace.SpanStartOption {
	if n := len(links); n < len(b.linksOpts) && &links[0] == &b.links[0] {
		return b.linksOpts[n]
	}
	return trace.WithLinks(links...) // more links than the buffer holds
}

// links appends to links (whose capacity it reuses when it suffices) the
// links of an attempt's root span: the enqueue contexts (unless one of them
// is the parent) and the previous attempt.
func (o *observer[K]) links(it *scheduler.Item[K], links []trace.Link) []trace.Link {
	if it.Origin.IsValid() && !o.parentMode {
		links = append(links, trace.Link{SpanContext: it.Origin, Attributes: linkEnqueue})
	}
	for _, sc := range it.Links {
		links = append(links, trace.Link{SpanContext: sc, Attributes: linkEnqueue})
	}
	if it.PreviousAttempt.IsValid() {
		links = append(links, trace.Link{SpanContext: it.PreviousAttempt, Attributes: linkPrevious})
	}
	return links
}

// Done ends the attempt's spans and records its work duration, with the
// attempt's span context for exemplars.
func (o *observer[K]) Done(ctx context.Context, _ K, started, ended time.Time) {
	a, _ := ctx.(*attemptContext)
	if p := o.b.pool.Load(); p != nil {
		// Before the spans end: a change this attempt's end decides is an
		// event of its "reconcile" span.
		var t clientwork.Totals
		if a != nil && a.clientTime {
			t = a.work.Totals()
		}
		p.sig.finished(ended.Sub(started), t.LimiterWait, t.RetryAfterWait, t.Used)
		var span trace.Span
		if a != nil && a.root != nil {
			span = trace.SpanFromContext(ctx)
		}
		p.evaluate(ended, span)
	}
	if a == nil || a.root == nil {
		// Tracing off, or an attempt the sampler dropped: no span context
		// in the records (see Dequeued).
		o.workDuration.Record(context.Background(), ended.Sub(started).Seconds(), o.record...)
		if a != nil && a.clientTime {
			o.client.record(context.Background(), &a.work, ended.Sub(started), o.record)
		}
		return
	}
	// The spans end first: whoever sees the attempt counted (Stats,
	// ClientStats) finds its spans ended. The records still carry the
	// span context for exemplars.
	endRoot(ctx, a.root, ended)
	o.workDuration.Record(ctx, ended.Sub(started).Seconds(), o.record...)
	if a.clientTime {
		o.client.record(ctx, &a.work, ended.Sub(started), o.record)
	}
}

// attemptContext is the context an attempt's processing runs in: the
// worker's context (with the "reconcile" span when the attempt is
// recorded), the attempt's root span, which Done ends, and where the
// attempt's time went in instrumented Kubernetes clients (package
// kubeclient), in one allocation.
type attemptContext struct {
	context.Context
	root trace.Span // nil: no span of this queue's to end
	// clientTime says whether the queue records work when the attempt ends
	// (WithClientTime). A sampled attempt carries work
	// without it, at no cost, for kubeclient's "retry after" spans.
	clientTime bool
	work       clientwork.Work
}

// Value answers the attempt's own keys and delegates the others. A nil root
// hides the root of any attempt the worker's context belongs to (a queue
// processed inside another queue's reconcile): it is not this one's to end.
func (c *attemptContext) Value(k any) any {
	switch {
	case k == any(rootKey{}):
		if c.root == nil {
			return nil
		}
		return c.root
	case clientwork.IsKey(k):
		return &c.work
	}
	return c.Context.Value(k)
}

// keyString renders a key for the span attribute, the logs and the
// inspector. A key whose String panics (a nil pointer's method, a bug of
// the key type) is rendered as fmt does it, with the panic: observing a
// key never panics a worker or a page.
func keyString[K comparable](key K) (s string) {
	switch k := any(key).(type) {
	case string:
		return k
	case fmt.Stringer:
		defer func() {
			if p := recover(); p != nil {
				s = fmt.Sprintf("%T (its String panicked: %v)", key, p)
			}
		}()
		return k.String()
	default:
		return fmt.Sprint(key)
	}
}
