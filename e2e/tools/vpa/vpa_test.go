package main

import (
	"math"
	"testing"
	"time"
)

// The arithmetic the VPA recommender documents, written out here without
// its code, so that a harness that misuses its API (samples dropped, times
// not given, the wrong estimators) fails these tests:
//
//   - CPU samples go into a histogram of exponential buckets, the first
//     0.01 core wide, each 5% wider than the one before (memory: the first
//     1e7 bytes wide); a percentile is the end of the bucket that holds it.
//   - Samples decay: a sample's weight doubles with every 24 h of its time
//     (--cpu-histogram-decay-half-life, --memory-histogram-decay-half-life),
//     so the histogram needs the samples' times.
//   - Memory enters as one peak per 24 h interval
//     (--memory-aggregation-interval): the most of that interval's samples.
//   - target = the 90th percentile + 15%; lower bound = the 50th + 15%,
//     times (1 + 0.001/confidence)^-2; upper bound = the 95th + 15%, times
//     1 + 1/confidence; confidence = min(days from the first CPU sample to
//     the last, CPU samples / 1440). Each at least 25 millicores and 250 MiB.
//   - Amounts are whole millicores and whole bytes, truncated at each step.
const (
	cpuFirstBucket = 0.01
	memFirstBucket = 1e7
	bucketGrowth   = 1.05
	margin         = 0.15
	minCPUMilli    = 25
	minMemory      = 250 << 20
)

// bucketEnd is the end of the exponential bucket that holds v.
func bucketEnd(v, first float64) float64 {
	b := 0
	if v >= first {
		b = int(math.Log(v*(bucketGrowth-1)/first+1) / math.Log(bucketGrowth))
	}
	return first * (math.Pow(bucketGrowth, float64(b+1)) - 1) / (bucketGrowth - 1)
}

// withMargin is amount (already whole) plus its 15%, truncated.
func withMargin(amount int64) int64 { return amount + int64(float64(amount)*margin) }

// wantCPU is the recommender's figure, in millicores, for a percentile
// that falls in the bucket of cores, scaled by factor (1 for the target).
func wantCPU(cores, factor float64) int64 {
	m := int64(float64(withMargin(int64(bucketEnd(cores, cpuFirstBucket)*1000))) * factor)
	return max(m, minCPUMilli)
}

// wantMemory is the same for memory, in bytes.
func wantMemory(b, factor float64) int64 {
	m := int64(float64(withMargin(int64(bucketEnd(b, memFirstBucket)))) * factor)
	return max(m, minMemory)
}

func milli(cores float64) int64 { return int64(math.Round(cores * 1000)) }

var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

// feed gives the recommender one sample every step from t0 of each load
// in turn.
func feed(step time.Duration, loads ...[]load) VPAResult {
	v := newVPAState()
	at := t0
	for _, ls := range loads {
		for _, l := range ls {
			v.add(at, l.cpu, l.mem)
			at = at.Add(step)
		}
	}
	return v.recommend()
}

type load struct {
	cpu float64
	mem uint64
}

func repeat(n int, l load) []load {
	out := make([]load, n)
	for i := range out {
		out[i] = l
	}
	return out
}

func TestConstantLoad(t *testing.T) {
	const n = 60
	for _, c := range []struct {
		name string
		load load
	}{
		{"half a core, 400 MiB", load{0.5, 400 << 20}},
		{"0.123 cores, 1 GiB", load{0.123, 1 << 30}},
		{"under the minimums: 10m, 100 MiB", load{0.010, 100 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := feed(time.Minute, repeat(n, c.load))
			if got.Fed != n || got.Aggregated != n {
				t.Fatalf("fed %d, aggregated %d CPU samples, want %d and %d", got.Fed, got.Aggregated, n, n)
			}
			// 60 samples a minute apart: 59 minutes from the first to the last.
			conf := math.Min(59.0/1440, n/1440.0)
			if math.Abs(got.Confidence-conf) > 1e-12 {
				t.Errorf("confidence %v, want %v", got.Confidence, conf)
			}
			lower, upper := math.Pow(1+0.001/conf, -2), 1+1/conf
			// Every percentile of a constant load is its bucket's end.
			checkCPU(t, "target", got.TargetCPU, wantCPU(c.load.cpu, 1))
			checkCPU(t, "lower bound", got.LowerCPU, wantCPU(c.load.cpu, lower))
			checkCPU(t, "upper bound", got.UpperCPU, wantCPU(c.load.cpu, upper))
			checkMemory(t, "target", got.TargetMemory, wantMemory(float64(c.load.mem), 1))
			checkMemory(t, "lower bound", got.LowerMemory, wantMemory(float64(c.load.mem), lower))
			checkMemory(t, "upper bound", got.UpperMemory, wantMemory(float64(c.load.mem), upper))
			// And the documented bounds of a target: the usage + 15%, up to
			// one bucket (5%) more, or the minimum.
			if lo, hi := max(1.15*c.load.cpu, 0.025), max(1.15*1.05*c.load.cpu, 0.025); got.TargetCPU < lo-0.001 || got.TargetCPU > hi+0.001 {
				t.Errorf("CPU target %.3f, want within [%.3f, %.3f]", got.TargetCPU, lo, hi)
			}
		})
	}
}

