package main

import (
	"context"
	"log"
	"time"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// summarize prints one line of queue numbers every interval, from Stats:
// what a user sees with no other service running.
func summarize(ctx context.Context, every time.Duration, q *scheduler.Scheduler[string], r *otelqueue.Runner[string]) {
	t := time.NewTicker(every)
	defer t.Stop()
	prev, prevRun, last := q.Stats(), r.Stats(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st, rs := q.Stats(), r.Stats()
			secs := now.Sub(last).Seconds()
			done := func(s otelqueue.RunnerStats) uint64 {
				return s.Success + s.Error + s.Requeue + s.RequeueAfter + s.Panic
			}
			log.Printf("queue %s: depth=%d delayed=%d in_flight=%d oldest=%v adds/s=%.1f retries/s=%.1f reconciles/s=%.1f errors=%d",
				q.Name(), st.Depth, st.Delayed, st.InFlight, st.OldestPending.Round(time.Millisecond),
				float64(st.Adds-prev.Adds)/secs, float64(st.Retries-prev.Retries)/secs,
				float64(done(rs)-done(prevRun))/secs, rs.Error)
			prev, prevRun, last = st, rs, now
		}
	}
}
