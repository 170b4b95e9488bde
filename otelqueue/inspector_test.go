package otelqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/otelqueue/otelqueue/inspect"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
	"github.com/otelqueue/otelqueue/shard"
)

// inspectedQueue instruments a queue named name on a fake clock, traced by
// an SDK TracerProvider that samples everything, and stops it when the test
// ends.
func inspectedQueue(t *testing.T, name string, opts ...otelqueue.Option) (*scheduler.Scheduler[string], *testingclock.FakeClock, *otelqueue.Instrumentation) {
	t.Helper()
	fc := testingclock.NewFakeClock(t0)
	q := scheduler.New(scheduler.Config[string]{Name: name, Clock: fc})
	t.Cleanup(q.ShutDown)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	opts = append([]otelqueue.Option{otelqueue.WithMeterProvider(metricnoop.NewMeterProvider()), otelqueue.WithTracerProvider(tp)}, opts...)
	inst, err := otelqueue.Instrument(q, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	return q, fc, inst
}

// get fetches the inspector's page at path with the Accept header accept.
func get(t *testing.T, h http.Handler, method, path, accept string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// queueOf returns the queue named name on page, failing the test if absent.
func queueOf(t *testing.T, page inspect.Page, name string) inspect.Queue {
	t.Helper()
	for _, q := range page.Queues {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("queue %q is not on the page (%d queues)", name, len(page.Queues))
	return inspect.Queue{}
}

// TestInspector: the JSON and the HTML page show a queue's keys waiting
// (oldest first, with their reason, priority, attempt and the trace that
// enqueued them), its runs in flight with their attempt's trace, and its
// counts; a queue stopped is no longer shown.
func TestInspector(t *testing.T) {
	q, fc, inst := inspectedQueue(t, "inspected-orders")
	enqCtx, enqSC := remoteCtx(1, true)
	q.AddContext(enqCtx, "default/a")
	fc.Step(time.Second)
	q.AddWithOptions(context.Background(), scheduler.AddOptions{Priority: 10, Trigger: scheduler.TriggerUpdate, Source: "Secret"}, "default/urgent")
	q.Add("default/<b>")
	fc.Step(time.Second)
	q.AddAfter("default/later", time.Minute)
	it, err := q.GetContext(context.Background()) // default/urgent, the highest priority
	if err != nil || it.Key != "default/urgent" {
		t.Fatalf("GetContext = %q, %v", it.Key, err)
	}
	fc.Step(3 * time.Second)

	h := &otelqueue.Inspector{TraceURL: "http://127.0.0.1:16686/trace/{trace_id}"}
	resp, body := get(t, h, http.MethodGet, "/debug/queues?format=json", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON: %s %s\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var page inspect.Page
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("JSON: %v\n%s", err, body)
	}
	got := queueOf(t, page, "inspected-orders")
	if got.Depth != 2 || got.Delayed != 1 || got.InFlight != 1 || got.OldestPending != 5*time.Second {
		t.Errorf("counts: %+v, want depth 2, delayed 1, in flight 1, oldest 5s", got)
	}
	var keys []string
	for _, k := range got.Oldest {
		keys = append(keys, k.Key)
	}
	if strings.Join(keys, ",") != "default/a,default/<b>,default/later" {
		t.Fatalf("oldest keys %q, want a, <b>, later", keys)
	}
	a, later := got.Oldest[0], got.Oldest[2]
	if a.Wait != 5*time.Second || a.Reason != "immediate" || a.Attempts != 1 || a.EnqueuedBy != enqSC.TraceID().String() {
		t.Errorf("default/a = %+v, want 5s, immediate, attempt 1, enqueued by trace %s", a, enqSC.TraceID())
	}
	if later.Reason != "delayed" || later.ReadyIn != 57*time.Second || later.Trigger != "requeue_after" {
		t.Errorf("default/later = %+v, want delayed, ready in 57s, trigger requeue_after", later)
	}
	if a.Trigger != "add" || a.Source != "" {
		t.Errorf("default/a's trigger %q from %q, want add from nowhere said", a.Trigger, a.Source)
	}
	if len(got.Running) != 1 || got.Running[0].Key != "default/urgent" || got.Running[0].Running != 3*time.Second ||
		got.Running[0].TraceID == "" || got.Running[0].Trigger != "update" || got.Running[0].Source != "Secret" {
		t.Errorf("running %+v, want default/urgent for 3s, traced, for an update of a Secret", got.Running)
	}
	if strings.Contains(body, "null") {
		t.Errorf("the JSON has a null where a list belongs:\n%s", body)
	}
	if !strings.Contains(body, `"priority": 0`) {
		t.Errorf("JSON without the counts by priority:\n%s", body)
	}

	// The same as HTML, keys escaped, trace ids linked.
	resp, html := get(t, h, http.MethodGet, "/debug/queues", "text/html")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("HTML: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`data-queue="inspected-orders"`,
		`default/&lt;b&gt;`,
		`href="http://127.0.0.1:16686/trace/` + enqSC.TraceID().String() + `"`,
		`data-key="default/urgent"`,
		`<td data-field="trigger">update <span class="source" data-field="source">Secret</span></td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML page lacks %s", want)
		}
	}
	if strings.Contains(html, "default/<b>") {
		t.Error("the HTML page shows a key unescaped")
	}
	// Accept: application/json gets JSON too.
	if resp, _ := get(t, h, http.MethodGet, "/", "application/json"); resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Accept application/json: %s", resp.Header.Get("Content-Type"))
	}

	// Read-only.
	if resp, _ := get(t, h, http.MethodPost, "/", ""); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %s, Allow %q", resp.Status, resp.Header.Get("Allow"))
	}

	// Stopped: no longer shown; twice is harmless.
	q.Done(it.Key)
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	_ = inst.Stop()
	for _, q := range h.Page().Queues {
		if q.Name == "inspected-orders" {
			t.Errorf("a stopped queue is still on the page")
		}
	}
}

// TestInspectorLimit: a queue with a thousand keys waiting lists the limit,
// oldest first, and counts them all; a nil Inspector and a limit out of
// range take the default and the maximum.
func TestInspectorLimit(t *testing.T) {
	q, fc, _ := inspectedQueue(t, "inspected-many")
	for i := range 1000 {
		q.Add(fmt.Sprintf("ns/obj-%04d", i))
		fc.Step(time.Millisecond)
	}
	for _, c := range []struct {
		h    *otelqueue.Inspector
		want int
	}{
		{nil, otelqueue.DefaultInspectorLimit},
		{&otelqueue.Inspector{Limit: -3}, otelqueue.DefaultInspectorLimit},
		{&otelqueue.Inspector{Limit: 5}, 5},
		{&otelqueue.Inspector{Limit: 5000}, 1000},
	} {
		got := queueOf(t, c.h.Page(), "inspected-many")
		if len(got.Oldest) != c.want || got.Depth != 1000 || got.Pending[0].Keys != 1000 {
			t.Errorf("%+v: %d listed of depth %d (%+v), want %d of 1000", c.h, len(got.Oldest), got.Depth, got.Pending, c.want)
			continue
		}
		if got.Oldest[0].Key != "ns/obj-0000" || got.Oldest[0].Wait != time.Second {
			t.Errorf("%+v: the oldest is %+v, want ns/obj-0000 after 1s", c.h, got.Oldest[0])
		}
	}
}

// TestInspectorStandbyAndPool: a standby queue says so; a queue with an
// adaptive pool shows its count.
func TestInspectorStandbyAndPool(t *testing.T) {
	active := make(chan struct{})
	_, _, _ = inspectedQueue(t, "inspected-standby", otelqueue.WithStandby(active),
		otelqueue.AdaptiveWorkers{Min: 1, Max: 4, Start: 2, Interval: time.Hour})
	got := queueOf(t, (&otelqueue.Inspector{}).Page(), "inspected-standby")
	if !got.Standby || got.Adaptive == nil || got.Adaptive.Limit != 2 {
		t.Errorf("standby %v, adaptive %+v; want standby, a pool at 2", got.Standby, got.Adaptive)
	}
	_, html := get(t, &otelqueue.Inspector{}, http.MethodGet, "/", "")
	if !strings.Contains(html, `data-field="standby"`) || !strings.Contains(html, `data-field="adaptive">2 (min 1, max 4`) {
		t.Errorf("the HTML page lacks the standby state or the pool's count")
	}
	if _, body := get(t, &otelqueue.Inspector{}, http.MethodGet, "/?format=json", ""); !strings.Contains(body, `"limit": 2`) {
		t.Errorf("the JSON page lacks the pool's limit in snake case")
	}
	close(active)
}

// TestInspectorFailures: a Runner's failed attempts (an error, a panic) and
// those given to RecordFailure are listed, the latest first, at most
// MaxFailures, their errors cut at MaxFailureErrorLen bytes; a nil error, a
// nil or stopped Instrumentation record nothing.
func TestInspectorFailures(t *testing.T) {
	q, _, inst := inspectedQueue(t, "inspected-failures")
	runner, err := newRunner(q, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
		switch key {
		case "ns/fails":
			return otelqueue.Result{}, fmt.Errorf("updating %s: the object has been modified", key)
		case "ns/panics":
			panic("kaboom")
		}
		return otelqueue.Result{}, nil
	}, otelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx) }()
	q.Add("ns/fails")
	q.Add("ns/panics")
	q.Add("ns/ok")
	var page []inspect.Failure
	testutil.WaitFor(t, "two failures listed", func() bool {
		page = queueOf(t, (&otelqueue.Inspector{}).Page(), "inspected-failures").Failures
		return len(page) >= 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	byKey := map[string]inspect.Failure{}
	for _, f := range page {
		byKey[f.Key] = f
	}
	if f := byKey["ns/fails"]; f.Outcome != "error" || !strings.Contains(f.Error, "the object has been modified") || f.TraceID == "" {
		t.Errorf("ns/fails: %+v, want the error, traced", f)
	}
	if f := byKey["ns/panics"]; f.Outcome != "panic" || !strings.Contains(f.Error, "kaboom") {
		t.Errorf("ns/panics: %+v, want the panic", f)
	}
	if _, ok := byKey["ns/ok"]; ok {
		t.Error("a success is listed as a failure")
	}

	// RecordFailure: the latest first, at most MaxFailures, errors cut.
	for i := range otelqueue.MaxFailures + 1 {
		inst.RecordFailure(context.Background(), fmt.Sprint("ns/k", i), fmt.Errorf("failure %d", i))
	}
	inst.RecordFailure(context.Background(), "ns/long", errors.New(strings.Repeat("é", otelqueue.MaxFailureErrorLen)))
	inst.RecordFailure(context.Background(), "ns/nil", nil)
	var nilInst *otelqueue.Instrumentation
	nilInst.RecordFailure(context.Background(), "ns/nil-inst", errors.New("x"))
	got := queueOf(t, (&otelqueue.Inspector{}).Page(), "inspected-failures").Failures
	if len(got) != otelqueue.MaxFailures || got[0].Key != "ns/long" || got[1].Key != fmt.Sprint("ns/k", otelqueue.MaxFailures) {
		t.Fatalf("%d failures, the first %q and %q; want %d, ns/long then the last RecordFailure", len(got), got[0].Key, got[1].Key, otelqueue.MaxFailures)
	}
	if e := got[0].Error; len(e) > otelqueue.MaxFailureErrorLen+len("…") || !strings.HasSuffix(e, "…") || !utf8.ValidString(e) {
		t.Errorf("a long error kept as %d bytes (valid UTF-8 %v), want at most %d and a …", len(e), utf8.ValidString(e), otelqueue.MaxFailureErrorLen)
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	inst.RecordFailure(context.Background(), "ns/after-stop", errors.New("x")) // harmless
}

// TestInspectorDropsCollectedQueues: a queue instrumented and dropped
// without Stop is not kept alive by the Inspector, nor by a MeterProvider
// that holds its callback (an SDK's, which a program keeps for its life),
// and leaves the Inspector's list.
func TestInspectorDropsCollectedQueues(t *testing.T) {
	for name, mp := range map[string]metric.MeterProvider{
		"no-op":         metricnoop.NewMeterProvider(),
		"SDK":           sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		"SDK, sized":    sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		"SDK, standby":  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		"SDK, adaptive": sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
	} {
		t.Run(name, func(t *testing.T) {
			opts := []otelqueue.Option{otelqueue.WithMeterProvider(mp), otelqueue.WithClientTime()}
			switch name {
			case "SDK, sized":
				opts = append(opts, otelqueue.WithSizer(&otelqueue.Sizer{}))
			case "SDK, standby":
				opts = append(opts, otelqueue.WithStandby(make(chan struct{})))
			case "SDK, adaptive":
				opts = append(opts, otelqueue.AdaptiveWorkers{Min: 1, Max: 4})
			}
			dropped(t, opts...)
		})
	}
}

func dropped(t *testing.T, opts ...otelqueue.Option) {
	before := otelqueue.Inspectables()
	collected := make(chan struct{})
	func() {
		q := scheduler.New(scheduler.Config[string]{Name: "inspected-dropped"})
		runtime.AddCleanup(q, func(c chan struct{}) { close(c) }, collected)
		if _, err := otelqueue.Instrument(q, opts...); err != nil {
			t.Fatal(err)
		}
		q.Add("a")
	}()
	testutil.WaitFor(t, "the dropped queue to be collected", func() bool {
		runtime.GC()
		select {
		case <-collected:
			return true
		default:
			return false
		}
	})
	if n := otelqueue.Inspectables(); n != before+1 {
		t.Fatalf("%d inspectables after Instrument, want %d", n, before+1)
	}
	testutil.WaitFor(t, "the dropped queue to leave the inspector", func() bool {
		runtime.GC()
		for _, q := range (&otelqueue.Inspector{}).Page().Queues {
			if q.Name == "inspected-dropped" {
				return false
			}
		}
		return otelqueue.Inspectables() == before
	})
}

// TestInspectorConcurrent: one Inspector serves pages to several clients at
// once (JSON and HTML), while its queue's workers add, take and finish keys
// and other queues are instrumented and stopped; run with -race. Every page
// is whole, and the bottleneck windows the looks share never overlap: a
// window is classified once, and the next starts at or after its end (a
// look within MinBottleneckWindow of the last shows the last again).
func TestInspectorConcurrent(t *testing.T) {
	q, fc, _ := inspectedQueue(t, "inspected-concurrent", otelqueue.WithWorkers(2))
	h := &otelqueue.Inspector{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	// The queue's traffic, on the fake clock, which the readers step too.
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				q.Add(fmt.Sprintf("default/k-%d-%d", w, i%50))
				it, err := q.GetContext(ctx)
				if err != nil {
					return
				}
				fc.Step(time.Millisecond)
				q.Done(it.Key)
			}
		})
	}
	// Queues that come and go while pages are built.
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			s := scheduler.New(scheduler.Config[string]{Name: fmt.Sprintf("inspected-transient-%d", i)})
			inst, err := otelqueue.Instrument(s, otelqueue.WithMeterProvider(metricnoop.NewMeterProvider()))
			if err != nil {
				t.Error(err)
				return
			}
			s.Add("default/x")
			_ = inst.Stop()
			s.ShutDown()
		}
	})
	var (
		mu      sync.Mutex
		windows = map[time.Time]time.Duration{} // the classified windows: start → length
	)
	var readers sync.WaitGroup
	for r := range 4 {
		readers.Go(func() {
			for i := range 40 {
				fc.Step(2 * time.Second) // windows of at least MinBottleneckWindow, now and then
				if r%2 == 1 && i%2 == 1 {
					resp, body := get(t, h, http.MethodGet, "/debug/queues", "text/html")
					if resp.StatusCode != http.StatusOK || !strings.Contains(body, "</html>") {
						t.Errorf("HTML page: %s, %d bytes, not whole", resp.Status, len(body))
					}
					continue
				}
				resp, body := get(t, h, http.MethodGet, "/debug/queues?format=json", "")
				var page inspect.Page
				if err := json.Unmarshal([]byte(body), &page); resp.StatusCode != http.StatusOK || err != nil {
					t.Errorf("JSON page: %s, %v", resp.Status, err)
					continue
				}
				for _, qu := range page.Queues {
					if qu.Name != "inspected-concurrent" || qu.Bottleneck == nil {
						continue
					}
					b := qu.Bottleneck
					if b.Window < 0 {
						t.Errorf("a bottleneck window of %v", b.Window)
					}
					if b.Window < otelqueue.MinBottleneckWindow {
						continue // the first window, still measuring
					}
					mu.Lock()
					if w, ok := windows[b.Since]; ok && w != b.Window {
						t.Errorf("two windows from %v: %v and %v", b.Since, w, b.Window)
					}
					windows[b.Since] = b.Window
					mu.Unlock()
				}
			}
		})
	}
	readers.Wait()
	cancel()
	q.ShutDown()
	wg.Wait()
	if len(windows) < 2 {
		t.Fatalf("%d windows classified, want several", len(windows))
	}
	var since []time.Time
	for s := range windows {
		since = append(since, s)
	}
	slices.SortFunc(since, time.Time.Compare)
	for i := 1; i < len(since); i++ {
		if end := since[i-1].Add(windows[since[i-1]]); since[i].Before(end) {
			t.Errorf("the window from %v overlaps the one from %v to %v", since[i], since[i-1], end)
		}
	}
	t.Logf("%d windows classified", len(windows))
}

// TestInspectorOfOneProgram: two programs in one process (here one test
// binary), each with its queue, its MeterProvider and its Inspector built
// from its own Instrumentations, see each their own queue and metrics only;
// an Inspector without Instrumentations shows the process's; a stopped
// Instrumentation leaves its program's page.
func TestInspectorOfOneProgram(t *testing.T) {
	type program struct {
		queue   *scheduler.Scheduler[string]
		inst    *otelqueue.Instrumentation
		reader  *sdkmetric.ManualReader
		inspect *otelqueue.Inspector
	}
	newProgram := func(name string) *program {
		p := &program{reader: sdkmetric.NewManualReader()}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.reader))
		t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		p.queue, _, p.inst = inspectedQueue(t, name, otelqueue.WithMeterProvider(mp))
		p.inspect = &otelqueue.Inspector{Instrumentations: []*otelqueue.Instrumentation{p.inst}}
		p.queue.Add(name + "/key")
		return p
	}
	a, b := newProgram("program-a"), newProgram("program-b")
	names := func(page inspect.Page) (out []string) {
		for _, q := range page.Queues {
			out = append(out, q.Name)
		}
		return out
	}
	for _, p := range []*program{a, b} {
		if got := names(p.inspect.Page()); !slices.Equal(got, []string{p.queue.Name()}) {
			t.Errorf("the inspector of %s shows %v, want its queue only", p.queue.Name(), got)
		}
		var rm metricdata.ResourceMetrics
		if err := p.reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if g, ok := m.Data.(metricdata.Sum[int64]); ok {
					for _, dp := range g.DataPoints {
						if v, _ := dp.Attributes.Value("name"); v.AsString() != p.queue.Name() {
							t.Errorf("the metrics of %s carry the queue %s (%s)", p.queue.Name(), v.AsString(), m.Name)
						}
					}
				}
			}
		}
	}
	all := names((&otelqueue.Inspector{}).Page())
	if !slices.Contains(all, "program-a") || !slices.Contains(all, "program-b") {
		t.Errorf("an inspector without Instrumentations shows %v, want both programs' queues", all)
	}
	if err := a.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := names(a.inspect.Page()); len(got) != 0 {
		t.Errorf("after Stop, the inspector of program-a shows %v, want nothing", got)
	}
	if got := names((&otelqueue.Inspector{Instrumentations: []*otelqueue.Instrumentation{nil}}).Page()); len(got) != 0 {
		t.Errorf("an inspector of a nil Instrumentation shows %v, want nothing", got)
	}
}

// TestInspectorShard: an Inspector with a Shard says it at the top of the
// page, in the JSON and the HTML; a nil *shard.Shard and no Shard say
// nothing.
func TestInspectorShard(t *testing.T) {
	_, _, inst := inspectedQueue(t, "sharded")
	s, err := shard.New(1, 3, "uid")
	if err != nil {
		t.Fatal(err)
	}
	in := &otelqueue.Inspector{Shard: s, Instrumentations: []*otelqueue.Instrumentation{inst}}
	want := "1 of 3 by uid: shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"
	if got := in.Page().Shard; got != want {
		t.Errorf("Page().Shard = %q, want %q", got, want)
	}
	if _, body := get(t, in, http.MethodGet, "/", "text/html"); !strings.Contains(body, `<p data-field="shard">Shard 1 of 3 by uid: shardRange(object.metadata.uid, &#39;0x5555555555555555&#39;`) {
		t.Errorf("the HTML page does not say the shard:\n%s", body)
	}
	p, err := shard.Parse("shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')")
	if err != nil {
		t.Fatal(err)
	}
	in.Shard = p
	if got := in.Page().Shard; got != "by namespace: "+p.String() {
		t.Errorf("explicit ranges: Page().Shard = %q", got)
	}
	var none *shard.Shard
	in.Shard = none
	if got := in.Page().Shard; got != "" {
		t.Errorf("a nil *shard.Shard: Page().Shard = %q, want none", got)
	}
	in.Shard = nil
	if _, body := get(t, in, http.MethodGet, "/", "text/html"); strings.Contains(body, `data-field="shard"`) || in.Page().Shard != "" {
		t.Error("no Shard: the page says one")
	}
}
