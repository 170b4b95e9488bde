package main

import (
	"context"
	"log"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/examplecluster"
	"github.com/otelqueue/otelqueue/scheduler"
)

// summarize prints the queue's numbers every interval, from Stats and
// DepthByPriority, once the controller has built its queue.
func summarize(ctx context.Context, every time.Duration, otq *controllerruntime.Controller[reconcile.Request], m *examplecluster.Meter) {
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
		}
		cur := m.Read(st)
		if prev != nil && q != nil {
			log.Printf("queue %s: depth=%d by priority=%v delayed=%d in_flight=%d oldest=%v %s",
				q.Name(), st.Depth, q.DepthByPriority(nil), st.Delayed, st.InFlight, st.OldestPending.Round(time.Millisecond), m.Line(*prev, cur))
		}
		prev = &cur
	}
}
