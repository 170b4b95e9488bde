package otelqueuesdk

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// LinkSampled returns a sampler that samples a new root span when any of its
// links is sampled, and otherwise defers to base (sdktrace.ParentBased with
// sdktrace.AlwaysSample when base is nil).
//
// otelqueue starts the trace of each processing attempt as a new root that
// links to the contexts the key was enqueued from. With LinkSampled, an
// attempt is kept whenever one of the changes that caused it was kept, so
// the trace of a sampled request leads to the reconcile it caused. Spans
// that have a parent are always decided by base.
func LinkSampled(base sdktrace.Sampler) sdktrace.Sampler {
	if base == nil {
		base = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	return linkSampled{base: base}
}

type linkSampled struct{ base sdktrace.Sampler }

func (s linkSampled) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		for _, l := range p.Links {
			if l.SpanContext.IsSampled() {
				return sdktrace.SamplingResult{
					Decision:   sdktrace.RecordAndSample,
					Tracestate: l.SpanContext.TraceState(),
				}
			}
		}
	}
	return s.base.ShouldSample(p)
}

func (s linkSampled) Description() string {
	return "LinkSampled{" + s.base.Description() + "}"
}
