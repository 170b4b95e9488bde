package controllerruntime

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

// ContextAdder is the part of a queue that keeps the caller's span context,
// and a priority, with keys. *[Queue] and *scheduler.Scheduler have it.
type ContextAdder[request comparable] interface {
	AddWithOptions(ctx context.Context, opts scheduler.AddOptions, keys ...request)
}

// EnqueueRequestForObject returns controller-runtime's
// handler.EnqueueRequestForObject with trace context: every event enqueues
// the object's namespace and name, as controller-runtime's does, through
// the queue's AddWithOptions with the handler's ctx and, when the object has
// a valid otelqueue.github.io/traceparent annotation, that span context (read by
// an traceparent.Reader built with opts, so by default a link
// only, its sampled flag cleared). The reconcile trace then links to the
// writer of the object.
//
// Priorities are controller-runtime's: a create from the informer's initial
// list, and an update that does not change the resource version (a
// resync), are enqueued at handler.LowPriority, every other event at
// priority 0. So the handler needs no handler.WithLowPriorityWhenUnchanged;
// wrapped in it, it would see the wrapper instead of the queue and lose the
// trace context.
//
// Queues without AddWithOptions (any queue not built by this package, or one
// hidden by a wrapper) get controller-runtime's calls: AddWithOpts with the
// same priority on a priorityqueue.PriorityQueue, Add on others. The
// request is enqueued, without the link.
func EnqueueRequestForObject(opts ...traceparent.ReaderOption) handler.EventHandler {
	return TypedEnqueueRequestForObject[client.Object](opts...)
}

// TypedEnqueueRequestForObject is EnqueueRequestForObject for typed sources
// (source.Kind with a concrete object type).
func TypedEnqueueRequestForObject[object client.Object](opts ...traceparent.ReaderOption) handler.TypedEventHandler[object, reconcile.Request] {
	return &enqueueForObject[object]{reader: traceparent.NewReader(opts...)}
}

type enqueueForObject[object client.Object] struct {
	reader *traceparent.Reader
}

func (e *enqueueForObject[object]) Create(ctx context.Context, evt event.TypedCreateEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.add(ctx, evt.Object, evt.IsInInitialList, createTrigger(evt.IsInInitialList), q)
}

func (e *enqueueForObject[object]) Update(ctx context.Context, evt event.TypedUpdateEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	switch {
	case !isNil(evt.ObjectNew):
		trigger := updateTrigger(evt.ObjectOld, evt.ObjectNew)
		e.add(ctx, evt.ObjectNew, trigger == scheduler.TriggerResync, trigger, q)
	default:
		e.add(ctx, evt.ObjectOld, false, scheduler.TriggerUpdate, q)
	}
}

func (e *enqueueForObject[object]) Delete(ctx context.Context, evt event.TypedDeleteEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.add(ctx, evt.Object, false, scheduler.TriggerDelete, q)
}

func (e *enqueueForObject[object]) Generic(ctx context.Context, evt event.TypedGenericEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.add(ctx, evt.Object, false, scheduler.TriggerGeneric, q)
}

// add enqueues obj's request for trigger, at handler.LowPriority when low.
func (e *enqueueForObject[object]) add(ctx context.Context, obj object, low bool, trigger scheduler.Trigger, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if isNil(obj) {
		// controller-runtime logs and drops such events; so do we.
		return
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	switch q := q.(type) {
	case ContextAdder[reconcile.Request]:
		if ctx == nil {
			ctx = context.Background()
		}
		opts := scheduler.AddOptions{Trigger: trigger, Source: kindOf(obj)}
		if low {
			opts.Priority = handler.LowPriority
		}
		q.AddWithOptions(e.reader.ContextWith(ctx, obj), opts, req)
	case priorityqueue.PriorityQueue[reconcile.Request]:
		var opts priorityqueue.AddOpts
		if low {
			opts.Priority = ptr.To(handler.LowPriority)
		}
		q.AddWithOpts(opts, req)
	default:
		q.Add(req)
	}
}

// kindOf is the kind of obj, for scheduler.AddOptions.Source: its
// GroupVersionKind's when set (unstructured and metadata-only objects), else
// the name of its Go type (ConfigMap for a *corev1.ConfigMap: the objects of
// a typed cache carry no TypeMeta). A watch has one kind, so the values are
// as many as the controller's watches.
func kindOf(obj client.Object) string {
	if isNil(obj) {
		return ""
	}
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
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
