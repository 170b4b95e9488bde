package controllerruntime

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Queue is an instrumented [scheduler.Scheduler] that controller-runtime
// takes as its own priority queue (see the package documentation). Every
// method of the scheduler, the context-aware ones included, is available on
// it. It is built with scheduler.Config.StopOnShutDown, as
// controller-runtime's priority queue: once shut down it hands out nothing
// more, so a stopping controller does not reconcile what is left with a
// cancelled ctx.
type Queue[request comparable] struct {
	*scheduler.Scheduler[request]
	inst *otelqueue.Instrumentation
}

var _ priorityqueue.PriorityQueue[reconcile.Request] = (*Queue[reconcile.Request])(nil)

// NewQueue returns a function for controller.Options.NewQueue that builds,
// for each controller, a [Queue] named after the controller with the
// controller's rate limiter, instrumented with otelqueue.Instrument(q,
// opts...). If the instrumentation cannot be installed (an invalid option),
// the error goes to otel.Handle and the queue works uninstrumented.
//
// Use [New] instead to also wrap the reconciler, so that its spans are
// children of the "reconcile" span.
func NewQueue(opts ...otelqueue.Option) func(controllerName string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return NewTypedQueue[reconcile.Request](opts...)
}

// NewTypedQueue is NewQueue for typed controllers
// (controller.TypedOptions[request].NewQueue).
func NewTypedQueue[request comparable](opts ...otelqueue.Option) func(controllerName string, rl workqueue.TypedRateLimiter[request]) workqueue.TypedRateLimitingInterface[request] {
	return func(controllerName string, rl workqueue.TypedRateLimiter[request]) workqueue.TypedRateLimitingInterface[request] {
		return newQueue(controllerName, rl, opts)
	}
}

func newQueue[request comparable](name string, rl workqueue.TypedRateLimiter[request], opts []otelqueue.Option) *Queue[request] {
	q := &Queue[request]{Scheduler: scheduler.New(scheduler.Config[request]{Name: name, RateLimiter: rl, StopOnShutDown: true, OrderByAdd: true})}
	inst, err := otelqueue.Instrument(q.Scheduler, opts...)
	if err != nil {
		otel.Handle(fmt.Errorf("otelqueue/controllerruntime: queue %q works uninstrumented: %w", name, err))
		return q
	}
	q.inst = inst
	return q
}

// Instrumentation returns the queue's instrumentation, nil when it could not
// be installed. Stopping it after the controller stopped releases the
// queue's metric callback (controller-runtime builds a queue per start).
func (q *Queue[request]) Instrumentation() *otelqueue.Instrumentation { return q.inst }

// AddWithOpts implements priorityqueue.PriorityQueue with
// controller-runtime's semantics: After delays the keys, RateLimited delays
// them by the rate limiter (the shorter delay wins when both are set), and
// Priority orders ready keys, highest first; a pending key keeps the highest
// priority it was added with. The keys carry no span context: use
// AddWithOptsContext for that.
func (q *Queue[request]) AddWithOpts(o priorityqueue.AddOpts, items ...request) {
	q.AddWithOptsContext(context.Background(), o, items...)
}

// AddWithOptsContext is AddWithOpts that keeps the span context of ctx with
// the keys, as scheduler.Scheduler.AddContext does.
func (q *Queue[request]) AddWithOptsContext(ctx context.Context, o priorityqueue.AddOpts, items ...request) {
	opts := scheduler.AddOptions{After: o.After, RateLimited: o.RateLimited}
	if o.Priority != nil {
		opts.Priority = *o.Priority
	}
	q.AddWithOptions(ctx, opts, items...)
}
