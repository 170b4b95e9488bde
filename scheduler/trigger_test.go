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

// TestSource: a run's source is that of the add that set its ready time,
// as its trigger is: an add without one clears an earlier add's, an add
// that does not move the ready time leaves it, and the next run starts
// without one. Inspect shows it for the keys waiting and the runs in
// flight.
func TestSource(t *testing.T) {
	s, fc := newFake(t, named())
	ctx := context.Background()
	upd := func(key, source string) {
		s.AddWithOptions(ctx, AddOptions{Trigger: TriggerUpdate, Source: source}, key)
	}
	upd("for", "ConfigMap")
	// A requeue pending, then a Secret's event: the event makes it ready
	// now, and says where it came from.
	s.AddAfter("owned", time.Hour)
	upd("owned", "Secret")
	// A Secret's event, then a plain add while ready: the event decides.
	upd("kept", "Secret")
	s.Add("kept")
	// A Secret's event delayed, then a plain add that makes it ready: the
	// plain add decides, and says nothing.
	s.AddWithOptions(ctx, AddOptions{After: time.Hour, Source: "Secret"}, "cleared")
	s.Add("cleared")

	want := map[string]string{"for": "ConfigMap", "owned": "Secret", "kept": "Secret", "cleared": ""}
	for _, p := range s.Inspect(100).Oldest {
		if p.Source != want[p.Key] {
			t.Errorf("Inspect: %s waits with source %q, want %q", p.Key, p.Source, want[p.Key])
		}
	}
	fc.Step(time.Minute)
	for range len(want) {
		it := mustGet(t, s)
		if it.Source != want[it.Key] {
			t.Errorf("Item of %s: source %q, want %q", it.Key, it.Source, want[it.Key])
		}
		if r := s.Inspect(100).Running; len(r) != 1 || r[0].Source != it.Source {
			t.Errorf("Inspect while %s runs: %+v, want its source %q", it.Key, r, it.Source)
		}
		// Added again while it runs, without a source: the next run says
		// nothing, the run in flight keeps its own.
		s.Add(it.Key)
		if r := s.Inspect(100).Running; len(r) != 1 || r[0].Source != it.Source {
			t.Errorf("Inspect after a plain add of %s: %+v, want the running source %q", it.Key, r, it.Source)
		}
		s.Done(it.Key)
	}
	for range len(want) {
		it := mustGet(t, s)
		if it.Source != "" {
			t.Errorf("the run of %s after a plain add has source %q, want none", it.Key, it.Source)
		}
		s.Done(it.Key)
	}
}
