package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// Controller is otelqueue's side of one controller-runtime controller: its
// NewQueue method goes into the controller's Options.NewQueue, and its
// Reconciler method wraps the controller's reconciler. The queue is built by
// controller-runtime when the controller starts; the wrapped reconciler
// finds it through the Controller, so the user never handles it.
//
// Use one Controller per controller-runtime controller: a Controller keeps
// the last queue built by its NewQueue.
type Controller[request comparable] struct {
	opts  []otelqueue.Option
	queue atomic.Pointer[Queue[request]]
}

// New returns a Controller for a controller of reconcile.Request whose
// queue is instrumented with opts (the global OpenTelemetry providers by
// default).
func New(opts ...otelqueue.Option) *Controller[reconcile.Request] {
	return NewTyped[reconcile.Request](opts...)
}

// NewTyped is New for typed controllers.
func NewTyped[request comparable](opts ...otelqueue.Option) *Controller[request] {
	return &Controller[request]{opts: opts}
}

// NewQueue is the controller's Options.NewQueue: it builds the [Queue] as the
// package-level [NewQueue] does and remembers it for the wrapped
// reconciler. Called again for another controller, it reports the misuse to
// otel.Handle and the wrapped reconciler follows the new queue.
func (c *Controller[request]) NewQueue(controllerName string, rl workqueue.TypedRateLimiter[request]) workqueue.TypedRateLimitingInterface[request] {
	q := newQueue(controllerName, rl, c.opts)
	if old := c.queue.Swap(q); old != nil && old.Name() != controllerName {
		otel.Handle(fmt.Errorf("otelqueue/controllerruntime: one Controller used for controllers %q and %q: use one Controller per controller", old.Name(), controllerName))
	}
	return q
}

// Queue returns the queue last built by NewQueue, or nil before the
// controller started.
func (c *Controller[request]) Queue() *Queue[request] { return c.queue.Load() }

// Reconciler wraps r so that it runs in the trace of the attempt: its ctx is
// the controller's (logger, reconcileID, cancellation and deadline kept)
// carrying the attempt's "reconcile" span, so the spans r starts are its
// children. The wrapper sets the span's "result" attribute and, on error or
// panic, its status; a panic is re-panicked for controller-runtime to
// handle. Before the queue exists, or for a request the queue is not
// processing (r called directly, in a test), r runs with ctx unchanged.
func (c *Controller[request]) Reconciler(r reconcile.TypedReconciler[request]) reconcile.TypedReconciler[request] {
	return &tracedReconciler[request]{c: c, r: r}
}

type tracedReconciler[request comparable] struct {
	c *Controller[request]
	r reconcile.TypedReconciler[request]
}

var (
	resultSuccess      = otelqueue.AttrResult.String(otelqueue.ResultSuccess)
	resultError        = otelqueue.AttrResult.String(otelqueue.ResultError)
	resultRequeue      = otelqueue.AttrResult.String(otelqueue.ResultRequeue)
	resultRequeueAfter = otelqueue.AttrResult.String(otelqueue.ResultRequeueAfter)
	resultPanic        = otelqueue.AttrResult.String(otelqueue.ResultPanic)
)

func (t *tracedReconciler[request]) Reconcile(ctx context.Context, req request) (res reconcile.Result, err error) {
	q := t.c.queue.Load()
	if q == nil {
		return t.r.Reconcile(ctx, req)
	}
	pctx, ok := q.ProcessingContext(req)
	if !ok {
		return t.r.Reconcile(ctx, req)
	}
	span := trace.SpanFromContext(pctx)
	ctx = trace.ContextWithSpan(ctx, span)
	if !span.IsRecording() {
		return t.r.Reconcile(ctx, req)
	}

	panicked := true
	defer func() {
		if panicked {
			p := recover()
			perr := fmt.Errorf("panic: %v", p)
			span.RecordError(perr, trace.WithAttributes(attribute.String("exception.stacktrace", string(debug.Stack()))))
			span.SetStatus(codes.Error, perr.Error())
			span.SetAttributes(resultPanic)
			panic(p)
		}
		switch {
		case err != nil:
			span.SetAttributes(resultError)
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			if errors.Is(err, reconcile.TerminalError(nil)) {
				span.SetAttributes(attribute.Bool("reconcile.terminal", true))
			}
		case res.RequeueAfter > 0:
			span.SetAttributes(resultRequeueAfter)
		//lint:ignore SA1019 controller-runtime still honours Requeue
		case res.Requeue:
			span.SetAttributes(resultRequeue)
		default:
			span.SetAttributes(resultSuccess)
		}
	}()
	res, err = t.r.Reconcile(ctx, req)
	panicked = false
	return res, err
}
