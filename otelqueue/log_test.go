package otelqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// logRecords is a slog.Handler that keeps every record, with the
// attributes of its logger, as a map.
type logRecords struct {
	mu      sync.Mutex
	records []logRecord
	attrs   []slog.Attr
	parent  *logRecords
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *logRecords) root() *logRecords {
	if h.parent != nil {
		return h.parent.root()
	}
	return h
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	root := h.root()
	root.mu.Lock()
	root.records = append(root.records, rec)
	root.mu.Unlock()
	return nil
}

func (h *logRecords) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecords{attrs: append(append([]slog.Attr{}, h.attrs...), attrs...), parent: h}
}

func (h *logRecords) WithGroup(string) slog.Handler { return h }

func (h *logRecords) all() []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logRecord{}, h.records...)
}

// TestRunnerLogsErrors checks the "Reconciler error" lines: an error and a
// panic each give one, at level Error, with the queue, the key, the error
// and the attempt's trace_id and span_id (those of its "reconcile" span);
// a panic's has its stack trace.
func TestRunnerLogsErrors(t *testing.T) {
	e := newEnv(t, envConfig{})
	logs := new(logRecords)
	r, err := newRunner(e.q, 1, func(_ context.Context, key string) (otelqueue.Result, error) {
		if key == "panic" {
			panic("kaboom")
		}
		return otelqueue.Result{}, errors.New("boom")
	}, otelqueue.WithLogger(slog.New(logs)), otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	e.q.Add("fail")
	e.q.Add("panic")
	runRunner(t, r)
	testutil.WaitFor(t, "both attempts", func() bool {
		s := r.Stats()
		return s.Count(otelqueue.OutcomeError) == 1 && s.Count(otelqueue.OutcomePanic) == 1 && e.q.Stats().InFlight == 0
	})

	recs := logs.all()
	if len(recs) != 2 {
		t.Fatalf("%d log lines, want 2: %+v", len(recs), recs)
	}
	for i, key := range []string{"fail", "panic"} {
		rec := recs[i]
		_, _, span := e.endedAttempt(t, key, 1)
		want := map[string]string{
			"queue":    queueName,
			"key":      key,
			"trace_id": span.SpanContext().TraceID().String(),
			"span_id":  span.SpanContext().SpanID().String(),
		}
		if rec.level != slog.LevelError || rec.msg != "Reconciler error" {
			t.Errorf("line %d: %v %q, want ERROR \"Reconciler error\"", i, rec.level, rec.msg)
		}
		for k, v := range want {
			if rec.attrs[k] != v {
				t.Errorf("line %d: %s=%q, want %q", i, k, rec.attrs[k], v)
			}
		}
		if _, ok := rec.attrs[semconv.LogSuppressed]; ok {
			t.Errorf("line %d says lines were suppressed: %v", i, rec.attrs)
		}
	}
	if got := recs[0].attrs["error"]; got != "boom" {
		t.Errorf("error = %q, want boom", got)
	}
	if got := recs[1].attrs["error"]; !strings.Contains(got, "panicked: kaboom") {
		t.Errorf("panic's error = %q, want the panic value", got)
	}
	if st := recs[1].attrs["stacktrace"]; !strings.Contains(st, "TestRunnerLogsErrors") {
		t.Errorf("panic's stacktrace does not show the reconciler: %q", st)
	}
	if _, ok := recs[0].attrs["stacktrace"]; ok {
		t.Error("an error line has a stack trace")
	}
}

// TestRunnerLogRateLimit checks the default limit on a fake clock: the first
// 10 errors are logged, then one a second, and the first line after dropped
// ones says how many were dropped.
func TestRunnerLogRateLimit(t *testing.T) {
	e := newEnv(t, envConfig{})
	logs := new(logRecords)
	var attempts sync.Map
	r, err := newRunner(e.q, 1, func(_ context.Context, key string) (otelqueue.Result, error) {
		if _, again := attempts.LoadOrStore(key, true); again {
			return otelqueue.Result{}, nil // the retry succeeds
		}
		return otelqueue.Result{}, fmt.Errorf("%s failed", key)
	}, otelqueue.WithLogger(slog.New(logs)), otelqueue.WithRunnerClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	runRunner(t, r)
	settle := func(what string, errs, successes uint64) {
		t.Helper()
		testutil.WaitFor(t, what, func() bool {
			s := r.Stats()
			return s.Count(otelqueue.OutcomeError) == errs && s.Count(otelqueue.OutcomeSuccess) == successes && e.q.Stats().InFlight == 0
		})
	}
	lines := func(want int) []logRecord {
		t.Helper()
		recs := logs.all()
		if len(recs) != want {
			t.Fatalf("%d lines, want %d", len(recs), want)
		}
		return recs
	}

	for i := range 15 { // t=0
		e.q.Add(fmt.Sprintf("k%02d", i))
	}
	settle("15 errors", 15, 0)
	for i, rec := range lines(otelqueue.DefaultLogBurst) {
		if _, ok := rec.attrs[semconv.LogSuppressed]; ok || rec.attrs["key"] != fmt.Sprintf("k%02d", i) {
			t.Errorf("line %d: %v, want k%02d's, with nothing suppressed", i, rec.attrs, i)
		}
	}
	e.step(500 * time.Millisecond)
	e.q.Add("x")
	settle("x's error", 16, 0)
	lines(otelqueue.DefaultLogBurst) // dropped: 6 so far

	e.step(500 * time.Millisecond) // t=1s: the 15 retries succeed, one line is allowed again
	settle("the retries", 16, 15)
	e.q.Add("y")
	settle("y's error", 17, 15)
	last := lines(otelqueue.DefaultLogBurst + 1)[otelqueue.DefaultLogBurst]
	if last.attrs["key"] != "y" || last.attrs[semconv.LogSuppressed] != "6" {
		t.Errorf("the line after the dropped ones: %v, want y's with suppressed=6", last.attrs)
	}
	e.q.Add("z")
	settle("z's error", 18, 15)
	lines(otelqueue.DefaultLogBurst + 1) // dropped
}

// TestRunnerLogRateLimitOptions checks WithLogRateLimit: a custom burst and
// interval, 0 for no limit, and the invalid values NewRunner refuses.
func TestRunnerLogRateLimitOptions(t *testing.T) {
	for _, tc := range []struct {
		burst    int
		interval time.Duration
		lines    int // for 5 errors at once
	}{
		{2, time.Minute, 2},
		{1, 0, 5},
	} {
		t.Run(fmt.Sprintf("%d per %v", tc.burst, tc.interval), func(t *testing.T) {
			e := newEnv(t, envConfig{})
			logs := new(logRecords)
			r, err := newRunner(e.q, 1, func(context.Context, string) (otelqueue.Result, error) {
				return otelqueue.Result{}, errors.New("boom")
			}, otelqueue.WithLogger(slog.New(logs)), otelqueue.WithLogRateLimit(tc.burst, tc.interval), otelqueue.WithRunnerClock(e.clock))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				e.q.Add(fmt.Sprint(i))
			}
			runRunner(t, r)
			testutil.WaitFor(t, "5 errors", func() bool { return r.Stats().Count(otelqueue.OutcomeError) == 5 && e.q.Stats().InFlight == 0 })
			if n := len(logs.all()); n != tc.lines {
				t.Errorf("%d lines, want %d", n, tc.lines)
			}
		})
	}
	q := newEnv(t, envConfig{}).q
	for _, tc := range []struct {
		opt  otelqueue.RunnerOption
		want string
	}{
		{otelqueue.WithLogRateLimit(0, time.Second), "burst of at least 1 line, got 0"},
		{otelqueue.WithLogRateLimit(1, -time.Second), "interval of 0 (no limit) or more, got -1s"},
		{otelqueue.WithRunnerClock(nil), "WithRunnerClock needs a clock, got nil"},
	} {
		r, err := newRunner(q, 1, okReconcile, tc.opt)
		if r != nil {
			t.Errorf("NewRunner with an invalid option returned a Runner")
		}
		wantErr(t, "NewRunner", err, tc.want)
	}
}

// TestLoggerFromContext checks that a reconciler's LoggerFromContext logs
// to the Runner's logger with the trace_id and span_id of the span its ctx
// carries (the attempt's "reconcile" span, or its own child span), and
// that outside a Runner it is slog.Default().
func TestLoggerFromContext(t *testing.T) {
	e := newEnv(t, envConfig{})
	logs := new(logRecords)
	done := make(chan string, 1) // the child span's id
	r, err := newRunner(e.q, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
		otelqueue.LoggerFromContext(ctx).Info("reconciling", "key", key)
		ctx, span := e.tp.Tracer("test/reconciler").Start(ctx, "child")
		otelqueue.LoggerFromContext(ctx).Info("in the child span")
		span.End()
		done <- span.SpanContext().SpanID().String()
		return otelqueue.Result{}, nil
	}, otelqueue.WithLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	e.q.Add("a")
	runRunner(t, r)
	child := testutil.Receive(t, done, "the reconcile")
	testutil.WaitFor(t, "the attempt's end", func() bool { return e.q.Stats().InFlight == 0 })
	_, _, rec := e.endedAttempt(t, "a", 1)
	recs := logs.all()
	if len(recs) != 2 {
		t.Fatalf("%d lines, want 2", len(recs))
	}
	trace := rec.SpanContext().TraceID().String()
	for i, want := range []string{rec.SpanContext().SpanID().String(), child} {
		if recs[i].attrs[semconv.LogTraceID] != trace || recs[i].attrs[semconv.LogSpanID] != want {
			t.Errorf("line %d (%q): trace_id %s, span_id %s; want %s, %s", i, recs[i].msg,
				recs[i].attrs[semconv.LogTraceID], recs[i].attrs[semconv.LogSpanID], trace, want)
		}
	}
	for i := range recs {
		if got := recs[i].attrs[semconv.LogTraceSampled]; got != "true" {
			t.Errorf("line %d (%q): trace_sampled %q, want true", i, recs[i].msg, got)
		}
	}
	if l := otelqueue.LoggerFromContext(context.Background()); l != slog.Default() {
		t.Error("LoggerFromContext outside a Runner is not slog.Default()")
	}
	//lint:ignore SA1012 nil is input too
	if l := otelqueue.LoggerFromContext(nil); l != slog.Default() { //nolint:staticcheck
		t.Error("LoggerFromContext(nil) is not slog.Default()")
	}
}

// TestLogSaysWhetherTheTraceWasSampled: a line whose trace a head sampler
// dropped says so, since its trace_id leads to no exported trace.
func TestLogSaysWhetherTheTraceWasSampled(t *testing.T) {
	for _, sampled := range []bool{false, true} {
		logs := new(logRecords)
		prev := slog.Default()
		slog.SetDefault(slog.New(logs))
		ctx := oteltrace.ContextWithRemoteSpanContext(context.Background(), testutil.RemoteSpanContext(9, sampled))
		otelqueue.LoggerFromContext(ctx).Info("line")
		slog.SetDefault(prev)
		if got := logs.all(); len(got) != 1 || got[0].attrs[semconv.LogTraceSampled] != fmt.Sprint(sampled) {
			t.Errorf("a line in a trace with sampled=%v: %+v, want trace_sampled=%v", sampled, got, sampled)
		}
	}
}
