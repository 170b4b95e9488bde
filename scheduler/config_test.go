package scheduler

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config[string]
		errs []string // substrings of the error, nil for a valid Config
	}{
		{name: "zero", cfg: Config[string]{}},
		{name: "all set", cfg: Config[string]{Name: "q", MaxLinks: 3, Debounce: time.Second, DebounceMaxWait: 5 * time.Second}},
		{name: "max wait equals window", cfg: Config[string]{Debounce: time.Second, DebounceMaxWait: time.Second}},
		{name: "max wait without debounce", cfg: Config[string]{DebounceMaxWait: time.Second}},
		{name: "negative MaxLinks", cfg: Config[string]{MaxLinks: -1}, errs: []string{"MaxLinks is -1"}},
		{name: "negative Debounce", cfg: Config[string]{Debounce: -time.Second}, errs: []string{"Debounce is -1s"}},
		{name: "negative DebounceMaxWait", cfg: Config[string]{DebounceMaxWait: -time.Second}, errs: []string{"DebounceMaxWait is -1s"}},
		{name: "negative DebounceMaxWait with debounce", cfg: Config[string]{Debounce: time.Second, DebounceMaxWait: -time.Second}, errs: []string{"DebounceMaxWait is -1s"}},
		{name: "max wait shorter than window", cfg: Config[string]{Debounce: time.Second, DebounceMaxWait: time.Millisecond},
			errs: []string{"DebounceMaxWait (1ms) is shorter than Debounce (1s)"}},
		{name: "every field", cfg: Config[string]{MaxLinks: -2, Debounce: -time.Second, DebounceMaxWait: -time.Minute},
			errs: []string{"MaxLinks is -2", "Debounce is -1s", "DebounceMaxWait is -1m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.errs == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to mention %q", err, want)
				}
			}
			if n := strings.Count(err.Error(), "scheduler: "); n != len(tc.errs) {
				t.Errorf("Validate() reports %d problems, want %d: %q", n, len(tc.errs), err)
			}
		})
	}
}

func TestNewReplacesInvalidFields(t *testing.T) {
	t.Run("negative MaxLinks keeps no context", func(t *testing.T) {
		s, _ := newFake(t, Config[string]{Name: "test", MaxLinks: -5})
		s.AddContext(spanCtx(1), "a")
		s.AddContext(spanCtx(2), "a")
		it := mustGetKey(t, s, "a")
		if it.Origin.IsValid() || len(it.Links) != 0 || it.DroppedLinks != 2 {
			t.Errorf("Origin %v, Links %v, DroppedLinks %d; want none kept, 2 dropped", it.Origin, it.Links, it.DroppedLinks)
		}
		s.Done("a")
	})
	t.Run("negative Debounce disables debouncing", func(t *testing.T) {
		s, _ := newFake(t, Config[string]{Name: "test", Debounce: -time.Second, DebounceMaxWait: -time.Second})
		s.Add("a")
		it := mustGetKey(t, s, "a")
		if it.Reason != WaitImmediate {
			t.Errorf("Reason = %v, want immediate", it.Reason)
		}
		s.Done("a")
	})
	for _, maxWait := range []time.Duration{-time.Second, time.Millisecond} {
		t.Run("DebounceMaxWait "+maxWait.String()+" is raised to Debounce", func(t *testing.T) {
			s, fc := newFake(t, Config[string]{Name: "test", Debounce: time.Second, DebounceMaxWait: maxWait})
			s.Add("a")
			fc.Step(ms(500))
			s.Add("a") // would push to 1.5s, but max wait is 1s
			fc.Step(ms(500) - 1)
			mustBeEmpty(t, s)
			fc.Step(1)
			it := mustGetKey(t, s, "a")
			if !it.ReadyAt.Equal(t0.Add(time.Second)) {
				t.Errorf("ReadyAt = t0+%v, want t0+1s", it.ReadyAt.Sub(t0))
			}
			s.Done("a")
		})
	}
}
