package otelqueue

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/scheduler"
)

// checkWaitBucket checks where d lands: in a bucket of range, whose upper
// bound is above d and whose lower neighbour's upper bound is at most d;
// the last bucket is open (it holds every wait from the upper bound of the
// one before it, however long), so only its lower side is checked.
func checkWaitBucket(t *testing.T, d time.Duration) {
	t.Helper()
	i := waitBucket(d)
	if i < 0 || i >= waitBuckets {
		t.Fatalf("waitBucket(%v) = %d, outside [0, %d)", d, i, waitBuckets)
	}
	if i < waitBuckets-1 && d >= waitBucketUpper(i) {
		t.Errorf("waitBucket(%v) = %d, whose upper bound %v is not above it", d, i, waitBucketUpper(i))
	}
	if i > 0 && waitBucketUpper(i-1) > d {
		t.Errorf("waitBucket(%v) = %d, but bucket %d, with the upper bound %v, holds it", d, i, i-1, waitBucketUpper(i-1))
	}
}

// TestWaitBucket checks named waits and every bucket's edges: a wait at a
// bucket's upper bound is in the next bucket, one just under it in that
// bucket; waits under 2^18 ns (about 262µs, negative ones included) are in
// bucket 0, and waits beyond the range in the last bucket.
func TestWaitBucket(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{math.MinInt64, 0},
		{-time.Second, 0},
		{0, 0},
		{1, 0},
		{1<<18 - 1, 0},
		{1 << 18, 1},          // [2^18, 1.5·2^18)
		{3<<17 - 1, 1},        // just under 1.5·2^18
		{3 << 17, 2},          // [1.5·2^18, 2^19)
		{1<<19 - 1, 2},        // just under 2^19
		{1 << 19, 3},          // [2^19, 1.5·2^19)
		{time.Millisecond, 4}, // 1e6 ns in [1.5·2^19, 2^20)
		{time.Second, 24},     // 1e9 ns in [1.5·2^29, 2^30)
		{time.Minute, 36},     // 6e10 ns in [1.5·2^35, 2^36)
		{1 << 49, waitBuckets - 1},
		{1<<49 - 1, waitBuckets - 2},
		{3 << 48, waitBuckets - 1}, // beyond: the last bucket
		{365 * 24 * time.Hour, waitBuckets - 1},
		{math.MaxInt64, waitBuckets - 1},
	} {
		if got := waitBucket(tc.d); got != tc.want {
			t.Errorf("waitBucket(%v = %d ns) = %d, want %d", tc.d, int64(tc.d), got, tc.want)
		}
		checkWaitBucket(t, tc.d)
	}
	for i := range waitBuckets - 1 {
		upper := waitBucketUpper(i)
		if got := waitBucket(upper - 1); got != i {
			t.Errorf("waitBucket(%v - 1ns) = %d, want %d (the bucket it bounds)", upper, got, i)
		}
		if got := waitBucket(upper); got != i+1 {
			t.Errorf("waitBucket(%v) = %d, want %d (the next bucket)", upper, got, i+1)
		}
	}
}

// TestWaitBucketUpper checks the upper bounds: 2^18 ns for bucket 0, then
// increasing by a factor of at most 1.5, so that a quantile read as a
// bucket's upper bound is within a factor 1.5 of the wait.
func TestWaitBucketUpper(t *testing.T) {
	if got := waitBucketUpper(0); got != 1<<18 {
		t.Errorf("waitBucketUpper(0) = %v, want 2^18 ns", got)
	}
	if got, want := waitBucketUpper(1), time.Duration(3<<17); got != want {
		t.Errorf("waitBucketUpper(1) = %v, want 1.5·2^18 ns = %v", got, want)
	}
	if got, want := waitBucketUpper(waitBuckets-2), time.Duration(1<<49); got != want {
		t.Errorf("waitBucketUpper(%d) = %v, want 2^49 ns = %v", waitBuckets-2, got, want)
	}
	for i := 1; i < waitBuckets; i++ {
		lo, hi := waitBucketUpper(i-1), waitBucketUpper(i)
		if hi <= lo {
			t.Errorf("waitBucketUpper(%d) = %v, not above waitBucketUpper(%d) = %v", i, hi, i-1, lo)
		}
		if r := float64(hi) / float64(lo); r > 1.5 {
			t.Errorf("waitBucketUpper(%d) / waitBucketUpper(%d) = %.3f, want at most 1.5", i, i-1, r)
		}
	}
}

// FuzzWaitBucket checks that every wait lands in the bucket that covers it.
func FuzzWaitBucket(f *testing.F) {
	for _, d := range []int64{0, -1, 1, 1<<18 - 1, 1 << 18, 3 << 17, 1 << 19, int64(time.Millisecond),
		int64(time.Second), int64(time.Hour), 1<<49 - 1, 1 << 49, math.MaxInt64, math.MinInt64} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d int64) {
		checkWaitBucket(t, time.Duration(d))
	})
}

