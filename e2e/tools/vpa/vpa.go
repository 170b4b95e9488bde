package main

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"
)

// The recommender's defaults in k8s.io/autoscaler/vertical-pod-autoscaler
// v1.8.1, each with its flag: pkg/recommender/config/config.go
// (DefaultRecommenderConfig) and pkg/recommender/model/aggregations_config.go
// (the Default* constants, which the recommender passes to
// model.InitializeAggregationsConfig in
// pkg/recommender/routines/recommender_controller.go). The package config
// cannot be imported here: it pulls the recommender's Prometheus history
// provider, which does not compile against the client_golang v1.25 that
// otelqueue's module requires; so they are written out, and the tests check
// the arithmetic they give.
var vpaDefaults = logic.RecommendationConfig{
	SafetyMarginFraction:       0.15,           // --recommendation-margin-fraction
	PodMinCPUMillicores:        25,             // --pod-recommendation-min-cpu-millicores
	PodMinMemoryMb:             250,            // --pod-recommendation-min-memory-mb (MiB: the recommender multiplies by 1024*1024)
	TargetCPUPercentile:        0.9,            // --target-cpu-percentile
	LowerBoundCPUPercentile:    0.5,            // --recommendation-lower-bound-cpu-percentile
	UpperBoundCPUPercentile:    0.95,           // --recommendation-upper-bound-cpu-percentile
	ConfidenceIntervalCPU:      24 * time.Hour, // --confidence-interval-cpu
	TargetMemoryPercentile:     0.9,            // --target-memory-percentile
	LowerBoundMemoryPercentile: 0.5,            // --recommendation-lower-bound-memory-percentile
	UpperBoundMemoryPercentile: 0.95,           // --recommendation-upper-bound-memory-percentile
	ConfidenceIntervalMemory:   24 * time.Hour, // --confidence-interval-memory
}

// vpaFormat is the recommender's default rendering: --humanize-memory=false,
// --round-cpu-millicores=1, --round-memory-bytes=1.
var vpaFormat = logic.RecommendationFormat{HumanizeMemory: false, RoundCPUMillicores: 1, RoundMemoryBytes: 1}

// vpaFetchInterval is how often the recommender reads metrics-server:
// --recommender-interval, 1m by default (MetricsFetcherInterval).
const vpaFetchInterval = time.Minute

func init() {
	// What the recommender does at its start with its default flags
	// --memory-aggregation-interval 24h, --memory-aggregation-interval-count 8,
	// --memory-histogram-decay-half-life 24h, --cpu-histogram-decay-half-life 24h,
	// --oom-bump-up-ratio 1.2, --oom-min-bump-up-bytes 100MB.
	model.InitializeAggregationsConfig(model.NewAggregationsConfig(
		model.DefaultMemoryAggregationInterval, model.DefaultMemoryAggregationIntervalCount,
		model.DefaultMemoryHistogramDecayHalfLife, model.DefaultCPUHistogramDecayHalfLife,
		model.DefaultOOMBumpUpRatio, model.DefaultOOMMinBumpUp))
}

// vpaContainer is the name the demo's container has for the recommender:
// one container, so the pod's minimums (25m, 250Mi) are all its own.
const vpaContainer = "controller"

// VPAResult is what the recommender answers for the demo's container after
// the samples fed to it.
type VPAResult struct {
	// Target, Lower and Upper are the recommendation's target, lower bound
	// and upper bound: CPU in cores, memory in bytes.
	TargetCPU, LowerCPU, UpperCPU          float64
	TargetMemory, LowerMemory, UpperMemory int64
	// Fed is the samples given to the recommender (one CPU and one memory
	// sample per fetch), Aggregated the CPU samples it kept (it drops a
	// sample whose time is not after the last one's: a fetch that found no
	// new metrics-server window), First and Last their times.
	Fed, Aggregated int
	First, Last     time.Time
	// Confidence is the recommender's confidence in its history, in days
	// (logic's getConfidence: min(the days from the first sample to the
	// last, the samples / 1440)), which widens the bounds: the upper bound is
	// multiplied by 1 + 1/Confidence, the lower by (1 + 0.001/Confidence)^-2.
	Confidence float64
}

// vpaState feeds samples to the recommender's model as its cluster feeder
// does (model.ContainerState.AddSample, which aggregates CPU samples into
// the container's AggregateContainerState and memory as one peak per
// aggregation interval) and asks its pod resource recommender.
type vpaState struct {
	aggregate *model.AggregateContainerState
	container *model.ContainerState
	fed       int
}

