package kubeclient

import (
	"context"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/otelqueue/otelqueue/internal/clientwork"
)

// limiter is the client-side rate limiter of an instrumented config: the
// config's own (nil: no limit) with its waits measured. client-go calls
// Wait with the request's context before every try of a request, retries
// included.
type limiter struct {
	base   flowcontrol.RateLimiter // nil: requests are not limited
	tracer trace.Tracer
	wait   metric.Float64Histogram
}

var _ flowcontrol.RateLimiter = (*limiter)(nil)

// Wait takes a token, waiting for one until ctx is done, and records the
// wait: in the metric, in the attempt ctx belongs to, and as a span when it
// lasted waitSpanThreshold or more under a span.
func (l *limiter) Wait(ctx context.Context) error {
	start := time.Now()
	w := clientwork.FromContext(ctx)
	if w != nil {
		if since := w.Begin(start); !since.IsZero() {
			l.span(ctx, semconv.SpanRetryAfter, since, start)
		}
	}
	if l.base == nil {
		return nil
	}
	err := l.base.Wait(ctx)
	end := time.Now()
	d := end.Sub(start)
	if w != nil {
		w.LimiterWaited(d)
	}
	l.wait.Record(ctx, d.Seconds())
	if d >= waitSpanThreshold {
		l.span(ctx, semconv.SpanRateLimiter, start, end)
	}
	return err
}

// span records [start, end] as a span named name under the span ctx
// carries, if it is recording.
func (l *limiter) span(ctx context.Context, name string, start, end time.Time) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	_, s := l.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal))
	s.End(trace.WithTimestamp(end))
}

// Accept takes a token, waiting as long as it takes. client-go's requests
// call Wait; Accept has no context to attribute the wait to.
func (l *limiter) Accept() {
	if l.base == nil {
		return
	}
	start := time.Now()
	l.base.Accept()
	l.wait.Record(context.Background(), time.Since(start).Seconds())
}

// TryAccept takes a token if one is available now.
func (l *limiter) TryAccept() bool { return l.base == nil || l.base.TryAccept() }

// QPS returns the limiter's rate, 0 without a limit.
func (l *limiter) QPS() float32 {
	if l.base == nil {
		return 0
	}
	return l.base.QPS()
}

// Stop stops the limiter.
func (l *limiter) Stop() {
	if l.base != nil {
		l.base.Stop()
	}
}
