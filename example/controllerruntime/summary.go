package main

import (
	"context"
	"log"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
	"github.com/otelqueue/otelqueue/scheduler"
)

// summarize prints the queue's numbers every interval, from Stats and
// DepthByPriority, once the controller has built its queue. Before that,
// with leader election (elected not nil) and until this replica leads, it
// says the replica is standby without a queue (no -warmup: the controller
// starts its sources when it leads).
func summarize(ctx context.Context, every time.Duration, otq *controllerruntime.Controller[reconcile.Request], m *examplecluster.Meter, elected <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	var prev *examplecluster.Reading
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var st scheduler.Stats
		q := otq.Queue()
		if q != nil {
			st = q.Stats()
		} else if elected != nil && !isClosed(elected) {
			log.Printf("queue %s: standby, no queue yet: the controller starts when this replica leads", controllerName)
		}
		cur := m.Read(st)
		if prev != nil && q != nil {
			log.Printf("queue %s: depth=%d by priority=%v delayed=%d in_flight=%d oldest=%v %s",
				q.Name(), st.Depth, q.DepthByPriority(nil), st.Delayed, st.InFlight, st.OldestPending.Round(time.Millisecond), m.Line(*prev, cur))
		}
		prev = &cur
	}
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
