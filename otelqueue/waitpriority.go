package otelqueue

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// waitByPriority is the histogram of the queue wait by the priority of the
// key's run (WithWaitByPriority), and its record options by priority, so
// that the wait of real changes can be told from that of
// controller-runtime's initial list and resyncs (handler.LowPriority): the
// queue's attributes and `priority`,
// for at most maxPriorities priorities per queue, priority 0 among them,
// and priorityOverflow for the rest, as the depth is bounded. A priority
// is learned at its first record; priority 0, the default, costs no
// lookup.
type waitByPriority struct {
	hist metric.Float64Histogram
	base []attribute.KeyValue
	zero []metric.RecordOption

	mu       sync.Mutex // serialises learning
	known    atomic.Pointer[map[int][]metric.RecordOption]
	full     atomic.Bool // maxPriorities learned: the rest overflow
	overflow []metric.RecordOption
}

func newWaitByPriority(hist metric.Float64Histogram, attrs attribute.Set) *waitByPriority {
	w := &waitByPriority{hist: hist, base: attrs.ToSlice()}
	w.zero = w.option("0")
	w.overflow = w.option(priorityOverflow)
	return w
}

func (w *waitByPriority) option(priority string) []metric.RecordOption {
	kvs := append(append(make([]attribute.KeyValue, 0, len(w.base)+1), w.base...), semconv.AttrPriority.String(priority))
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// options returns the record options of a run at priority p.
func (w *waitByPriority) options(p int) []metric.RecordOption {
	if p == 0 {
		return w.zero
	}
	if m := w.known.Load(); m != nil {
		if o, ok := (*m)[p]; ok {
			return o
		}
	}
	if w.full.Load() {
		return w.overflow
	}
	return w.learn(p)
}

// learn gives p its own series, copying the map so that readers take no
// lock, unless maxPriorities are known.
func (w *waitByPriority) learn(p int) []metric.RecordOption {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[int][]metric.RecordOption{}
	if old := w.known.Load(); old != nil {
		if o, ok := (*old)[p]; ok {
			return o
		}
		m = maps.Clone(*old)
	}
	if len(m)+1 >= maxPriorities { // +1: priority 0
		w.full.Store(true)
		return w.overflow
	}
	o := w.option(strconv.Itoa(p))
	m[p] = o
	w.known.Store(&m)
	return o
}
