package scheduler

import (
	"context"
	"testing"
	"time"
)

// TestTrigger: a run's trigger is that of the add that set its ready time:
// the add's kind, or what AddOptions.Trigger says; Inspect shows it for the
// keys waiting and the runs in flight.
func TestTrigger(t *testing.T) {
	s, fc := newFake(t, named())
	ctx := context.Background()
	s.Add("plain")
	s.AddAfter("requeued", time.Second)
	s.AddRateLimited("failed")
	s.AddWithOptions(ctx, AddOptions{Trigger: TriggerUpdate}, "updated")
	s.AddWithOptions(ctx, AddOptions{After: time.Second, Trigger: TriggerCreate}, "created-later")
	s.AddWithOptions(ctx, AddOptions{RateLimited: true, Trigger: TriggerUpdate}, "retried")
	// A requeue pending, then an update: the update makes it ready now.
	s.AddAfter("requeue-then-update", time.Hour)
	s.AddWithOptions(ctx, AddOptions{Trigger: TriggerUpdate}, "requeue-then-update")
	// An update ready, then a requeue later: the update still decides.
	s.AddWithOptions(ctx, AddOptions{Trigger: TriggerDelete}, "delete-then-requeue")
	s.AddAfter("delete-then-requeue", time.Hour)

	want := map[string]Trigger{
		"plain": TriggerAdd, "requeued": TriggerRequeueAfter, "failed": TriggerBackoff,
		"updated": TriggerUpdate, "created-later": TriggerCreate, "retried": TriggerBackoff,
		"requeue-then-update": TriggerUpdate, "delete-then-requeue": TriggerDelete,
	}
	for _, p := range s.Inspect(100).Oldest {
		if p.Trigger != want[p.Key] {
			t.Errorf("Inspect: %s waits with trigger %v, want %v", p.Key, p.Trigger, want[p.Key])
		}
	}
	fc.Step(time.Minute)
	got := map[string]Trigger{}
	for range len(want) {
		it := mustGet(t, s)
		got[it.Key] = it.Trigger
		if r := s.Inspect(100).Running; len(r) != 1 || r[0].Trigger != it.Trigger {
			t.Errorf("Inspect while %s runs: %+v, want its trigger %v", it.Key, r, it.Trigger)
		}
		s.Done(it.Key)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("Item of %s: trigger %v, want %v", k, got[k], w)
		}
	}
}

func TestTriggerString(t *testing.T) {
	for tr, want := range map[Trigger]string{
		TriggerAdd: "add", TriggerCreate: "create", TriggerUpdate: "update", TriggerDelete: "delete",
		TriggerGeneric: "generic", TriggerResync: "resync", TriggerInitialList: "initial_list",
		TriggerRequeueAfter: "requeue_after", TriggerBackoff: "backoff", numTriggers: "unknown", 255: "unknown",
	} {
		if got := tr.String(); got != want {
			t.Errorf("Trigger(%d).String() = %q, want %q", tr, got, want)
		}
	}
}
