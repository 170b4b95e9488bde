package otelqueue_test

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/util/workqueue"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// exampleLogger writes text lines without the time, and with the trace and
// span ids shown as placeholders, so that the output is reproducible.
func exampleLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Attr{}
			case semconv.LogTraceID, semconv.LogSpanID:
				return slog.String(a.Key, "<"+a.Key+">")
			}
			return a
		},
	}))
}

// A Runner reports failed reconciles to its logger as controller-runtime
// does ("Reconciler error"), rate-limited, with the attempt's trace_id and
// span_id; the reconciler's own lines, through LoggerFromContext, carry
// them too, so that every line leads to its trace.
func ExampleLoggerFromContext() {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	// The failed key's retry is a minute away: the example ends before it.
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Minute, time.Minute)})
	inst, err := otelqueue.Instrument(queue, otelqueue.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()

	failed := make(chan struct{})
	runner, err := otelqueue.NewRunner(queue, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
		otelqueue.LoggerFromContext(ctx).Info("scaling", "key", key)
		close(failed)
		return otelqueue.Result{}, errors.New("quota exceeded")
	},
		otelqueue.WithLogger(exampleLogger()),
		otelqueue.WithLogRateLimit(otelqueue.DefaultLogBurst, time.Second), // the default: 10 lines, then 1 a second
	)
	if err != nil {
		log.Fatal(err)
	}
	queue.Add("default/web")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- runner.Run(ctx) }()
	<-failed
	for runner.Stats().Count(otelqueue.OutcomeError) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// level=INFO msg=scaling trace_id=<trace_id> span_id=<span_id> trace_sampled=true key=default/web
	// level=ERROR msg="Reconciler error" queue=deployments key=default/web error="quota exceeded" trace_id=<trace_id> span_id=<span_id> trace_sampled=true
}
