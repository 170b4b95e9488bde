package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestOriginAndLinks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		adds    func(s *Scheduler[string])
		origin  trace.SpanContext
		links   []trace.SpanContext
		dropped int
	}{
		{name: "no context", adds: func(s *Scheduler[string]) {
			s.Add("a")
			s.AddContext(context.Background(), "a")
		}},
		{name: "origin only", adds: func(s *Scheduler[string]) {
			s.AddContext(spanCtx(1), "a")
		}, origin: span(1)},
		{name: "first valid context is the origin", adds: func(s *Scheduler[string]) {
			s.Add("a")
			s.AddContext(context.Background(), "a")
			s.AddContext(spanCtx(1), "a")
			s.AddContext(spanCtx(2), "a")
		}, origin: span(1), links: []trace.SpanContext{span(2)}},
		{name: "links in order", adds: func(s *Scheduler[string]) {
			s.AddContext(spanCtx(1), "a")
			s.AddContext(spanCtx(3), "a")
			s.AddContext(spanCtx(2), "a")
		}, origin: span(1), links: []trace.SpanContext{span(3), span(2)}},
		{name: "duplicates not linked twice", adds: func(s *Scheduler[string]) {
			s.AddContext(spanCtx(1), "a")
			s.AddContext(spanCtx(2), "a")
			s.AddContext(spanCtx(1), "a")
			s.AddContext(spanCtx(2), "a")
			s.AddContext(spanCtx(3), "a")
			s.AddContext(spanCtx(3), "a")
		}, origin: span(1), links: []trace.SpanContext{span(2), span(3)}},
		{name: "every kind of add keeps its context", adds: func(s *Scheduler[string]) {
			s.AddAfterContext(spanCtx(1), "a", time.Second)
			s.AddRateLimitedContext(spanCtx(2), "a")
			s.AddContext(spanCtx(3), "a")
		}, origin: span(1), links: []trace.SpanContext{span(2), span(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
			tc.adds(s)
			it := mustGetKey(t, s, "a")
			checkSpans(t, it, Item[string]{Origin: tc.origin, Links: tc.links, DroppedLinks: tc.dropped})
			s.Done("a")
		})
	}
}

func TestMaxLinks(t *testing.T) {
	spans := func(from, to int) []trace.SpanContext {
		var l []trace.SpanContext
		for i := from; i < to; i++ {
			l = append(l, span(i))
		}
		return l
	}
	const adds = 12
	for _, tc := range []struct {
		maxLinks int
		origin   trace.SpanContext
		links    []trace.SpanContext
		dropped  int
	}{
		{maxLinks: 0, origin: span(0), links: spans(1, defaultMaxLinks), dropped: adds - defaultMaxLinks},
		{maxLinks: 1, origin: span(0), dropped: adds - 1},
		{maxLinks: 3, origin: span(0), links: spans(1, 3), dropped: adds - 3},
		{maxLinks: adds, origin: span(0), links: spans(1, adds)},
		{maxLinks: 100, origin: span(0), links: spans(1, adds)},
		// Negative: every valid context of every add is counted, the
		// repeated ones too, since none is kept to compare with.
		{maxLinks: -1, dropped: 2 * adds},
	} {
		t.Run(fmt.Sprint("MaxLinks=", tc.maxLinks), func(t *testing.T) {
			s, _ := newFake(t, Config[string]{Name: "test", MaxLinks: tc.maxLinks})
			for i := 0; i < adds; i++ {
				s.AddContext(spanCtx(i), "a")
				s.AddContext(spanCtx(0), "a") // a duplicate of the origin: never counted
			}
			it := mustGetKey(t, s, "a")
			if !it.Origin.Equal(tc.origin) {
				t.Errorf("Origin = %v, want %v", it.Origin, tc.origin)
			}
			if !sameSpans(it.Links, tc.links) {
				t.Errorf("Links = %d links, want %d", len(it.Links), len(tc.links))
			}
			if it.DroppedLinks != tc.dropped {
				t.Errorf("DroppedLinks = %d, want %d", it.DroppedLinks, tc.dropped)
			}
			s.Done("a")
		})
	}
}

func TestMaxLinksNegativeCountsEveryContext(t *testing.T) {
	s, _ := newFake(t, Config[string]{Name: "test", MaxLinks: -1})
	s.Add("a")
	s.AddContext(spanCtx(1), "a")
	s.AddContext(spanCtx(2), "a")
	s.AddContext(context.Background(), "a") // no valid context: not counted
	it := mustGetKey(t, s, "a")
	if it.Origin.IsValid() || len(it.Links) != 0 || it.DroppedLinks != 2 {
		t.Errorf("Origin %v, Links %v, DroppedLinks %d; want none kept, 2 dropped", it.Origin, it.Links, it.DroppedLinks)
	}
	s.Done("a")
}

