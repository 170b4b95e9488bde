package otelqueue_test

import (
	"slices"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// DefaultBuckets hands out copies: a caller that changes the slice it got
// changes neither the next caller's nor the histograms'.
func TestDefaultBucketsIsACopy(t *testing.T) {
	want := otelqueue.DefaultBuckets()
	if len(want) == 0 || want[0] != 0.0001 || want[len(want)-1] != 1000 {
		t.Fatalf("DefaultBuckets() = %v, want 100µs to 1000s", want)
	}
	changed := otelqueue.DefaultBuckets()
	changed[0], changed[len(changed)-1] = 7, 8
	if got := otelqueue.DefaultBuckets(); !slices.Equal(got, want) {
		t.Errorf("after a caller changed its slice, DefaultBuckets() = %v, want %v", got, want)
	}

	e := newProviderEnv(t)
	q := e.queue(t, "x")
	q.Add("a")
	k, _ := q.Get()
	q.Done(k)
	rm := e.collect(t)
	if b := histogramPoint(t, findMetric(t, rm, semconv.MetricQueueDuration)).Bounds; !slices.Equal(b, want) {
		t.Errorf("histogram bounds %v, want %v", b, want)
	}
}
