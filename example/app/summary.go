package main

import (
	"context"
	"log"
	"time"

	"github.com/otelqueue/otelqueue/internal/examplecluster"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// summarize prints one line of queue numbers every interval, from Stats:
// what a user sees with no other service running.
func summarize(ctx context.Context, every time.Duration, q *scheduler.Scheduler[string], r *otelqueue.Runner[string], m *examplecluster.Meter) {
	t := time.NewTicker(every)
	defer t.Stop()
	prev := m.Read(q.Stats())
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cur := m.Read(q.Stats())
			st := cur.Queue
			log.Printf("queue %s: depth=%d delayed=%d in_flight=%d oldest=%v errors=%d %s",
				q.Name(), st.Depth, st.Delayed, st.InFlight, st.OldestPending.Round(time.Millisecond), r.Stats().Outcomes[otelqueue.OutcomeError], m.Line(prev, cur))
			prev = cur
		}
	}
}
