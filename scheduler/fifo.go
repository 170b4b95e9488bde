package scheduler

import "sort"

// fifo is a growable ring of slots: the keys ready for a worker at one
// priority, in the order they became ready (their slots' ord increases
// from head to tail).
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
	ord uint64 // the scheduler's order of the push (Scheduler.order)
}

// valid reports whether the slot still holds its entry's ready run.
func (s slot[K]) valid() bool { return s.e.seq == s.seq && s.e.place == inReady }

// minRing is the size of a new ring: small, as a queue that spreads its
// keys over many priorities holds few at each.
const minRing = 4

// maxIdleRing is the most slots a fifo keeps while (nearly) empty: a ring
// grown by a burst is given back as it drains.
const maxIdleRing = 256

// firstUnlocked returns the entry of the first valid slot whose key is not
// being processed; there must be one. Its slot stays, to become stale.
func (q *fifo[K]) firstUnlocked() *entry[K] {
	for i := 1; ; i++ {
		if sl := q.buf[(q.head+i)&(len(q.buf)-1)]; sl.valid() && !sl.e.processing {
			return sl.e
		}
	}
}

// push puts sl in its place by ord, growing the ring when it is full: at
// the end, unless sl comes from before the last slot (a delayed key that
// keeps its place, Config.OrderByAdd). It reports whether sl is
// now the first slot.
func (q *fifo[K]) push(sl slot[K]) bool {
	if q.n == len(q.buf) {
		q.resize(max(minRing, 2*len(q.buf)))
	}
	mask := len(q.buf) - 1
	i := q.n
	if i > 0 && q.buf[(q.head+i-1)&mask].ord > sl.ord {
		// The first slot after sl's place: every slot, stale or not, is
		// in ord order.
		i = sort.Search(q.n, func(j int) bool { return q.buf[(q.head+j)&mask].ord > sl.ord })
		for j := q.n; j > i; j-- {
			q.buf[(q.head+j)&mask] = q.buf[(q.head+j-1)&mask]
		}
	}
	q.buf[(q.head+i)&mask] = sl
	q.n++
	return i == 0
}

// peek returns the first slot; q.n must be > 0.
func (q *fifo[K]) peek() slot[K] { return q.buf[q.head] }

// pop takes out the first slot, shrinking a large ring that emptied; q.n
// must be > 0.
func (q *fifo[K]) pop() slot[K] {
	sl := q.buf[q.head]
	q.buf[q.head] = slot[K]{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	if q.n == 0 {
		q.head = 0
	}
	q.shrink()
	return sl
}

// shrink halves a large ring that is less than a quarter full.
func (q *fifo[K]) shrink() {
	if len(q.buf) > maxIdleRing && q.n < len(q.buf)/4 {
		q.resize(len(q.buf) / 2)
	}
}

// resize moves the slots to a ring of size slots, a power of two >= q.n.
func (q *fifo[K]) resize(size int) {
	buf := make([]slot[K], size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

// compact drops the stale slots, keeping the order of the others.
func (q *fifo[K]) compact() {
	mask := len(q.buf) - 1
	n := 0
	for i := 0; i < q.n; i++ {
		if sl := q.buf[(q.head+i)&mask]; sl.valid() {
			q.buf[(q.head+n)&mask] = sl
			n++
		}
	}
	for i := n; i < q.n; i++ {
		q.buf[(q.head+i)&mask] = slot[K]{}
	}
	q.n = n
	size := len(q.buf)
	for size > maxIdleRing && q.n < size/4 {
		size /= 2
	}
	if size != len(q.buf) {
		q.resize(size)
	}
}
