package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
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
	opts    []otelqueue.Option
	queue   atomic.Pointer[Queue[request]]
	workers atomic.Int64 // set by Options; 0 when unknown
	// elected is the manager's Elected channel, set by Options for a
	// controller that needs leader election: its queue is standby until it
	// is closed.
	elected atomic.Pointer[<-chan struct{}]
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
	opts := c.opts
	if n := c.workers.Load(); n > 0 {
		opts = append(slices.Clip(opts), otelqueue.WithWorkers(int(n)))
	}
	if e := c.elected.Load(); e != nil {
		// First, so that a WithStandby of the user's wins.
		opts = append([]otelqueue.Option{otelqueue.WithStandby(*e)}, opts...)
	}
	q := newQueue(controllerName, rl, opts)
	if old := c.queue.Swap(q); old != nil && old.Name() != controllerName {
		otel.Handle(fmt.Errorf("otelqueue/controllerruntime: one Controller used for controllers %q and %q: use one Controller per controller", old.Name(), controllerName))
	}
	return q
}

// Options returns o with NewQueue set to c.NewQueue, and tells c the
// controller's worker count, so that the queue reports it as
// `workqueue.workers` (workqueue_workers, equal to controller-runtime's
// controller_runtime_max_concurrent_reconciles) beside its active workers.
// The count is the one controller-runtime uses: o.MaxConcurrentReconciles,
// else the manager's default (config.Controller.MaxConcurrentReconciles,
// read from mgr when mgr is not nil), else 1. o itself is returned unchanged
// but for NewQueue, so controller-runtime resolves its defaults as always.
// The builder's GroupKindConcurrency, which applies only when
// o.MaxConcurrentReconciles is 0, is not seen: set MaxConcurrentReconciles
// when you use it.
//
// With mgr, a controller that needs leader election (o.NeedLeaderElection,
// else the manager's default, else true) gets a queue instrumented
// otelqueue.WithStandby(mgr.Elected()): standby until the manager leads
// (at once without leader election), so that a warm standby
// (EnableWarmup), which fills its queue before it leads, reports its keys'
// wait for a worker from the election, and no class or alert while it
// waits.
//
//	builder.ControllerManagedBy(mgr).
//		WithOptions(otq.Options(mgr, controller.Options{MaxConcurrentReconciles: 4}))
func (c *Controller[request]) Options(mgr manager.Manager, o controller.TypedOptions[request]) controller.TypedOptions[request] {
	n := o.MaxConcurrentReconciles
	if n <= 0 && mgr != nil {
		n = mgr.GetControllerOptions().MaxConcurrentReconciles
	}
	if n <= 0 {
		n = 1
	}
	c.workers.Store(int64(n))
	if mgr != nil && needLeaderElection(o.NeedLeaderElection, mgr.GetControllerOptions().NeedLeaderElection) {
		elected := mgr.Elected()
		c.elected.Store(&elected)
	}
	o.NewQueue = c.NewQueue
	return o
}

// needLeaderElection resolves a controller's NeedLeaderElection as
// controller-runtime does: the controller's option, else the manager's
// default, else true.
func needLeaderElection(controller, manager *bool) bool {
	switch {
	case controller != nil:
		return *controller
	case manager != nil:
		return *manager
	}
	return true
}

// Queue returns the queue last built by NewQueue, or nil before the
// controller started.
func (c *Controller[request]) Queue() *Queue[request] { return c.queue.Load() }

// Reconciler wraps r so that it runs in the trace of the attempt: its ctx is
// the controller's (logger, reconcileID, cancellation and deadline kept)
// carrying the attempt's "reconcile" span, so the spans r starts are its
// children, and its logger (logf.FromContext) has the span's trace_id and
// span_id, so r's log lines lead to the trace; the span has the attempt's
// reconcileID (the span attribute reconcile.id), which controller-runtime's own log lines
// carry. The wrapper records the
// result on the span as the otelqueue Runner does (otelqueue.Classify and
// otelqueue.RecordOutcome); a panic is re-panicked for controller-runtime to
// handle, and a runtime.Goexit is recorded as a panic and left to go on.
// Before the queue exists, or for a request the queue is not processing (r
// called directly, in a test), r runs with ctx unchanged.
func (c *Controller[request]) Reconciler(r reconcile.TypedReconciler[request]) reconcile.TypedReconciler[request] {
	return &tracedReconciler[request]{c: c, r: r}
}

// attrReconcileID is the attribute of the "reconcile" span that holds
// controller-runtime's reconcileID of the attempt, which its log lines
// (such as "Reconciler error") carry: search for it to go from such a line
// to the trace.
const attrReconcileID = attribute.Key("reconcile.id")

// The keys of a reconciler's log lines that lead to the attempt's trace:
// those of otelqueue's Runner (semconv/registry.yaml's registry.log; a test
// holds them equal).
const (
	logTraceID      = "trace_id"
	logSpanID       = "span_id"
	logTraceSampled = "trace_sampled"
)

type tracedReconciler[request comparable] struct {
	c *Controller[request]
	r reconcile.TypedReconciler[request]
}

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
	// The attempt's span, and the requests of clients instrumented by
	// package kubeclient counted for the attempt (workqueue.client.*) when
	// its queue records them (otelqueue.WithClientTime given to New).
	ctx = otelqueue.ContextWithAttempt(ctx, pctx)
	if sc := span.SpanContext(); sc.IsValid() {
		// The reconciler's log lines lead to the attempt's trace.
		ctx = logf.IntoContext(ctx, logf.FromContext(ctx).WithValues(
			logTraceID, sc.TraceID().String(), logSpanID, sc.SpanID().String(),
			logTraceSampled, sc.IsSampled()))
	}
	recording := span.IsRecording()
	if id := controller.ReconcileIDFromContext(ctx); id != "" && recording {
		// controller-runtime's own log lines ("Reconciler error") carry it.
		span.SetAttributes(attrReconcileID.String(string(id)))
	}

	// The outcome on the attempt's span, and a failure in the queue's list
	// of its last ones (otelqueue.Inspector), sampled or not.
	inst := q.Instrumentation()
	panicked := true
	defer func() {
		if panicked {
			p := recover()
			perr := otelqueue.NewPanicError(p, debug.Stack())
			otelqueue.RecordOutcome(span, otelqueue.OutcomePanic, perr)
			inst.RecordFailure(pctx, fmt.Sprint(req), perr)
			if p != nil {
				panic(p) // for controller-runtime to handle; a runtime.Goexit goes on by itself
			}
			return
		}
		if err != nil {
			inst.RecordFailure(pctx, fmt.Sprint(req), err)
		}
		if !recording {
			return
		}
		//lint:ignore SA1019 controller-runtime still honours Result.Requeue
		otelqueue.RecordOutcome(span, otelqueue.Classify(otelqueue.Result{Requeue: res.Requeue, RequeueAfter: res.RequeueAfter}, err), err)
		if err != nil && errors.Is(err, reconcile.TerminalError(nil)) {
			span.SetAttributes(attribute.Bool("reconcile.terminal", true))
		}
	}()
	res, err = t.r.Reconcile(ctx, req)
	panicked = false
	return res, err
}