func TestOriginKeepsTraceStateAndRemote(t *testing.T) {
	ts, err := trace.ParseTraceState("vendor=value,other=x")
	if err != nil {
		t.Fatal(err)
	}
	sc := span(7).WithTraceState(ts).WithRemote(true)
	s, _ := newFake(t, named())
	s.AddContext(trace.ContextWithRemoteSpanContext(context.Background(), sc), "a")
	it := mustGetKey(t, s, "a")
	if !it.Origin.Equal(sc) {
		t.Errorf("Origin = %v, want %v", it.Origin, sc)
	}
	if got := it.Origin.TraceState().String(); got != ts.String() {
		t.Errorf("Origin trace state = %q, want %q", got, ts.String())
	}
	if !it.Origin.IsRemote() {
		t.Errorf("Origin is not remote")
	}
	s.Done("a")

	// The trace state belongs to that run only.
	s.AddContext(spanCtx(1), "a")
	it = mustGetKey(t, s, "a")
	if it.Origin.TraceState().Len() != 0 || !it.Origin.Equal(span(1)) {
		t.Errorf("next run: Origin = %v, want span 1 without trace state", it.Origin)
	}
	s.Done("a")
}

func TestLinksBelongToOneRun(t *testing.T) {
	s, fc := newFake(t, named())
	s.AddContext(spanCtx(1), "a")
	s.AddContext(spanCtx(2), "a")
	first := mustGetKey(t, s, "a")

	// Added while processed: the contexts go to the next run.
	s.AddContext(spanCtx(3), "a")
	s.AddContext(spanCtx(1), "a") // linked again: it belongs to the next run now
	fc.Step(time.Second)
	s.Done("a")
	second := mustGetKey(t, s, "a")
	if !second.Origin.Equal(span(3)) || !sameSpans(second.Links, []trace.SpanContext{span(1)}) {
		t.Errorf("second run: Origin %v, Links %v; want span 3, [span 1]", second.Origin, second.Links)
	}
	// The first run's slice is not reused.
	if !first.Origin.Equal(span(1)) || !sameSpans(first.Links, []trace.SpanContext{span(2)}) {
		t.Errorf("first run changed: Origin %v, Links %v", first.Origin, first.Links)
	}
	s.Done("a")

	s.Add("a")
	third := mustGetKey(t, s, "a")
	if third.Origin.IsValid() || len(third.Links) != 0 || third.DroppedLinks != 0 || third.Coalesced != 0 {
		t.Errorf("third run: %+v; want no contexts", third)
	}
	s.Done("a")
}

func TestPreviousAttempt(t *testing.T) {
	run1 := span(100)
	for _, tc := range []struct {
		name     string
		retry    func(s *Scheduler[string])
		useGet   bool
		observer bool
		want     trace.SpanContext
	}{
		{name: "AddRateLimited from the run", observer: true, retry: func(s *Scheduler[string]) { s.AddRateLimited("a") }, want: run1},
		{name: "AddRateLimitedContext", observer: true, retry: func(s *Scheduler[string]) { s.AddRateLimitedContext(spanCtx(5), "a") }, want: run1},
		{name: "after Get", observer: true, useGet: true, retry: func(s *Scheduler[string]) { s.AddRateLimited("a") }, want: run1},
		{name: "AddAfter is no retry", observer: true, retry: func(s *Scheduler[string]) { s.AddAfter("a", time.Second) }},
		{name: "Add is no retry", observer: true, retry: func(s *Scheduler[string]) { s.Add("a") }},
		{name: "Add then AddRateLimited", observer: true, retry: func(s *Scheduler[string]) { s.Add("a"); s.AddRateLimited("a") }, want: run1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
			obs := newRecObserver[string]()
			obs.setSpan("a", run1)
			s.SetObserver(obs)

			s.AddContext(spanCtx(1), "a")
			var it Item[string]
			if tc.useGet {
				if k, _ := s.Get(); k != "a" {
					t.Fatalf("Get = %q", k)
				}
			} else {
				it = mustGetKey(t, s, "a")
				if got := trace.SpanContextFromContext(it.Context()); !got.Equal(run1) {
					t.Fatalf("Item.Context() carries %v, want the observer's %v", got, run1)
				}
				if it.PreviousAttempt.IsValid() {
					t.Errorf("first run: PreviousAttempt = %v, want none", it.PreviousAttempt)
				}
			}
			tc.retry(s)
			s.Done("a")
			fc.Step(time.Second)
			next := mustGetKey(t, s, "a")
			if !next.PreviousAttempt.Equal(tc.want) {
				t.Errorf("PreviousAttempt = %v, want %v", next.PreviousAttempt, tc.want)
			}
			s.Done("a")
			// The run after that is no retry.
			s.Add("a")
			if third := mustGetKey(t, s, "a"); third.PreviousAttempt.IsValid() {
				t.Errorf("third run: PreviousAttempt = %v, want none", third.PreviousAttempt)
			}
			s.Done("a")
		})
	}
}

func TestPreviousAttemptNeedsATracedRun(t *testing.T) {
	// The Observer processes the key in a context without a span: nothing
	// to link to.
	s, fc := newFake(t, Config[string]{Name: "test", RateLimiter: testutil.ExpLimiter(time.Second, time.Minute)})
	s.SetObserver(newRecObserver[string]())
	s.Add("a")
	mustGetKey(t, s, "a")
	s.AddRateLimited("a")
	s.Done("a")
	fc.Step(time.Second)
	if it := mustGetKey(t, s, "a"); it.PreviousAttempt.IsValid() {
		t.Errorf("PreviousAttempt = %v, want none", it.PreviousAttempt)
	}
	s.Done("a")
}
