// Package traceparent carries a trace context on a Kubernetes object, in
// its otelqueue.github.io/traceparent annotation ([Annotation]; the key of
// Kubernetes KEP-5915, async trace context propagation, where chosen:
// [KEPAnnotation]), from the change that wrote the object to the reconcile
// that its watch event causes.
//
// A writer calls [Inject] on the object before it sends it to the API
// server. A controller reads the annotation with a [Reader] when it enqueues
// the object's key: [Reader.ContextWith] gives the context for the
// scheduler's context-aware adds, and the attempt's trace then links to the
// writer's span. The annotation is untrusted input: anyone who may write the
// object may write it. A Reader ignores and counts values it cannot use
// (`workqueue.traceparent.invalid`), and by default clears their sampled flag so that a
// writer cannot force sampling ([Trust] keeps it).
//
// Package controllerruntime's handlers and ObjectLinkSource use a Reader;
// with client-go, call it from the informer's event handlers.
//
// The package uses the OpenTelemetry API only, with the global
// TextMapPropagator and MeterProvider unless [WithPropagators] or
// [WithMeterProvider] give others.
package traceparent