func checkCPU(t *testing.T, what string, got float64, want int64) {
	t.Helper()
	if milli(got) != want {
		t.Errorf("CPU %s %dm, want %dm", what, milli(got), want)
	}
}

func checkMemory(t *testing.T, what string, got, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("memory %s %d, want %d", what, got, want)
	}
}

// TestStep checks the percentiles of a load that steps up: 45 minutes at
// 0.1 core, then 15 at 1 core. The 90th and 95th percentiles are in the
// step's bucket, the 50th in the first load's.
func TestStep(t *testing.T) {
	got := feed(time.Minute, repeat(45, load{0.1, 300 << 20}), repeat(15, load{1.0, 300 << 20}))
	conf := math.Min(59.0/1440, 60/1440.0)
	checkCPU(t, "target", got.TargetCPU, wantCPU(1.0, 1))
	checkCPU(t, "lower bound", got.LowerCPU, wantCPU(0.1, math.Pow(1+0.001/conf, -2)))
	checkCPU(t, "upper bound", got.UpperCPU, wantCPU(1.0, 1+1/conf))
}

// TestDecay checks that the samples' times reach the histogram: 100
// samples at 0.2 core, then, two days later, 40 at 0.8. Counted alike, the
// median would be 0.2; two half-lives on, each later sample weighs 4 times
// as much (160 against 100), and the median is 0.8.
func TestDecay(t *testing.T) {
	v := newVPAState()
	for i := range 100 {
		v.add(t0.Add(time.Duration(i)*time.Minute), 0.2, 300<<20)
	}
	for i := range 40 {
		v.add(t0.Add(48*time.Hour+time.Duration(i)*time.Minute), 0.8, 300<<20)
	}
	got := v.recommend()
	days := (48*time.Hour + 39*time.Minute).Hours() / 24
	conf := math.Min(days, 140/1440.0)
	checkCPU(t, "lower bound (the median)", got.LowerCPU, wantCPU(0.8, math.Pow(1+0.001/conf, -2)))
	checkCPU(t, "target", got.TargetCPU, wantCPU(0.8, 1))
}

// TestMemoryPeaks checks that memory enters as one peak per 24 h: an hour
// at 300 MiB with one reading of 500 MiB has its target at 500 MiB (the
// 90th percentile of the readings would be 300); and over three days
// whose peaks are 300, 600 and 400 MiB (weights 1, 2 and 4: each day
// doubles them), the 90th percentile is 600 and the 50th 400.
func TestMemoryPeaks(t *testing.T) {
	hour := repeat(60, load{0.1, 300 << 20})
	hour[30].mem = 500 << 20
	got := feed(time.Minute, hour)
	checkMemory(t, "target, one spike in an hour", got.TargetMemory, wantMemory(500<<20, 1))

	v := newVPAState()
	for day, peak := range []uint64{300 << 20, 600 << 20, 400 << 20} {
		for h := range 24 {
			m := uint64(200 << 20)
			if h == 12 {
				m = peak
			}
			v.add(t0.Add(time.Duration(day*24+h)*time.Hour), 0.1, m)
		}
	}
	got = v.recommend()
	conf := math.Min(71.0/24, 72/1440.0)
	checkMemory(t, "target, three days", got.TargetMemory, wantMemory(600<<20, 1))
	checkMemory(t, "lower bound, three days", got.LowerMemory, wantMemory(400<<20, math.Pow(1+0.001/conf, -2)))
}

// TestFetched checks which samples the recommender gets: samples every 15
// s (with jitter), fetched every minute, give the one that ended at each
// minute; a fetch that finds no new sample gives the last one again, and
// the recommender drops it.
func TestFetched(t *testing.T) {
	var samples []Sample
	for i := 1; i <= 40; i++ {
		jitter := time.Duration(i%3-1) * 200 * time.Millisecond
		samples = append(samples, Sample{At: t0.Add(time.Duration(i)*15*time.Second + jitter), CPU: float64(i) / 100, RSS: uint64(i) << 20})
	}
	got := fetched(samples, t0, time.Minute, 15*time.Second)
	if len(got) != 10 {
		t.Fatalf("%d fetched, want 10", len(got))
	}
	for k, s := range got {
		if want := float64(4*(k+1)) / 100; s.CPU != want {
			t.Errorf("fetch %d got the sample of cpu %v, want %v", k+1, s.CPU, want)
		}
	}
	r := simulate(samples, t0, time.Minute, 15*time.Second)
	if r.Fed != 10 || r.Aggregated != 10 {
		t.Errorf("fed %d, aggregated %d, want 10 and 10", r.Fed, r.Aggregated)
	}

	// The samples of minutes 3 and 4 missing: the fetches at 3 and 4 find
	// the one of minute 2 again.
	var gap []Sample
	for _, s := range samples {
		if m := s.At.Sub(t0); m <= 2*time.Minute+time.Second || m > 4*time.Minute+time.Second {
			gap = append(gap, s)
		}
	}
	r = simulate(gap, t0, time.Minute, 15*time.Second)
	if r.Fed != 10 || r.Aggregated != 8 {
		t.Errorf("with a gap: fed %d, aggregated %d, want 10 and 8", r.Fed, r.Aggregated)
	}
}
