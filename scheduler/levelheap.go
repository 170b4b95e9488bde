package scheduler

// levelHeap is a binary min-heap of levels by key. Each level knows its
// index in it (level.idx[which]), so a level can leave, or its key move, in
// O(log n).
type levelHeap[K comparable] struct {
	nodes []levelNode[K]
	which int // this heap's index in level.idx: 0 for byPrio, 1 for byAge
}

// levelNode is a level in a levelHeap with its key: prioKey of its priority
// in byPrio, its first key's readySince in byAge.
type levelNode[K comparable] struct {
	key int64
	l   *level[K]
}

// shrink reallocates the heap's array once it holds under a quarter of its
// capacity, to twice its length: a heap that held many levels releases
// their slots when they drain.
func (h *levelHeap[K]) shrink() {
	if c := cap(h.nodes); c > shrinkAbove && len(h.nodes) <= c/4 {
		h.nodes = append(make([]levelNode[K], 0, max(2*len(h.nodes), maxIdleLevels)), h.nodes...)
	}
}

// set puts n at index i and records i in its level.
func (h *levelHeap[K]) set(i int, n levelNode[K]) {
	h.nodes[i] = n
	n.l.idx[h.which] = int32(i)
}

// push adds l, which is not in the heap, with key key.
func (h *levelHeap[K]) push(l *level[K], key int64) {
	h.nodes = append(h.nodes, levelNode[K]{})
	h.up(len(h.nodes)-1, levelNode[K]{key: key, l: l})
}

// remove takes l, which is in the heap, out of it.
func (h *levelHeap[K]) remove(l *level[K]) {
	i := int(l.idx[h.which])
	last := len(h.nodes) - 1
	n := h.nodes[last]
	h.nodes[last] = levelNode[K]{}
	h.nodes = h.nodes[:last]
	if i != last && !h.down(i, n) {
		h.up(i, n)
	}
	l.idx[h.which] = -1
}

// update gives l, which is in the heap, the key key.
func (h *levelHeap[K]) update(l *level[K], key int64) {
	i, n := int(l.idx[h.which]), levelNode[K]{key: key, l: l}
	if !h.down(i, n) {
		h.up(i, n)
	}
}

// up places n at index j or above, moving larger parents down.
func (h *levelHeap[K]) up(j int, n levelNode[K]) {
	for j > 0 {
		p := (j - 1) / 2
		if h.nodes[p].key <= n.key {
			break
		}
		h.set(j, h.nodes[p])
		j = p
	}
	h.set(j, n)
}

// down places n at index i or below, moving smaller children up; it reports
// whether n moved.
func (h *levelHeap[K]) down(i int, n levelNode[K]) bool {
	i0 := i
	for {
		m := 2*i + 1
		if m >= len(h.nodes) {
			break
		}
		if c := m + 1; c < len(h.nodes) && h.nodes[c].key < h.nodes[m].key {
			m = c
		}
		if h.nodes[m].key >= n.key {
			break
		}
		h.set(i, h.nodes[m])
		i = m
	}
	h.set(i, n)
	return i > i0
}