// TestWaitQuantile checks quantiles of known counts: the upper bound of the
// bucket that holds the quantile, 0 in bucket 0 (no wait to speak of) and
// for no counts at all.
func TestWaitQuantile(t *testing.T) {
	counts := func(byBucket map[int]uint64) *[waitBuckets]uint64 {
		var c [waitBuckets]uint64
		for i, n := range byBucket {
			c[i] = n
		}
		return &c
	}
	for _, tc := range []struct {
		name   string
		counts map[int]uint64
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.9, 0},
		{"empty median", nil, 0.5, 0},
		{"all under the first bound", map[int]uint64{0: 50}, 0.9, 0},
		{"all under the first bound, max", map[int]uint64{0: 50}, 1, 0},
		{"one bucket", map[int]uint64{10: 7}, 0.9, waitBucketUpper(10)},
		{"one bucket, min", map[int]uint64{10: 7}, 0, waitBucketUpper(10)},
		{"p90 of 95 fast and 5 slow", map[int]uint64{3: 95, 20: 5}, 0.9, waitBucketUpper(3)},
		{"p90 of 85 fast and 15 slow", map[int]uint64{3: 85, 20: 15}, 0.9, waitBucketUpper(20)},
		{"median of three buckets", map[int]uint64{2: 30, 5: 30, 8: 40}, 0.5, waitBucketUpper(5)},
		{"p90 of three buckets", map[int]uint64{2: 30, 5: 30, 8: 40}, 0.9, waitBucketUpper(8)},
		{"min of three buckets", map[int]uint64{2: 30, 5: 30, 8: 40}, 0, waitBucketUpper(2)},
		{"max of three buckets", map[int]uint64{2: 30, 5: 30, 8: 40}, 1, waitBucketUpper(8)},
		{"p90 with most under the first bound", map[int]uint64{0: 95, 12: 5}, 0.9, 0},
		{"the last bucket", map[int]uint64{1: 1, waitBuckets - 1: 9}, 0.9, waitBucketUpper(waitBuckets - 1)},
	} {
		if got := waitQuantile(counts(tc.counts), tc.q); got != tc.want {
			t.Errorf("%s: waitQuantile(%v, %v) = %v, want %v", tc.name, tc.counts, tc.q, got, tc.want)
		}
	}
}

// TestWaitQuantileOfWaits checks the quantile of waits counted by signals:
// within a factor 1.5 above the true p90, never below it.
func TestWaitQuantileOfWaits(t *testing.T) {
	var s signals
	var waits []time.Duration
	for i := 1; i <= 100; i++ {
		w := time.Duration(i) * 7 * time.Millisecond // 7ms .. 700ms
		waits = append(waits, w)
		s.dequeued(w)
	}
	if got := s.started.Load(); got != 100 {
		t.Fatalf("started = %d, want 100", got)
	}
	var c [waitBuckets]uint64
	for i := range c {
		c[i] = s.waits[i].Load()
	}
	p90 := waits[89] // nearest rank: the 90th of 100
	got := waitQuantile(&c, 0.9)
	if got <= p90 || float64(got) > 1.5*float64(p90) {
		t.Errorf("p90 of 7ms..700ms read from the buckets = %v, want above %v and within a factor 1.5", got, p90)
	}

	s.finished(2*time.Second, 0, 0, false)
	s.finished(500*time.Millisecond, 0, 0, false)
	if d, w := s.done.Load(), time.Duration(s.workNs.Load()); d != 2 || w != 2500*time.Millisecond {
		t.Errorf("after two finished: done %d, work %v; want 2, 2.5s", d, w)
	}
}

// TestWaitQuantileExactShare checks a quantile that falls on a bucket's
// last key: 90 waits in one bucket and 10 in a higher one. The 90th
// percentile of 100 waits is the 90th smallest (nearest rank, and
// Prometheus's histogram_quantile, which takes the first bucket whose
// cumulative count reaches q × count), so it is in the lower bucket.
func TestWaitQuantileExactShare(t *testing.T) {
	var c [waitBuckets]uint64
	c[3], c[20] = 90, 10
	// The regression this guards: comparing seen > rank with rank =
	// floor(q·total) returned the next key's bucket whenever q·total is a
	// whole number (the p90 of 10 waits was their maximum).
	if got := waitQuantile(&c, 0.9); got != waitBucketUpper(3) {
		t.Errorf("waitQuantile(90 waits in bucket 3, 10 in bucket 20, 0.9) = %v, want %v (bucket 3, nearest rank)", got, waitBucketUpper(3))
	}
}

