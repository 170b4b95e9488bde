// Package sizing holds the factors of package bottleneck's sizing that are
// no API of it: the generated Prometheus rules (internal/rulesgen) read
// them from here as package bottleneck does, and docs/scaling.md states
// their values. Each says why it is what it is.
package sizing

const (
	// CPULimitPerRequest is the CPU limit over the request. The kernel
	// enforces a limit within each 100 ms period, and a process whose
	// busiest five minutes average the request still bursts above it
	// within periods (an event burst, a garbage collection on every
	// GOMAXPROCS thread); the Go runtime also sets GOMAXPROCS from the
	// limit. Twice the request leaves them room.
	CPULimitPerRequest = 2
	// MemoryLimitPerRequest is the memory limit over the request: a
	// quarter more than the peak, for the informer caches to grow by a
	// quarter before the pod is killed for it, where a CPU limit only
	// slows a process down.
	MemoryLimitPerRequest = 1.25
	// GOMEMLIMITShare is the GOMEMLIMIT to set, as a share of the memory
	// limit: near the limit the Go runtime collects more often instead of
	// letting the heap reach the limit, and the rest is for what it does
	// not count (the kernel's page cache of the process, cgo).
	GOMEMLIMITShare = 0.9
	// MinReconciles is the fewest reconciles finished in a window whose mean
	// work time Little's law uses (Window.Figures): the mean of fewer is
	// noise, and one attempt that waited out a stall or a Retry-After makes
	// it seconds (on a real API server throttled to one seat, a 3 s summary
	// line with one reconcile of 12.6 s recommended 55 workers against 16).
	MinReconciles = 5
	// SaturatedAt is the worker utilization from which a queue counts as
	// saturated: its coalesced adds then count as arrivals too (its adds
	// measure only what the workers could take).
	SaturatedAt = 0.9
	// LargestPodCores and LargestPodMemory are the largest pod a replica of
	// a sharded fleet is given before the fleet takes one more shard (the
	// rules' fleet:workqueue_shards_needed): a node's share a controller
	// can usually have. A user with larger nodes edits them.
	LargestPodCores  = 4
	LargestPodMemory = 8 << 30
	// HotShardSkew is the busiest replica's arrivals per part of the hash
	// space over the fleet's mean from which one shard is hot: a uniform
	// hash keeps a shard of hundreds of objects within a few percent.
	HotShardSkew = 1.5
)
