package otelqueue

import (
	"strconv"
	"sync"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/scheduler"
)

// priorityOverflow is the `priority` value under which the depth of every
// priority beyond the first maxPriorities of a queue is summed, as
// controller-runtime's "exceeded_cardinality_limit".
const priorityOverflow = "exceeded_cardinality_limit"

// maxPriorities is the number of distinct priorities a queue's depth is
// reported under, each as its own series, as controller-runtime's limit: a
// queue that uses more has the rest summed under priorityOverflow. The
// priorities are learned at collection, highest first among those
// scheduler.Scheduler.DepthByPriority reports (which may include recently
// drained ones), priority 0 from the start; a learned priority keeps its
// series, and so does priorityOverflow once used (at 0 when empty).
const maxPriorities = 25

// depthByPriority reports a scheduler's `workqueue.depth` by `priority`. A
// priority seen once keeps its series, at 0 when no key is ready at it (as
// controller-runtime's gauge). Priority 0, the default, is always reported,
// so that an idle queue has a depth series.
type depthByPriority struct {
	base []attribute.KeyValue

	mu         sync.Mutex // collection may run for several readers at once
	known      map[int]metric.MeasurementOption
	order      []int // known, in the order seen
	overflow   metric.MeasurementOption
	overflowed bool // priorityOverflow has been used
	buf        []scheduler.PriorityDepth
	sums       map[int]int64
}

func newDepthByPriority(attrs attribute.Set) *depthByPriority {
	d := &depthByPriority{
		base:  attrs.ToSlice(),
		known: map[int]metric.MeasurementOption{},
		sums:  map[int]int64{},
	}
	d.overflow = d.option(priorityOverflow)
	d.learn(0)
	return d
}

func (d *depthByPriority) option(priority string) metric.MeasurementOption {
	kvs := append(append(make([]attribute.KeyValue, 0, len(d.base)+1), d.base...), semconv.AttrPriority.String(priority))
	return metric.WithAttributeSet(attribute.NewSet(kvs...))
}

// learn gives priority p its own series if the limit allows; it reports
// whether p has one.
func (d *depthByPriority) learn(p int) bool {
	if _, ok := d.known[p]; ok {
		return true
	}
	if len(d.known) >= maxPriorities {
		return false
	}
	d.known[p] = d.option(strconv.Itoa(p))
	d.order = append(d.order, p)
	return true
}

// observeDepth reports the depth of s by priority.
func observeDepth[K comparable](d *depthByPriority, s *scheduler.Scheduler[K], o metric.Observer, inst metric.Int64ObservableUpDownCounter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf = s.DepthByPriority(d.buf[:0])
	var overflow int64
	for _, pd := range d.buf {
		if d.learn(pd.Priority) {
			d.sums[pd.Priority] += int64(pd.Depth)
		} else {
			overflow += int64(pd.Depth)
			d.overflowed = true
		}
	}
	for _, p := range d.order {
		o.ObserveInt64(inst, d.sums[p], d.known[p])
		d.sums[p] = 0
	}
	if d.overflowed {
		// Reported from then on, at 0 too, rather than vanishing.
		o.ObserveInt64(inst, overflow, d.overflow)
	}
}
