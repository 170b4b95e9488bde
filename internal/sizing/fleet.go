package sizing

import "strconv"

// FleetRule is a class of a sharded controller's fleet: what limits or
// breaks the replicas of one job together, read from the series of all of
// them (rules.yml's group otelqueue.fleet, fleet-figures.sh), never from
// one process, so package bottleneck's Classify has no such class. Fleet
// is the table; the docs' table of the fleet's classes is rendered from it
// (docs/scaling.md), rules.yml's alerts and fleet-figures.sh are generated
// from the same constants (HotShardSkew, LargestPodCores,
// LargestPodMemory), and example/prometheus's tests check that each row
// has its alert, its promtool cases and its word in the line "fleet=".
type FleetRule struct {
	// Class is the word of fleet-figures.sh's line "fleet=".
	Class string
	// Alert is the alert of rules.yml that fires for it.
	Alert string
	// Figure is the fleet's series the alert reads, Comparison and
	// Threshold how: "fleet:workqueue_arrivals:skew_rate5m", ">", 1.5.
	Figure     string
	Comparison string
	Threshold  float64
	// Holds says in words when it holds, Change what to change.
	Holds, Change string
}

// Fleet is the table of the fleet's classes. The shard counts read the
// largest pod, LargestPodCores and LargestPodMemory.
var Fleet = [...]FleetRule{
	{
		Class: "uncovered", Alert: "WorkqueueShardUncovered",
		Figure: "fleet:workqueue_shard_covered:ratio", Comparison: "<", Threshold: 1,
		Holds:  "the live shards cover less than the hash space (a replica down, a range left out): its objects wait",
		Change: "start the missing shard",
	},
	{
		Class: "overlap", Alert: "WorkqueueShardOverlap",
		Figure: "fleet:workqueue_shard_share:sum", Comparison: ">", Threshold: 1,
		Holds:  "the shares sum above 1 (two replicas of one ordinal, or two totals): objects reconciled twice",
		Change: "one replica per ordinal; change the count as below",
	},
	{
		Class: "hot-shard", Alert: "WorkqueueShardHot",
		Figure: "fleet:workqueue_arrivals:skew_rate5m", Comparison: ">", Threshold: HotShardSkew,
		Holds:  "the busiest shard's arrivals per part of the hash space exceed " + strconv.FormatFloat(HotShardSkew, 'f', -1, 64) + " times the mean",
		Change: "split by UID: a namespace stays in one shard",
	},
	{
		Class: "too-few-shards", Alert: "WorkqueueShardsTooFew",
		Figure: "fleet:workqueue_shards_needed / fleet:workqueue_shards:count", Comparison: ">", Threshold: 1,
		Holds:  "cores over " + strconv.Itoa(LargestPodCores) + " or memory over " + strconv.Itoa(LargestPodMemory>>30) + " GiB (the largest pod), rounded up, exceed the shards running",
		Change: "run that many, or allow larger pods",
	},
	{
		Class: "too-many-shards", Alert: "WorkqueueShardsTooMany",
		Figure: "fleet:workqueue_shards:count - fleet:workqueue_shards_needed", Comparison: ">", Threshold: 1,
		Holds:  "over one shard to spare for 6 hours",
		Change: "fewer shards, unless kept for availability",
	},
}
