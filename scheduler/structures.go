package scheduler

import "slices"

// fifo is a growable ring of slots: the keys ready for a worker at one
// priority, in the order they became ready.
type fifo[K comparable] struct {
	buf  []slot[K]
	head int
	n    int
}

// slot is a place in a fifo. It is stale when its entry has moved since
// (seq differs) or is no longer ready: raising a ready key's priority pushes
// it again at its new priority instead of searching the old ring.
type slot[K comparable] struct {
	e   *entry[K]
	seq uint32
}

func (s slot[K]) valid() bool { return s.e.seq == s.seq && s.e.place == inReady }

func (q *fifo[K]) push(sl slot[K]) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = sl
	q.n++
}

func (q *fifo[K]) peek() slot[K] { return q.buf[q.head] }

func (q *fifo[K]) pop() slot[K] {
	sl := q.buf[q.head]
	q.buf[q.head] = slot[K]{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	if q.n == 0 {
		q.head = 0
	}
	return sl
}

func (q *fifo[K]) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]slot[K], size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

// readyQueue holds the ready keys: one fifo per priority, highest priority
// first. A queue whose keys all have priority 0 has a single level.
type readyQueue[K comparable] struct {
	levels []level[K] // by priority, highest first
	n      int        // ready entries (stale slots not counted)
}

type level[K comparable] struct {
	prio int
	n    int // ready entries at this priority
	q    fifo[K]
}

func (r *readyQueue[K]) len() int { return r.n }

// maxIdleLevels bounds the levels kept while empty: a queue that sees many
// distinct priorities over time drops the empty ones, so that its memory and
// the cost of pop stay bounded by the priorities of the keys it holds.
const maxIdleLevels = 16

// level returns the level of priority p, creating it in order; creating
// one when maxIdleLevels are kept first drops the empty ones.
func (r *readyQueue[K]) level(p int) *level[K] {
	i := 0
	for ; i < len(r.levels); i++ {
		if l := &r.levels[i]; l.prio == p {
			return l
		} else if l.prio < p {
			break
		}
	}
	if len(r.levels) >= maxIdleLevels {
		r.prune()
		i, _ = slices.BinarySearchFunc(r.levels, p, func(l level[K], p int) int { return p - l.prio })
	}
	r.levels = slices.Insert(r.levels, i, level[K]{prio: p})
	return &r.levels[i]
}

// push makes e ready at its priority.
func (r *readyQueue[K]) push(e *entry[K]) {
	e.place = inReady
	e.seq++
	var l *level[K]
	if len(r.levels) > 0 && r.levels[0].prio == int(e.prio) {
		l = &r.levels[0] // the common case: one priority
	} else {
		l = r.level(int(e.prio))
	}
	l.q.push(slot[K]{e: e, seq: e.seq})
	l.n++
	r.n++
}

// raise moves the ready entry e to priority p, at the end of that level.
func (r *readyQueue[K]) raise(e *entry[K], p int32) {
	r.level(int(e.prio)).n--
	r.n--
	e.prio = p
	r.push(e)
}

// prune drops the empty levels. The slots left in an empty level are all
// stale.
func (r *readyQueue[K]) prune() {
	r.levels = slices.DeleteFunc(r.levels, func(l level[K]) bool { return l.n == 0 })
}

// pop takes the oldest entry of the highest priority; r.len() must be > 0.
func (r *readyQueue[K]) pop() *entry[K] {
	for i := range r.levels {
		l := &r.levels[i]
		for l.n > 0 {
			if sl := l.q.pop(); sl.valid() {
				l.n--
				r.n--
				return sl.e
			}
		}
	}
	panic("scheduler: pop of an empty ready queue")
}

// oldest returns the entry that has been ready the longest, at any
// priority, or nil.
func (r *readyQueue[K]) oldest() *entry[K] {
	var old *entry[K]
	for i := range r.levels {
		l := &r.levels[i]
		if l.n == 0 {
			continue
		}
		for !l.q.peek().valid() {
			l.q.pop()
		}
		if e := l.q.peek().e; old == nil || e.readySince() < old.readySince() {
			old = e
		}
	}
	return old
}

// delayHeap is a 4-ary min-heap of delayed entries ordered by ready time.
// Each node keeps its entry's ready time inline, so comparisons never leave
// the heap's array, and four siblings share a cache line; each entry knows
// its index, so a ready time can move, or an entry leave, in O(log n).
type delayHeap[K comparable] []heapNode[K]

type heapNode[K comparable] struct {
	at int64 // == e.readyAt
	e  *entry[K]
}

const heapArity = 4

func (h delayHeap[K]) set(i int, n heapNode[K]) {
	h[i] = n
	n.e.heapIdx = int32(i)
}

func (h *delayHeap[K]) push(e *entry[K]) {
	*h = append(*h, heapNode[K]{at: e.readyAt, e: e})
	h.up(len(*h)-1, (*h)[len(*h)-1])
}

// remove takes out the entry at index i.
func (h *delayHeap[K]) remove(i int) *entry[K] {
	old := *h
	last := len(old) - 1
	e := old[i].e
	n := old[last]
	old[last] = heapNode[K]{}
	*h = old[:last]
	if i != last {
		if !h.down(i, n) {
			h.up(i, n)
		}
	}
	e.heapIdx = -1
	return e
}

// fix restores the order after the ready time of the entry at index i
// changed.
func (h delayHeap[K]) fix(i int) {
	n := heapNode[K]{at: h[i].e.readyAt, e: h[i].e}
	if !h.down(i, n) {
		h.up(i, n)
	}
}

// up places n at index j or above, moving larger parents down.
func (h delayHeap[K]) up(j int, n heapNode[K]) {
	for j > 0 {
		p := (j - 1) / heapArity
		if h[p].at <= n.at {
			break
		}
		h.set(j, h[p])
		j = p
	}
	h.set(j, n)
}

// down places n at index i or below, moving smaller children up; it reports
// whether n moved.
func (h delayHeap[K]) down(i int, n heapNode[K]) bool {
	i0 := i
	for {
		first := heapArity*i + 1
		if first >= len(h) {
			break
		}
		m := first
		for c := first + 1; c < first+heapArity && c < len(h); c++ {
			if h[c].at < h[m].at {
				m = c
			}
		}
		if h[m].at >= n.at {
			break
		}
		h.set(i, h[m])
		i = m
	}
	h.set(i, n)
	return i > i0
}
