package scheduler

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// steppedClock is a fake clock whose wall clock was stepped by step after
// the scheduler's creation, as NTP may do; its monotonic Since is not.
type steppedClock struct {
	*testingclock.FakeClock
	step time.Duration
}

func (c *steppedClock) Now() time.Time { return c.FakeClock.Now().Add(c.step) }

// startObserver records the start time Done reports.
type startObserver struct{ started time.Time }

func (o *startObserver) Dequeued(ctx context.Context, _ *Item[string]) context.Context { return ctx }
func (o *startObserver) Done(_ context.Context, _ string, started, _ time.Time) {
	o.started = started
}

// monotonicObserver is an Observer whose NeedsWallClock says it needs no
// wall clock.
type monotonicObserver struct{ startObserver }

func (*monotonicObserver) NeedsWallClock() bool { return false }

// wallObserver is an Observer whose NeedsWallClock says it needs the wall
// clock.
type wallObserver struct{ startObserver }

func (*wallObserver) NeedsWallClock() bool { return true }

var (
	_ Observer[string]  = (*monotonicObserver)(nil)
	_ wallClockObserver = (*monotonicObserver)(nil)
	_ wallClockObserver = (*wallObserver)(nil)
)

// An Observer gets times against a fresh wall-clock reading unless it has
// the optional method NeedsWallClock and it returns false: it then gets the
// monotonic offset from the scheduler's creation.
func TestWallClockObserver(t *testing.T) {
	for _, tc := range []struct {
		name string
		obs  interface {
			Observer[string]
			start() time.Time
		}
		wantStepped bool
	}{
		{"plain observer", &startObserver{}, true},
		{"NeedsWallClock false", &monotonicObserver{}, false},
		{"NeedsWallClock true", &wallObserver{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &steppedClock{FakeClock: testingclock.NewFakeClock(t0)}
			s := New(Config[string]{Clock: c})
			defer s.ShutDown()
			s.SetObserver(tc.obs)
			c.step = time.Hour
			s.Add("a")
			k, _ := s.Get()
			s.Done(k)
			want := t0
			if tc.wantStepped {
				want = t0.Add(time.Hour)
			}
			if got := tc.obs.start(); !got.Equal(want) {
				t.Errorf("Done got started = %v, want %v", got, want)
			}
		})
	}
}

func (o *startObserver) start() time.Time { return o.started }
