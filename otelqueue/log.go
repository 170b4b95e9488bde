package otelqueue

import (
	"context"
	"log/slog"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/trace"
)

// Defaults of WithLogRateLimit: the first 10 errors, then one a second.
const (
	DefaultLogBurst    = 10
	DefaultLogInterval = time.Second
)

// loggerKey is the context key of the Runner's logger, for LoggerFromContext.
type loggerKey struct{}

// LoggerFromContext returns the logger for code running in ctx, such as a
// reconciler under a Runner: the Runner's logger (WithLogger; slog.Default()
// when none is set or ctx is not a Runner's) with the trace_id and span_id
// of the span ctx carries, when it carries a valid one. Under a Runner that
// is the attempt's "reconcile" span, so every line the reconciler logs
// leads to the attempt's trace.
func LoggerFromContext(ctx context.Context) *slog.Logger {
	l := slog.Default()
	if ctx == nil {
		return l
	}
	if v, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && v != nil {
		l = v
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		l = l.With(slog.String(semconv.LogTraceID, sc.TraceID().String()), slog.String(semconv.LogSpanID, sc.SpanID().String()), slog.Bool(semconv.LogTraceSampled, sc.IsSampled()))
	}
	return l
}

// logError reports a failed reconcile as controller-runtime does: an error
// line "Reconciler error" with the queue, the key and the error, and here
// the attempt's trace_id and span_id; rate-limited.
func (r *Runner[K]) logError(ctx context.Context, key K, err error, stack []byte) {
	ok, suppressed := r.limiter.Allow()
	if !ok {
		return
	}
	l := r.logger
	if l == nil {
		l = slog.Default()
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("queue", r.queue.Name()),
		slog.String("key", keyString(key)),
		slog.Any("error", err))
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		attrs = append(attrs, slog.String(semconv.LogTraceID, sc.TraceID().String()), slog.String(semconv.LogSpanID, sc.SpanID().String()), slog.Bool(semconv.LogTraceSampled, sc.IsSampled()))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int(semconv.LogSuppressed, suppressed))
	}
	if stack != nil {
		attrs = append(attrs, slog.String("stacktrace", string(stack)))
	}
	l.LogAttrs(ctx, slog.LevelError, "Reconciler error", attrs...)
}
