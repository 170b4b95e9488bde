package scheduler

import (
	"context"
	"testing"
	"time"
)

// nextObs records NextRun calls.
type nextObs struct {
	*recObserver[string]
	callLog // "<key> <trigger> in <delay>"
}

func (o *nextObs) NextRun(_ context.Context, key string, ended, next time.Time, trigger Trigger) {
	o.Add(key + " " + trigger.String() + " in " + next.Sub(ended).String())
}

// TestNextRun: an Observer with NextRun hears, at a run's Done, when and
// for what its key runs next; in client-go's order and in
// controller-runtime's (OrderByAdd), where a key added while it runs waits
// in line.
func TestNextRun(t *testing.T) {
	for _, crOrder := range []bool{false, true} {
		s, fc := newFake(t, Config[string]{Name: "test", OrderByAdd: crOrder})
		obs := &nextObs{recObserver: newRecObserver[string]()}
		s.SetObserver(obs)
		for _, tc := range []struct {
			key    string
			during func()
			want   string
		}{
			{"requeued", func() { s.AddAfter("requeued", time.Minute) }, "requeued requeue_after in 1m0s"},
			{"changed", func() { s.AddWithOptions(context.Background(), AddOptions{Trigger: TriggerDelete}, "changed") }, "changed delete in 0s"},
			{"done", nil, ""},
		} {
			s.Add(tc.key)
			mustGetKey(t, s, tc.key)
			fc.Step(time.Second)
			if tc.during != nil {
				tc.during()
			}
			s.Done(tc.key)
			got := obs.Take()
			if tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
				t.Errorf("OrderByAdd %v, %s: NextRun calls %q, want %q", crOrder, tc.key, got, tc.want)
			}
			for s.Len() > 0 { // the run added while it ran
				s.Done(mustGet(t, s).Key)
			}
			obs.Take()
		}
	}
}
