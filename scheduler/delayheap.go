package scheduler

// delayHeap is a 4-ary min-heap of delayed entries ordered by ready time,
// and among entries ready at the same instant by the order they were pushed
// (first in, first out, as controller-runtime's priority queue).
// Each node keeps its entry's ready time inline, so comparisons never leave
// the heap's array, and four siblings share a cache line; each entry knows
// its index, so a ready time can move, or an entry leave, in O(log n).
type delayHeap[K comparable] []heapNode[K]

// heapNode is a delayed entry in a delayHeap, with its ready time.
type heapNode[K comparable] struct {
	at  int64  // == e.readyAt
	ord uint64 // push order: breaks ties of at
	e   *entry[K]
}

// before reports whether a comes out of the heap before b.
func (a *heapNode[K]) before(b *heapNode[K]) bool {
	return a.at < b.at || a.at == b.at && a.ord < b.ord
}

// heapArity is the number of children of a node of a delayHeap.
const heapArity = 4

// set puts n at index i and records i in its entry.
func (h delayHeap[K]) set(i int, n heapNode[K]) {
	h[i] = n
	n.e.heapIdx = int32(i)
}

// push adds e, at its ready time, as the ord-th push.
func (h *delayHeap[K]) push(e *entry[K], ord uint64) {
	*h = append(*h, heapNode[K]{at: e.readyAt, ord: ord, e: e})
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
	n := heapNode[K]{at: h[i].e.readyAt, ord: h[i].ord, e: h[i].e}
	if !h.down(i, n) {
		h.up(i, n)
	}
}

// up places n at index j or above, moving larger parents down.
func (h delayHeap[K]) up(j int, n heapNode[K]) {
	for j > 0 {
		p := (j - 1) / heapArity
		if !n.before(&h[p]) {
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
			if h[c].before(&h[m]) {
				m = c
			}
		}
		if !h[m].before(&n) {
			break
		}
		h.set(i, h[m])
		i = m
	}
	h.set(i, n)
	return i > i0
}

// countUpTo returns the number of entries whose ready time is at most at:
// a walk of the nodes that are, since a node's children are never before
// it, in O(count).
func (h delayHeap[K]) countUpTo(at int64) int {
	if len(h) == 0 || h[0].at > at {
		return 0
	}
	n := 0
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		for c := heapArity*i + 1; c <= heapArity*i+heapArity && c < len(h); c++ {
			if h[c].at <= at {
				stack = append(stack, c)
			}
		}
	}
	return n
}
