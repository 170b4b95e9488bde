package traceparent_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	corev1 "k8s.io/api/core/v1"

	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/traceparent"
)

// The writer puts its trace context on the object it writes; the
// controller reads it when it enqueues the object's key, so that the
// reconcile's trace links to the write.
func Example() {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	// An Option configures both sides; an InjectOption only Inject, a
	// ReaderOption only NewReader.
	var w3c traceparent.Option = traceparent.WithPropagators(propagation.TraceContext{})
	injectOpts := []traceparent.InjectOption{w3c}

	// The writer, before Update or Create:
	ctx, span := tp.Tracer("writer").Start(context.Background(), "scale web")
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = "web", "default"
	traceparent.Inject(ctx, cm, injectOpts...)
	span.End()

	// The controller, in its informer's event handler:
	queue := scheduler.New(scheduler.Config[string]{Name: "configmaps"})
	defer queue.ShutDown()
	readerOpts := []traceparent.ReaderOption{w3c}
	reader := traceparent.NewReader(readerOpts...)
	queue.AddContext(reader.ContextWith(context.Background(), cm), cm.Namespace+"/"+cm.Name)

	key, _ := queue.Get()
	read := reader.SpanContext(cm)
	fmt.Println(key, read.TraceID() == span.SpanContext().TraceID(), read.IsSampled())
	// Output: default/web true false
}
