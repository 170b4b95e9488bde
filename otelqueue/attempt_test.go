package otelqueue_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/otelqueue"
)

type ctxKey struct{}

// TestContextWithAttempt: an adapter's ctx, given the attempt's context of
// a key in flight, carries the attempt's span and its client accounting,
// and keeps its own values and cancellation; nil contexts are harmless.
func TestContextWithAttempt(t *testing.T) {
	e := newEnv(t, envConfig{opts: []otelqueue.Option{otelqueue.WithClientTime()}})
	e.q.Add("a")
	e.getKey(t, "a")
	attempt, ok := e.q.ProcessingContext("a")
	if !ok {
		t.Fatal("no processing context for a key in flight")
	}
	own, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "own"))
	ctx := otelqueue.ContextWithAttempt(own, attempt)
	if got, want := trace.SpanContextFromContext(ctx), trace.SpanContextFromContext(attempt); !want.IsValid() || !got.Equal(want) {
		t.Errorf("span %v, want the attempt's %v", got, want)
	}
	if w := clientwork.FromContext(ctx); w == nil || w != clientwork.FromContext(attempt) {
		t.Errorf("client work %p, want the attempt's %p", w, clientwork.FromContext(attempt))
	}
	if ctx.Value(ctxKey{}) != "own" {
		t.Error("the adapter's own value is lost")
	}
	cancel()
	if ctx.Err() == nil {
		t.Error("the adapter's cancellation does not reach the returned ctx")
	}
	e.q.Done("a")

	if got := otelqueue.ContextWithAttempt(own, nil); got != own {
		t.Error("a nil attempt: ctx not returned unchanged")
	}
	//lint:ignore SA1012 a nil ctx is the misuse under test
	bg := otelqueue.ContextWithAttempt(nil, context.Background())
	if bg == nil || trace.SpanContextFromContext(bg).IsValid() || clientwork.FromContext(bg) != nil {
		t.Errorf("a nil ctx and an attempt context of no attempt: %v, want a background context with nothing added", bg)
	}
}
