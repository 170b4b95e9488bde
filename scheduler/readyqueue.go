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
	// parked is the drained level left in the heaps because it was the only
	// one there: a queue whose keys all have one priority drains after
	// nearly every Get, and its next key comes at the same priority. Set
	// only while no key is ready.
	parked *level[K]
}

// level holds the ready keys of one priority. While it has any, its first
// slot is valid and it holds at most n+maxStale stale slots.
type level[K comparable] struct {
	prio int
	n    int // ready entries at this priority
	q    fifo[K]
	idx  [2]int32 // index in byPrio and byAge; -1 when out of them
	idle bool     // in readyQueue.idle
}

// len returns the number of ready entries.
func (r *readyQueue[K]) len() int { return r.n }

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

// push makes e ready at its priority.
func (r *readyQueue[K]) push(e *entry[K]) {
	e.place = inReady
	e.seq++
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
	l.q.push(slot[K]{e: e, seq: e.seq})
	l.n++
	r.n++
	switch {
	case l.n > 1:
	case l == r.parked:
		r.parked = nil
		r.byAge.update(l, e.readySince())
	default:
		r.activate(l, e)
	}
}

// raise moves the ready entry e to priority p > e.prio, at the end of that
// level. Its slot in the old level becomes stale.
func (r *readyQueue[K]) raise(e *entry[K], p int) {
	l := r.levels[e.priority()]
	l.n--
	r.n--
	e.setPriority(p)
	r.push(e)
	r.settle(l, !l.q.peek().valid())
}

// pop takes the oldest entry of the highest priority; r.len() must be > 0.
func (r *readyQueue[K]) pop() *entry[K] {
	l := r.byPrio.nodes[0].l
	e := l.q.pop().e // the first slot of a level with ready keys is valid
	l.n--
	r.n--
	r.settle(l, true)
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

// activate puts l, whose first ready entry e just came, into the heaps.
func (r *readyQueue[K]) activate(l *level[K], e *entry[K]) {
	if l.idle {
		r.unlinkIdle(l)
	}
	r.byPrio.push(l, ^int64(l.prio)) // ^p = -p-1: highest first, and no overflow at math.MinInt
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
		if len(r.byPrio.nodes) == 1 {
			r.parked = l
		} else {
			r.deactivate(l)
		}
		return
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
	r.byPrio.remove(l)
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
