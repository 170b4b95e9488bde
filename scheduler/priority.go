package scheduler

import (
	"cmp"
	"slices"
)

// PriorityDepth is the number of keys ready at one priority: see
// [Scheduler.DepthByPriority].
type PriorityDepth struct {
	// Priority is the priority of the keys (see AddOptions.Priority).
	Priority int
	// Depth is the number of keys ready at Priority and waiting for a worker.
	Depth int
}

// DepthByPriority appends to dst the ready depth of each priority the queue
// holds keys at, highest first, and returns the extended slice: the
// depth-by-priority of controller-runtime's priority queue. The depths sum
// to Stats().Depth at one instant. A priority keys were recently ready at
// may be reported with a depth of 0: the queue keeps the levels of drained
// priorities, so that a gauge by priority goes back to 0 rather than
// vanishing, as long as it holds at most 16 priorities; beyond, the least
// recently drained ones are dropped. Delayed and held keys count at no
// priority.
//
// Like Stats, DepthByPriority takes the queue lock, for a time that grows
// with the number of priorities, not of keys. It allocates only when dst
// must grow.
func (s *Scheduler[K]) DepthByPriority(dst []PriorityDepth) []PriorityDepth {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.delayed) > 0 {
		s.promoteLocked(s.now())
	}
	start := len(dst)
	for _, l := range s.ready.levels {
		dst = append(dst, PriorityDepth{Priority: l.prio, Depth: l.n})
	}
	slices.SortFunc(dst[start:], func(a, b PriorityDepth) int { return cmp.Compare(b.Priority, a.Priority) })
	return dst
}
