package otelqueue

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/clientwork"
)

// TestClientStatsWholeAttempts: ClientStats read while attempts end holds,
// for every attempt it counts, all of its sums: each attempt here makes one
// request, so a reader never sees fewer requests than attempts (one did:
// 1 attempt, its work, 0 requests, when attempts were counted first).
func TestClientStatsWholeAttempts(t *testing.T) {
	cfg := newConfig([]Option{})
	c := newClientInstruments(newInstruments(&cfg))
	const attempts = 20000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if st := c.stats(); st.Requests < st.Attempts {
				t.Errorf("ClientStats %+v: fewer requests than attempts, each of which made one", st)
				return
			}
		}
	})
	for range attempts {
		var w clientwork.Work
		w.Begin(time.Now())
		w.RoundTrip(time.Millisecond, time.Now(), false, false)
		c.record(context.Background(), &w, 2*time.Millisecond, nil)
	}
	close(stop)
	wg.Wait()
	if st := c.stats(); st.Attempts != attempts || st.Requests != attempts {
		t.Errorf("ClientStats %+v, want %d attempts and requests", st, attempts)
	}
}
