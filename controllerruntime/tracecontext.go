package controllerruntime

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

// WithTraceContext wraps any controller-runtime event handler, such as
// handler.EnqueueRequestForOwner or handler.EnqueueRequestsFromMapFunc, so
// that the requests it enqueues into a [Queue] carry the event's ctx and,
// when the event's object has a valid otelqueue.github.io/traceparent
// annotation, that span context (read by an traceparent.Reader
// built with opts: by default a link only). The handler keeps its own
// logic: the requests it computes and the priorities it gives them
// (controller-runtime's handlers deprioritise the initial list and
// resyncs). For an update, the new object's annotation is read.
//
// The handler sees a view of the queue whose adds are the queue's
// context-aware ones; a queue not built by this package is passed through
// unchanged, and its requests carry no link. The annotation is read at the
// handler's first add, not for events that enqueue nothing.
//
// WithTraceContext must be the outermost wrapper: wrapped in
// handler.WithLowPriorityWhenUnchanged, it would be handed that wrapper's
// view instead of the queue and pass it through without the link. (Wrapping
// it the other way round, WithTraceContext(WithLowPriorityWhenUnchanged(h)),
// keeps both.)
//
//	Watches(&corev1.Secret{}, controllerruntime.WithTraceContext(
//		handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &corev1.ConfigMap{}, handler.OnlyControllerOwner())))
//
// A nil h is reported through otel.Handle; its events enqueue nothing.
func WithTraceContext[object client.Object, request comparable](h handler.TypedEventHandler[object, request], opts ...traceparent.ReaderOption) handler.TypedEventHandler[object, request] {
	if isNil(h) {
		otel.Handle(errors.New("otelqueue/controllerruntime: WithTraceContext needs the handler it wraps, got nil; its events enqueue nothing"))
		h = handler.TypedFuncs[object, request]{}
	}
	return &withTraceContext[object, request]{h: h, reader: traceparent.NewReader(opts...)}
}

type withTraceContext[object client.Object, request comparable] struct {
	h      handler.TypedEventHandler[object, request]
	reader *traceparent.Reader
}

func (w *withTraceContext[object, request]) Create(ctx context.Context, evt event.TypedCreateEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	w.h.Create(ctx, evt, w.queue(ctx, evt.Object, createTrigger(evt.IsInInitialList), q))
}

func (w *withTraceContext[object, request]) Update(ctx context.Context, evt event.TypedUpdateEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	obj := evt.ObjectNew
	if isNil(obj) {
		obj = evt.ObjectOld
	}
	w.h.Update(ctx, evt, w.queue(ctx, obj, updateTrigger(evt.ObjectOld, evt.ObjectNew), q))
}

func (w *withTraceContext[object, request]) Delete(ctx context.Context, evt event.TypedDeleteEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	w.h.Delete(ctx, evt, w.queue(ctx, evt.Object, scheduler.TriggerDelete, q))
}

func (w *withTraceContext[object, request]) Generic(ctx context.Context, evt event.TypedGenericEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	w.h.Generic(ctx, evt, w.queue(ctx, evt.Object, scheduler.TriggerGeneric, q))
}

// queue returns the view of q the handler adds through: q's context-aware
// adds with ctx, obj's span context and the event's trigger, when q has
// them.
func (w *withTraceContext[object, request]) queue(ctx context.Context, obj object, trigger scheduler.Trigger, q workqueue.TypedRateLimitingInterface[request]) workqueue.TypedRateLimitingInterface[request] {
	cq, ok := q.(contextQueue[request])
	if !ok {
		return q
	}
	if ctx == nil {
		ctx = context.Background()
	}
	v := &contextView[request]{contextQueue: cq, ctx: ctx, trigger: trigger, source: kindOf(obj)}
	if !isNil(obj) {
		v.reader, v.obj = w.reader, obj
	}
	return v
}

// contextQueue is what WithTraceContext needs of a queue: *[Queue] has it.
type contextQueue[request comparable] interface {
	priorityqueue.PriorityQueue[request]
	AddContext(ctx context.Context, item request)
	AddAfterContext(ctx context.Context, item request, delay time.Duration)
	AddRateLimitedContext(ctx context.Context, item request)
	AddWithOptsContext(ctx context.Context, o priorityqueue.AddOpts, items ...request)
	ContextAdder[request]
}

// contextView is a queue whose adds keep the event's ctx and the span
// context of obj's annotation (read once, at the first add); every other
// method is the queue's. It is a priorityqueue.PriorityQueue, so
// controller-runtime's handlers give it priorities, and a ContextAdder, so
// that an otelqueue handler inside keeps its own reader and ctx.
type contextView[request comparable] struct {
	contextQueue[request]
	once   sync.Once // reads the annotation, even for adds from several goroutines
	ctx    context.Context
	reader *traceparent.Reader // nil without an object
	obj    client.Object
	// trigger is the event's (scheduler.Trigger), for the adds that are
	// not retries; source the kind of its object (kindOf).
	trigger scheduler.Trigger
	source  string
}

// context returns the ctx adds keep, reading the annotation the first time.
func (v *contextView[request]) context() context.Context {
	v.once.Do(v.read)
	return v.ctx
}

func (v *contextView[request]) read() {
	if v.reader != nil {
		v.ctx = v.reader.ContextWith(v.ctx, v.obj)
		v.reader, v.obj = nil, nil
	}
}

func (v *contextView[request]) Add(item request) {
	v.AddWithOptions(v.context(), scheduler.AddOptions{Trigger: v.trigger, Source: v.source}, item)
}

func (v *contextView[request]) AddAfter(item request, delay time.Duration) {
	if delay <= 0 {
		// AddAfter's add at once, counted as a retry as the queue's is.
		v.AddAfterContext(v.context(), item, delay)
		return
	}
	v.AddWithOptions(v.context(), scheduler.AddOptions{After: delay, Trigger: v.trigger, Source: v.source}, item)
}

func (v *contextView[request]) AddRateLimited(item request) {
	v.AddRateLimitedContext(v.context(), item)
}

func (v *contextView[request]) AddWithOpts(o priorityqueue.AddOpts, items ...request) {
	opts := scheduler.AddOptions{After: o.After, RateLimited: o.RateLimited, Trigger: v.trigger, Source: v.source}
	if o.Priority != nil {
		opts.Priority = *o.Priority
	}
	v.AddWithOptions(v.context(), opts, items...)
}

// createTrigger is the trigger of a create event: the informer's initial
// list, or an object created.
func createTrigger(initialList bool) scheduler.Trigger {
	if initialList {
		return scheduler.TriggerInitialList
	}
	return scheduler.TriggerCreate
}

// updateTrigger is the trigger of an update event: a resync when the
// resource version did not change (as controller-runtime's
// WithLowPriorityWhenUnchanged reads it), else an update.
func updateTrigger(old, cur client.Object) scheduler.Trigger {
	if !isNil(old) && !isNil(cur) && old.GetResourceVersion() == cur.GetResourceVersion() {
		return scheduler.TriggerResync
	}
	return scheduler.TriggerUpdate
}
