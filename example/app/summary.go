package main

import (
	"context"
	"log"
	"time"

	"github.com/otelqueue/otelqueue/example/internal/examplecluster"
	"github.com/otelqueue/otelqueue/scheduler"
)

// summarize prints one line of queue numbers every interval, from Stats:
// what a user sees with no other service running. The counts are rates
// over the interval (the Meter's, errors/s included); the first from prev,
// read before the workers started.
func summarize(ctx context.Context, every time.Duration, q *scheduler.Scheduler[string], m *examplecluster.Meter, prev examplecluster.Reading) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cur := m.Read(q.Stats())
			st := cur.Queue
			log.Printf("queue %s: depth=%d delayed=%d in_flight=%d oldest=%v %s",
				q.Name(), st.Depth, st.Delayed, st.InFlight, st.OldestPending.Round(time.Millisecond), m.Line(prev, cur))
			prev = cur
		}
	}
}
