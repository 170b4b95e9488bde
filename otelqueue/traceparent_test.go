package otelqueue_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelqueue/otelqueue/traceparent"
)

// TestTraceparentLinksTheAttempt checks the whole path: a key enqueued with
// the context of an object's annotation makes the attempt's root link to the
// writer's span, without being its child and, untrusted, without inheriting
// its sampled flag.
func TestTraceparentLinksTheAttempt(t *testing.T) {
	e := newEnv(t, envConfig{})
	_, writer := remoteCtx(9, true)
	obj := &metav1.ObjectMeta{Annotations: map[string]string{traceparent.Annotation: w3c(writer)}}
	r := traceparent.NewReader(traceparent.WithPropagators(propagation.TraceContext{}))
	e.q.AddContext(r.ContextWith(context.Background(), obj), "default/web")
	e.getKey(t, "default/web")
	e.q.Done("default/web")

	root, _, _ := attemptSpans(t, e.sr.Ended(), "default/web", 1)
	if root.Parent().IsValid() || root.SpanContext().TraceID() == writer.TraceID() {
		t.Errorf("the annotation's writer became the parent")
	}
	if len(root.Links()) != 1 {
		t.Fatalf("links %+v, want the writer", root.Links())
	}
	l := root.Links()[0]
	if l.SpanContext.TraceID() != writer.TraceID() || l.SpanContext.SpanID() != writer.SpanID() || l.SpanContext.IsSampled() {
		t.Errorf("link %v, want the writer's span context, unsampled", l.SpanContext)
	}
	assertAttrs(t, "link", l.Attributes, linkEnqueue...)
}

// w3c formats sc as a version-00 W3C traceparent.
func w3c(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}
