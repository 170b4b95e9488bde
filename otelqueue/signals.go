package otelqueue

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// waitBuckets is the number of buckets of signals' wait histogram: bucket
// 0 holds waits under 2^waitShift ns (262 µs), bucket i >= 1 the waits in
// the upper or lower half (by the bit after the leading one) of
// [2^e, 2^(e+1)) ns for e = waitShift + (i-1)/2: a quantile read from it is
// within a factor 1.5. The last bucket holds everything beyond.
const (
	waitBuckets = 64
	waitShift   = 18
)

// signals are what an adaptive pool decides on, counted by the queue's
// observer for every attempt while a pool is attached: cumulative, so that
// the pool reads the figures of an interval as the difference of two reads.
type signals struct {
	started atomic.Uint64
	waits   [waitBuckets]atomic.Uint64
	done    atomic.Uint64
	workNs  atomic.Int64
	// works is the histogram of the work times of the attempts done, in
	// the buckets of waits: its median is the typical work time, which
	// a long tail or a hung reconcile does not move.
	works   [waitBuckets]atomic.Uint64
	worksNs [waitBuckets]atomic.Int64 // the work time summed in each bucket
	// The waits of the attempts done in instrumented clients, counted with
	// their work time (not from ClientStats, which the queue updates after
	// the pool decides at an attempt's end), so that a window's waits and
	// work time are of the same attempts.
	limiterNs, retryAfterNs atomic.Int64
	// usedClient says whether an attempt done used an instrumented client:
	// the API server's figures are then the queue's too.
	usedClient atomic.Bool
}

// dequeued counts an attempt handed out after waiting wait.
func (s *signals) dequeued(wait time.Duration) {
	s.started.Add(1)
	s.waits[waitBucket(wait)].Add(1)
}

// finished counts an attempt that ended after work, of which it waited
// limiter for the client's rate limiter and retryAfter for the API server's
// Retry-After.
func (s *signals) finished(work, limiter, retryAfter time.Duration, usedClient bool) {
	s.done.Add(1)
	if usedClient && !s.usedClient.Load() {
		s.usedClient.Store(true)
	}
	s.workNs.Add(int64(work))
	b := waitBucket(work)
	s.works[b].Add(1)
	s.worksNs[b].Add(int64(work))
	if limiter > 0 {
		s.limiterNs.Add(int64(limiter))
	}
	if retryAfter > 0 {
		s.retryAfterNs.Add(int64(retryAfter))
	}
}

// waitBucket returns the bucket of a wait.
func waitBucket(d time.Duration) int {
	if d < 1<<waitShift {
		return 0
	}
	e := bits.Len64(uint64(d)) - 1 // 2^e <= d < 2^(e+1)
	i := 2*(e-waitShift) + 1
	if uint64(d)>>(e-1)&1 == 1 {
		i++ // d >= 1.5·2^e
	}
	return min(i, waitBuckets-1)
}

// waitBucketUpper returns the upper bound of bucket i.
func waitBucketUpper(i int) time.Duration {
	if i == 0 {
		return 1 << waitShift
	}
	e := waitShift + (i-1)/2
	if i%2 == 1 {
		return time.Duration(3) << (e - 1) // 1.5·2^e
	}
	return time.Duration(1) << (e + 1)
}

// waitQuantile returns the upper bound of the bucket that holds the q-th
// quantile of the counts (differences of two reads), 0 when they are empty
// or it falls in bucket 0.
func waitQuantile(counts *[waitBuckets]uint64, q float64) time.Duration {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	// Nearest rank, as histogram_quantile: the ⌈q·total⌉-th wait.
	rank := uint64(max(1, math.Ceil(q*float64(total)))) - 1
	if rank >= total {
		rank = total - 1
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen > rank {
			if i == 0 {
				return 0 // under waitUnit: no wait to speak of
			}
			return waitBucketUpper(i)
		}
	}
	return waitBucketUpper(waitBuckets - 1)
}

// trimBuckets is how many buckets above the median's the typical work time
// keeps: four half-octaves, about four times the median.
const trimBuckets = 4

// typicalWork returns the mean work time of the attempts whose work time
// is at most about four times the median (their buckets), and how many
// they are, from the counts and sums of a window: the work time of the
// typical attempt, which neither a long tail nor a hung reconcile moves.
func typicalWork(counts *[waitBuckets]uint64, sums *[waitBuckets]int64) (time.Duration, uint64) {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0, 0
	}
	rank := (total+1)/2 - 1 // the median, nearest rank
	var seen uint64
	median := 0
	for i, c := range counts {
		seen += c
		if seen > rank {
			median = i
			break
		}
	}
	var n uint64
	var sum int64
	for i := 0; i <= min(median+trimBuckets, waitBuckets-1); i++ {
		n += counts[i]
		sum += sums[i]
	}
	if n == 0 {
		return 0, 0
	}
	return time.Duration(sum / int64(n)), n
}
