package controllerruntime

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// ContextAdder is the part of a queue that keeps the caller's span context
// with a key. *[Queue] and *scheduler.Scheduler have it.
type ContextAdder[request comparable] interface {
	AddContext(ctx context.Context, item request)
}

// EnqueueRequestForObject returns controller-runtime's
// handler.EnqueueRequestForObject with trace context: every event enqueues
// the object's namespace and name, as controller-runtime's does, through
// the queue's AddContext with the handler's ctx and, when the object has a
// valid tracing.k8s.io/traceparent annotation, that span context (read by
// an otelqueue.TraceparentReader built with opts, so by default a link
// only, its sampled flag cleared). The reconcile trace then links to the
// writer of the object.
//
// Queues without AddContext (any queue not built by this package's
// NewQueue, or one hidden by a wrapper such as
// handler.WithLowPriorityWhenUnchanged) get a plain Add: the request is
// enqueued, without the link.
func EnqueueRequestForObject(opts ...otelqueue.ReaderOption) handler.EventHandler {
	return TypedEnqueueRequestForObject[client.Object](opts...)
}

// TypedEnqueueRequestForObject is EnqueueRequestForObject for typed sources
// (source.Kind with a concrete object type).
func TypedEnqueueRequestForObject[object client.Object](opts ...otelqueue.ReaderOption) handler.TypedEventHandler[object, reconcile.Request] {
	return &enqueueForObject[object]{reader: otelqueue.NewTraceparentReader(opts...)}
}

type enqueueForObject[object client.Object] struct {
	reader *otelqueue.TraceparentReader
}

func (e *enqueueForObject[object]) Create(ctx context.Context, evt event.TypedCreateEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.add(ctx, evt.Object, q)
}

func (e *enqueueForObject[object]) Update(ctx context.Context, evt event.TypedUpdateEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if !isNil(evt.ObjectNew) {
		e.add(ctx, evt.ObjectNew, q)
		return
	}
	e.add(ctx, evt.ObjectOld, q)
}

func (e *enqueueForObject[object]) Delete(ctx context.Context, evt event.TypedDeleteEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.add(ctx, evt.Object, q)
}

func (e *enqueueForObject[object]) Generic(ctx context.Context, evt event.TypedGenericEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.add(ctx, evt.Object, q)
}

func (e *enqueueForObject[object]) add(ctx context.Context, obj object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if isNil(obj) {
		// controller-runtime logs and drops such events; so do we.
		return
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	if a, ok := q.(ContextAdder[reconcile.Request]); ok {
		if ctx == nil {
			ctx = context.Background()
		}
		a.AddContext(e.reader.ContextWith(ctx, obj), req)
		return
	}
	q.Add(req)
}

// isNil reports whether obj is a nil interface or a typed nil pointer, as
// controller-runtime's handlers check.
func isNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}
