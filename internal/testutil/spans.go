package testutil

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// SpansNamed returns the spans called name, in the order of spans (for a
// SpanRecorder's Ended, the order they ended).
func SpansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// OneSpan returns the single span called name, failing the test, with the
// names of all spans, unless there is exactly one.
func OneSpan(t testing.TB, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := SpansNamed(spans, name)
	if len(s) != 1 {
		t.Fatalf("%d spans named %q, want 1 (spans: %q)", len(s), name, SpanNames(spans))
	}
	return s[0]
}

// SpanNames returns the names of spans, in their order.
func SpanNames(spans []sdktrace.ReadOnlySpan) []string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	return names
}