func newVPAState() *vpaState {
	a := model.NewAggregateContainerState()
	return &vpaState{aggregate: a, container: model.NewContainerState(model.Resources{}, a)}
}

// add gives the recommender one metrics-server reading: the CPU rate in
// cores over the window that ended at at, and the memory at at. Like the
// recommender (pkg/recommender/input/cluster_feeder.go), the sample's
// MeasureStart is the snapshot's time and the CPU is in millicores, rounded
// up (resource.Quantity.MilliValue of metrics-server's nanocores).
func (v *vpaState) add(at time.Time, cores float64, memory uint64) {
	v.fed++
	v.container.AddSample(&model.ContainerUsageSample{
		MeasureStart: at,
		Usage:        model.ResourceAmount(math.Ceil(cores*1000 - 1e-9)),
		Resource:     model.ResourceCPU,
	})
	v.container.AddSample(&model.ContainerUsageSample{
		MeasureStart: at,
		Usage:        model.ResourceAmount(memory),
		Resource:     model.ResourceMemory,
	})
}

// recommend asks the recommender as its loop does
// (pkg/recommender/routines/recommender.go): the container's state merged
// into a fresh one per container name (model.AggregateStateByContainerName),
// the pod resource recommender of the default configuration, and the
// answer rendered as the VPA object's status would hold it.
func (v *vpaState) recommend() VPAResult {
	merged := model.NewAggregateContainerState()
	merged.MergeContainerState(v.aggregate)
	r := logic.CreatePodResourceRecommender(vpaDefaults).GetRecommendedPodResources(
		model.ContainerNameToAggregateStateMap{vpaContainer: merged})
	list := logic.MapToListOfRecommendedContainerResources(r, vpaFormat)
	res := VPAResult{
		Fed: v.fed, Aggregated: v.aggregate.TotalSamplesCount,
		First: v.aggregate.FirstSampleStart, Last: v.aggregate.LastSampleStart,
		Confidence: confidence(v.aggregate, vpaDefaults.ConfidenceIntervalCPU),
	}
	for _, c := range list.ContainerRecommendations {
		if c.ContainerName != vpaContainer {
			continue
		}
		res.TargetCPU, res.TargetMemory = cores(c.Target), memoryBytes(c.Target)
		res.LowerCPU, res.LowerMemory = cores(c.LowerBound), memoryBytes(c.LowerBound)
		res.UpperCPU, res.UpperMemory = cores(c.UpperBound), memoryBytes(c.UpperBound)
	}
	return res
}

func cores(l corev1.ResourceList) float64 {
	q := l[corev1.ResourceCPU]
	return float64(q.MilliValue()) / 1000
}

func memoryBytes(l corev1.ResourceList) int64 {
	q := l[corev1.ResourceMemory]
	return q.Value()
}

// confidence is the recommender's (pkg/recommender/logic/estimator.go,
// unexported there), for the report.
func confidence(s *model.AggregateContainerState, interval time.Duration) float64 {
	days := float64(s.LastSampleStart.Sub(s.FirstSampleStart)) / float64(interval)
	samples := float64(s.TotalSamplesCount) / interval.Minutes()
	return math.Min(days, samples)
}

// fetched is the metrics-server readings the recommender gets from the
// samples taken from start every resolution: at each fetch, every interval
// from start, the last sample that ended by then (within half a
// resolution, for the jitter of the sampler's ticks). A fetch that finds
// the same sample as the one before gives it again, and the recommender
// drops it as a duplicate, as it would.
func fetched(samples []Sample, start time.Time, every, resolution time.Duration) []Sample {
	var out []Sample
	if len(samples) == 0 || every <= 0 {
		return out
	}
	last := samples[len(samples)-1].At
	i := -1
	for f := start.Add(every); !f.After(last.Add(resolution / 2)); f = f.Add(every) {
		for i+1 < len(samples) && !samples[i+1].At.After(f.Add(resolution/2)) {
			i++
		}
		if i >= 0 {
			out = append(out, samples[i])
		}
	}
	return out
}

// simulate runs the recommender over the samples as a recommender fetching
// every interval would have seen them.
func simulate(samples []Sample, start time.Time, every, resolution time.Duration) VPAResult {
	v := newVPAState()
	for _, s := range fetched(samples, start, every, resolution) {
		v.add(s.At, s.CPU, s.RSS)
	}
	return v.recommend()
}
