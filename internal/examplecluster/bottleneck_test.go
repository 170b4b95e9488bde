package examplecluster

import (
	"strings"
	"testing"
	"time"
)

// TestClassify checks each class and each boundary of the classification,
// the same cases as rules_test.yml's and queue-figures_test.sh's.
func TestClassify(t *testing.T) {
	work := 100 * time.Second
	split := func(limiter, retryAfter time.Duration) Split {
		return Split{Work: work, LimiterWait: limiter, RetryAfterWait: retryAfter, RequestTime: 10 * time.Second, Client: true}
	}
	for _, tc := range []struct {
		name           string
		s              Split
		adds, retries  uint64
		workers, law   int
		want           string
		figure         float64
		recommendAbove bool // whether the recommendation may exceed the workers
	}{
		{"retry-after just below", split(0, 24*time.Second), 100, 0, 30, 30, BottleneckNone, 0.5, true},
		{"retry-after at", split(0, 25*time.Second), 100, 0, 30, 36, BottleneckServerThrottling, 0.25, false},
		{"limiter just below", split(24*time.Second, 0), 100, 0, 30, 30, BottleneckNone, 0.5, true},
		{"limiter at", split(25*time.Second, 0), 100, 0, 30, 36, BottleneckClientRateLimit, 0.25, false},
		{"retries at half", split(0, 0), 100, 50, 30, 30, BottleneckNone, 0.5, true},
		{"retries above half", split(0, 0), 100, 51, 30, 36, BottleneckErrors, 0.51, false},
		{"law equal to workers", split(0, 0), 100, 0, 30, 30, BottleneckNone, 0.5, true},
		{"law one more", split(0, 0), 100, 0, 30, 31, BottleneckWorkers, 31, true},
		{"all hold: throttling first", split(30*time.Second, 30*time.Second), 100, 90, 30, 36, BottleneckServerThrottling, 0.3, false},
		{"limit and errors: limit first", split(30*time.Second, 0), 100, 90, 30, 36, BottleneckClientRateLimit, 0.3, false},
		{"no client: errors, workers or none only", Split{Work: work, LimiterWait: 90 * time.Second}, 100, 0, 30, 36, BottleneckWorkers, 36, true},
		{"nothing done", Split{Client: true}, 0, 0, 4, 1, BottleneckNone, 0.5, true},
	} {
		b := Classify(tc.s, tc.adds, tc.retries, tc.workers, tc.law, 0.5)
		if b.Class != tc.want || b.Figure != tc.figure {
			t.Errorf("%s: %v, want %s with figure %v", tc.name, b, tc.want, tc.figure)
		}
		if rec := b.Recommend(tc.workers, tc.law); !tc.recommendAbove && rec > tc.workers {
			t.Errorf("%s: %s recommends %d workers with %d configured: more workers for a non-workers class", tc.name, b.Class, rec, tc.workers)
		}
		if !strings.HasPrefix(b.String(), "bottleneck="+tc.want+" (") {
			t.Errorf("%s: %q does not start with bottleneck=%s", tc.name, b.String(), tc.want)
		}
	}
}

func TestSplit(t *testing.T) {
	s := Split{Work: 10 * time.Second, LimiterWait: 5 * time.Second, RequestTime: 2 * time.Second, RetryAfterWait: time.Second, Client: true}
	if got, want := s.String(), "split=own 0.20 limiter 0.50 api 0.20 retry-after 0.10"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := (Split{Work: time.Second, RequestTime: 2 * time.Second, Client: true}).Own(); got != 0 {
		t.Errorf("own share %v when the client took more than the work (concurrent requests): want 0", got)
	}
	if got := (Split{}).String(); !strings.Contains(got, "unknown") {
		t.Errorf("without a client: %q", got)
	}
}