// TestPoolSignals checks what an attached pool reads from an instrumented
// queue: the attempts handed out with their queue waits, those finished
// with their work time, and the queue's numbers, as the window between the
// snapshot at attach and one taken later; and that nothing is counted
// while no pool is attached.
func TestPoolSignals(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := testingclock.NewFakeClock(start)
	s := scheduler.New(scheduler.Config[string]{Name: "signals", Clock: fc})
	defer s.ShutDown()
	inst, err := Instrument(s, WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider()), WithClientTime())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	a := AdaptiveWorkers{Min: 1, Max: 8, Interval: time.Second}
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
	p := newPool(s, bindingOf(s), a, 1, 8, 4, func() *slog.Logger { return slog.New(slog.DiscardHandler) })
	ctx := context.Background()
	// The attempts' client waits are counted with their work time
	// (WithClientTime).
	get := func(want string) {
		t.Helper()
		it, err := s.GetContext(ctx)
		if err != nil || it.Key != want {
			t.Fatalf("GetContext = %q, %v; want %q", it.Key, err, want)
		}
		if want == "a" {
			w := clientwork.FromContext(it.Context())
			w.Begin(fc.Now())
			w.LimiterWaited(40 * time.Millisecond)
			w.RoundTrip(time.Millisecond, fc.Now(), true, true) // 429 with Retry-After
			w.Begin(fc.Now().Add(70 * time.Millisecond))        // the retry, 70ms later
		}
	}

	// Before attach: not counted.
	s.Add("early")
	get("early")
	s.Done("early")
	if err := p.attach(); err != nil {
		t.Fatal(err)
	}
	if n := s.MaxInFlight(); n != 4 {
		t.Errorf("MaxInFlight() = %d after attach, want the start 4", n)
	}
	// Within the first interval, so that no Done evaluates.
	for _, k := range []string{"a", "b", "c", "d"} {
		s.Add(k)
	}
	fc.Step(100 * time.Millisecond)
	get("a") // waited 100ms
	fc.Step(200 * time.Millisecond)
	get("b") // waited 300ms
	fc.Step(100 * time.Millisecond)
	s.Done("a") // worked 300ms
	get("c")    // waited 400ms
	fc.Step(100 * time.Millisecond)

	cur := p.snapshot(fc.Now())
	w := p.window(&p.prev, &cur)
	want := window{
		dur: 500 * time.Millisecond, limit: 4,
		started: 3, done: 1,
		work: 300 * time.Millisecond,
		// a 100ms..400ms, b 300ms..500ms, c 400ms..500ms
		busy:    600 * time.Millisecond,
		waitP90: waitBucketUpper(waitBucket(400 * time.Millisecond)),
		oldest:  500 * time.Millisecond, // d, ready since 0
		longest: 200 * time.Millisecond, // b
		depth:   1, depthBefore: 0,
		adds: 4,
		// a, the only attempt done, is the typical one; b and c in flight.
		typicalWork: 300 * time.Millisecond, typicalDone: 1, inFlight: 2,
		dueWindow: time.Second, // the interval; no key delayed
		// a's, counted at its Done with its work time (ClientStats has
		// them too, but after the pool decided).
		limiterWait: 40 * time.Millisecond, retryAfterWait: 70 * time.Millisecond,
	}
	if w != want {
		t.Errorf("window\n%+v\nwant\n%+v", w, want)
	}
	if st := p.Stats(); st.Needed != 0 || st.Changes != 0 {
		t.Errorf("Stats() = %+v before an interval passed, want no decision", st)
	}

	p.detach()
	if n := s.MaxInFlight(); n != 0 {
		t.Errorf("MaxInFlight() = %d after detach, want 0", n)
	}
	s.Done("b")
	get("d")
	if got := p.sig.started.Load() + p.sig.done.Load(); got != 4 {
		t.Errorf("after detach, started + done = %d, want 4 (3 + 1, no more counted)", got)
	}
}

// TestTypicalWork checks the typical work time: the mean of the attempts
// within about four times the median, so that a long tail or hung
// reconciles do not move it, while a plain distribution keeps its mean.
func TestTypicalWork(t *testing.T) {
	var s signals
	for i := range 1000 {
		s.finished(25*time.Millisecond+time.Duration(i)*50*time.Microsecond, 0, 0, false) // 25..75ms
	}
	read := func() (time.Duration, uint64) {
		var c [waitBuckets]uint64
		var ns [waitBuckets]int64
		for i := range c {
			c[i], ns[i] = s.works[i].Load(), s.worksNs[i].Load()
		}
		return typicalWork(&c, &ns)
	}
	if w, n := read(); n != 1000 || w < 49*time.Millisecond || w > 51*time.Millisecond {
		t.Errorf("uniform 25..75ms: typical %v of %d, want the mean, 50ms, of all 1000", w, n)
	}
	s.finished(60*time.Second, 0, 0, false)
	s.finished(600*time.Second, 0, 0, false)
	if w, n := read(); n != 1000 || w < 49*time.Millisecond || w > 51*time.Millisecond {
		t.Errorf("with a 60s and a 600s reconcile: typical %v of %d, want 50ms of the 1000 others", w, n)
	}
	var empty [waitBuckets]uint64
	var sums [waitBuckets]int64
	if w, n := typicalWork(&empty, &sums); w != 0 || n != 0 {
		t.Errorf("no attempt: %v, %d", w, n)
	}
}
