package scheduler

import "go.opentelemetry.io/otel/trace"

// spanRef is a trace.SpanContext without its trace state (kept in
// runExtras.originState when present), to keep entries small.
type spanRef struct {
	traceID trace.TraceID
	spanID  trace.SpanID
	flags   trace.TraceFlags
	remote  bool
	valid   bool
}

// spanContext returns the span context r holds, with the trace state ts, or
// the zero one when r is nil or holds none.
func (r *spanRef) spanContext(ts trace.TraceState) trace.SpanContext {
	if r == nil || !r.valid {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    r.traceID,
		SpanID:     r.spanID,
		TraceFlags: r.flags,
		TraceState: ts,
		Remote:     r.remote,
	})
}

// equal reports whether r holds the span of sc.
func (r *spanRef) equal(sc trace.SpanContext) bool {
	return r != nil && r.valid && r.traceID == sc.TraceID() && r.spanID == sc.SpanID()
}

// addSpan records the valid span context sc of an add to the pending run,
// keeping at most max of them (max < 0: none) and counting the others.
func (e *entry[K]) addSpan(sc trace.SpanContext, max int) {
	if !sc.IsValid() {
		return
	}
	if o := e.origin(); o == nil || !o.valid {
		if max < 0 {
			e.ensureExtras().dropped++
			return
		}
		e.ensureSide().origin = spanRef{traceID: sc.TraceID(), spanID: sc.SpanID(), flags: sc.TraceFlags(), remote: sc.IsRemote(), valid: true}
		if ts := sc.TraceState(); ts.Len() > 0 {
			e.ensureExtras().originState = ts
		}
		return
	}
	if e.origin().equal(sc) {
		return
	}
	x := e.ensureExtras()
	for _, l := range x.links {
		if l.TraceID() == sc.TraceID() && l.SpanID() == sc.SpanID() {
			return
		}
	}
	if 1+len(x.links) >= max {
		x.dropped++
		return
	}
	x.links = append(x.links, sc)
}
