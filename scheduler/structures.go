package scheduler

// fifo is a growable ring of entries: the keys ready for a worker, in the
// order they became ready.
type fifo[K comparable] struct {
	buf  []*entry[K]
	head int
	n    int
}

func (q *fifo[K]) len() int { return q.n }

func (q *fifo[K]) push(e *entry[K]) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = e
	q.n++
}

func (q *fifo[K]) peek() *entry[K] { return q.buf[q.head] }

func (q *fifo[K]) pop() *entry[K] {
	e := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	if q.n == 0 {
		q.head = 0
	}
	return e
}

func (q *fifo[K]) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]*entry[K], size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

// delayHeap is a binary min-heap of delayed entries ordered by ready time;
// each entry knows its index, so a ready time can move in O(log n).
type delayHeap[K comparable] []*entry[K]

func (h delayHeap[K]) less(i, j int) bool { return h[i].readyAt < h[j].readyAt }

func (h delayHeap[K]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i)
	h[j].heapIdx = int32(j)
}

func (h *delayHeap[K]) push(e *entry[K]) {
	e.heapIdx = int32(len(*h))
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

// remove takes out the entry at index i.
func (h *delayHeap[K]) remove(i int) *entry[K] {
	old := *h
	n := len(old) - 1
	if i != n {
		old.swap(i, n)
		if !old.down(i, n) {
			old.up(i)
		}
	}
	e := old[n]
	old[n] = nil
	*h = old[:n]
	e.heapIdx = -1
	return e
}

// fix restores the order after the ready time at index i changed.
func (h delayHeap[K]) fix(i int) {
	if !h.down(i, len(h)) {
		h.up(i)
	}
}

func (h delayHeap[K]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h delayHeap[K]) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
