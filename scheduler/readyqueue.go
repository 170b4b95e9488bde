package scheduler

import "slices"

// readyQueue holds the ready keys: one fifo (a level) per priority. The
// levels that hold ready keys are in two heaps, one by priority for pop and
// one by the time their first key became ready for oldest, so that every
// operation costs O(log P) for P priorities with ready keys. A drained
// level leaves both heaps and stays, empty, among the idle levels, so that
// a priority used again soon finds its ring (a queue whose keys all have
// priority 0 keeps a single level) and DepthByPriority reports it at 0; the
// least recently drained idle levels are dropped once more than
// maxIdleLevels levels are kept.
type readyQueue[K comparable] struct {
	levels map[int]*level[K] // every level kept, ready keys or idle
	// levelsPeak is the most levels the map has held since it was made: a
	// Go map keeps its buckets when emptied, so evict makes a new one once
	// the levels fall far below it.
	levelsPeak int
	byPrio     levelHeap[K] // levels with ready keys, highest priority first
	byAge      levelHeap[K] // levels with ready keys, by their first key's readySince
	idle       []*level[K]  // idle levels, least recently drained first; at most maxIdleLevels
	spare      []*level[K]  // dropped levels, kept for reuse
	n          int          // ready entries (stale slots not counted)
	// eligible is the number of ready entries that can be handed out: all
	// of them but the locked ones (see level.locked).
	eligible int
	// parked is the drained level left in the heaps because it was the only
	// one there: a queue whose keys all have one priority drains after
	// nearly every Get, and its next key comes at the same priority. Set
	// only while no key is ready.
	parked *level[K]
}

// A level is in byAge while it holds ready keys, and in byPrio while one of
// them can be handed out; the parked level, empty, stays in both.

// level holds the ready keys of one priority. While it has any, its first
// slot is valid and it holds at most n+maxStale stale slots.
type level[K comparable] struct {
	prio int
	n    int // ready entries at this priority
	// locked is the number of those whose key is being processed
	// (Config.OrderByAdd): counted, and kept in their place, but
	// not handed out until their run in flight is done.
	locked int
	q      fifo[K]
	idx    [2]int32 // index in byPrio and byAge; -1 when out of them
	idle   bool     // in readyQueue.idle
}

// len returns the number of ready entries, locked ones included.
func (r *readyQueue[K]) len() int { return r.n }

// eligibleLen returns the number of ready entries that can be handed out.
func (r *readyQueue[K]) eligibleLen() int { return r.eligible }

// maxIdleLevels bounds the levels kept while empty: a queue that sees many
// distinct priorities over time drops the least recently drained ones, so
// that its memory stays bounded by the priorities of the keys it holds.
const maxIdleLevels = 16

// maxStale is how many stale slots a level holds beyond its number of ready
// keys before it is compacted.
const maxStale = 32

// level returns the level of priority p, making it if needed.
func (r *readyQueue[K]) level(p int) *level[K] {
	if l, ok := r.levels[p]; ok {
		return l
	}
	l := reuse(&r.spare)
	l.prio, l.idx = p, [2]int32{-1, -1}
	if r.levels == nil { // the first level: the heaps are empty
		r.levels = make(map[int]*level[K])
		r.byPrio.which, r.byAge.which = 0, 1
	}
	r.levels[p] = l
	r.levelsPeak = max(r.levelsPeak, len(r.levels))
	r.evict()
	return l
}

// push makes e ready at its priority, in its place by ord (the end of its
// level for a new ord); locked while e is being processed.
func (r *readyQueue[K]) push(e *entry[K], ord uint64) {
	e.place = inReady
	e.seq++
	locked := e.processing
	var l *level[K]
	if len(r.byPrio.nodes) > 0 && r.byPrio.nodes[0].l.prio == e.priority() {
		l = r.byPrio.nodes[0].l // the common case: one priority
	} else {
		if r.parked != nil {
			r.deactivate(r.parked)
			r.parked = nil
		}
		l = r.level(e.priority())
	}
	first := l.q.push(slot[K]{e: e, seq: e.seq, ord: ord})
	l.n++
	r.n++
	if locked {
		l.locked++
	} else {
		r.eligible++
	}
	switch {
	case l == r.parked:
		r.parked = nil
		r.byAge.update(l, e.readySince())
		if locked {
			r.byPrio.remove(l)
		}
	case l.n == 1:
		r.activate(l, e, !locked)
	case !locked && l.n-l.locked == 1:
		r.byPrio.push(l, prioKey(l.prio)) // its first key that can be handed out
	}
	if first && l.n > 1 { // placed before the others: the level's age changed
		r.byAge.update(l, e.readySince())
	}
}

// prioKey is a level's key in byPrio: ^p = -p-1 puts the highest priority
// first, with no overflow at math.MinInt.
func prioKey(p int) int64 { return ^int64(p) }

// unlock makes e, a ready entry locked by its run in flight, eligible now
// that the run is done, in its place among its level's keys.
func (r *readyQueue[K]) unlock(e *entry[K]) {
	l := r.levels[e.priority()]
	l.locked--
	r.eligible++
	if l.n-l.locked == 1 {
		r.byPrio.push(l, prioKey(l.prio))
	}
}

// raise moves the ready entry e to priority p > e.prio, at the end of that
// level. Its slot in the old level becomes stale.
func (r *readyQueue[K]) raise(e *entry[K], p int, ord uint64) {
	l := r.levels[e.priority()]
	l.n--
	r.n--
	if e.processing {
		l.locked--
	} else {
		r.eligible--
	}
	e.setPriority(p)
	r.push(e, ord)
	r.settle(l, !l.q.peek().valid())
}

// pop takes the oldest entry that is not locked of the highest priority
// that has one; r.eligibleLen() must be > 0. Locked entries before it keep
// their place.
func (r *readyQueue[K]) pop() *entry[K] {
	l := r.byPrio.nodes[0].l
	var e *entry[K]
	headGone := !l.q.peek().e.processing // the first slot of a level with ready keys is valid
	if headGone {
		e = l.q.pop().e
	} else {
		e = l.q.firstUnlocked()
	}
	e.place = nowhere // its slot is stale from now on
	l.n--
	r.n--
	r.eligible--
	r.settle(l, headGone)
	return e
}

// oldest returns the entry that has been ready the longest among the first
// of each priority, or nil.
func (r *readyQueue[K]) oldest() *entry[K] {
	if r.n == 0 {
		return nil
	}
	return r.byAge.nodes[0].l.q.peek().e
}

// activate puts l, whose first ready entry e just came, into byAge, and
// into byPrio when e can be handed out.
func (r *readyQueue[K]) activate(l *level[K], e *entry[K], eligible bool) {
	if l.idle {
		r.unlinkIdle(l)
	}
	if eligible {
		r.byPrio.push(l, prioKey(l.prio))
	}
	r.byAge.push(l, e.readySince())
}

// settle restores the invariants of l after it lost a ready entry (its
// first one when headGone): a level with ready keys starts with a valid
// slot, has its first key's time in byAge and few stale slots; a level with
// none is idle, or parked if it was the only one with ready keys.
func (r *readyQueue[K]) settle(l *level[K], headGone bool) {
	if l.n == 0 {
		for l.q.n > 0 {
			l.q.pop()
		}
		if r.n == 0 && len(r.byPrio.nodes) == 1 && l.idx[0] == 0 {
			r.parked = l
		} else {
			r.deactivate(l)
		}
		return
	}
	if l.n == l.locked && l.idx[0] >= 0 {
		r.byPrio.remove(l) // only locked keys left
	}
	if headGone {
		for !l.q.peek().valid() {
			l.q.pop()
		}
		r.byAge.update(l, l.q.peek().e.readySince())
	}
	if l.q.n-l.n > l.n+maxStale {
		l.q.compact()
	}
}

// deactivate takes the drained level l out of the heaps and makes it idle.
func (r *readyQueue[K]) deactivate(l *level[K]) {
	if l.idx[0] >= 0 {
		r.byPrio.remove(l)
	}
	r.byAge.remove(l)
	if len(l.q.buf) > maxIdleRing {
		l.q = fifo[K]{}
	}
	l.idle = true
	r.idle = append(r.idle, l)
	r.evict()
}

// unlinkIdle takes l out of the idle levels, which evict keeps few: at most
// maxIdleLevels.
func (r *readyQueue[K]) unlinkIdle(l *level[K]) {
	r.idle = slices.DeleteFunc(r.idle, func(m *level[K]) bool { return m == l })
	l.idle = false
}

// evict drops the least recently drained idle levels while more than
// maxIdleLevels levels are kept.
func (r *readyQueue[K]) evict() {
	for len(r.levels) > maxIdleLevels && len(r.idle) > 0 {
		l := r.idle[0]
		r.unlinkIdle(l)
		delete(r.levels, l.prio)
		if len(r.spare) < maxIdleLevels {
			r.spare = append(r.spare, l)
		}
	}
	// Release what a burst of many priorities left behind once it is
	// drained: the map's buckets and the heaps' arrays, all sized by the
	// peak. Each is rebuilt at most once per halving of its size since the
	// last rebuild, so the copies cost O(1) per level dropped.
	if r.levelsPeak > shrinkAbove && len(r.levels) <= r.levelsPeak/4 {
		m := make(map[int]*level[K], len(r.levels))
		for p, l := range r.levels {
			m[p] = l
		}
		r.levels, r.levelsPeak = m, len(m)
	}
	r.byPrio.shrink()
	r.byAge.shrink()
}

// shrinkAbove is the number of levels, or of heap slots, below which the
// scheduler keeps what it allocated: a queue of a few priorities never
// rebuilds anything.
const shrinkAbove = 4 * maxIdleLevels
