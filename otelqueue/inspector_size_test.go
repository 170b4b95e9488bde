package otelqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/inspect"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	testingclock "k8s.io/utils/clock/testing"
)

// TestInspectorSize checks that an Inspector with a Sizer shows its
// recommendation, in the JSON and at the top of the page, and that one
// without shows none.
func TestInspectorSize(t *testing.T) {
	e := newSizerEnv(t, 4)
	e.run(t, 30*time.Second, 20, 2, 20*time.Millisecond)
	h := &otelqueue.Inspector{Sizer: e.sizer}
	_, body := get(t, h, http.MethodGet, "/?format=json", "")
	var page inspect.Page
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("JSON: %v\n%s", err, body)
	}
	r := page.Recommendation
	if r == nil || len(r.Queues) != 1 || r.Queues[0].Name != queueName || !r.Queues[0].Known || r.Queues[0].Run != 1 || !r.CPU.Known || !r.Memory.Known {
		t.Fatalf("recommendation %+v", r)
	}
	// The JSON names the issue's consumers read.
	for _, field := range []string{`"recommendation"`, `"run": 1`, `"request_cores"`, `"limit_cores"`, `"request_bytes"`, `"limit_bytes"`, `"gomemlimit_bytes"`, `"per_object_bytes"`} {
		if !strings.Contains(body, field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
	_, html := get(t, h, http.MethodGet, "/", "")
	size, queues := strings.Index(html, `id="size"`), strings.Index(html, `class="queue"`)
	if size < 0 || queues < 0 || size > queues {
		t.Fatalf("the size section is not at the top of the page:\n%s", html)
	}
	for _, want := range []string{
		`data-field="size-workers" data-queue="orders"><strong>1</strong> orders 1 (4 run: more than enough;`,
		`data-field="size-over">the 30s so far`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// The CPU and memory of this process read anew: the figures' form.
	for _, want := range []string{
		`data-field="size-cpu"><strong>request \d+\.\d\d, limit \d+\.\d\d</strong> request`,
		`data-field="size-memory"><strong>request \d+Mi, limit \d+Mi, GOMEMLIMIT=\d+MiB</strong> request`,
	} {
		if !regexp.MustCompile(want).MatchString(html) {
			t.Errorf("the page lacks %s", want)
		}
	}
	_, body = get(t, &otelqueue.Inspector{}, http.MethodGet, "/?format=json", "")
	if strings.Contains(body, `"recommendation"`) {
		t.Error("an Inspector without a Sizer shows a recommendation")
	}
}

// TestInspectorPlaces checks that the keys waiting, by place, add up to
// the queue's ready, delayed and held counts: a key held until its run
// ended is ready, with the reason held.
func TestInspectorPlaces(t *testing.T) {
	q, fc, _ := inspectedQueue(t, "places")
	for _, k := range []string{"ns/was-held", "ns/held"} {
		q.Add(k)
		it, err := q.GetContext(context.Background())
		if err != nil || it.Key != k {
			t.Fatalf("took %q, %v", it.Key, err)
		}
		q.Add(k) // held until Done
	}
	q.Add("ns/ready")
	q.AddAfter("ns/later", time.Minute)
	fc.Step(time.Second)
	q.Done("ns/was-held") // ready now, having waited held

	_, body := get(t, &otelqueue.Inspector{}, http.MethodGet, "/?format=json", "")
	var page inspect.Page
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	got := queueOf(t, page, "places")
	by := map[string]int{}
	var rows []string
	for _, c := range got.Pending {
		by[c.Place] += c.Keys
		rows = append(rows, c.Place+" "+c.Reason)
	}
	if by["ready"] != got.Depth || by["delayed"] != got.Delayed || by["held"] != got.Held {
		t.Errorf("by place %v; the queue: depth %d, delayed %d, held %d", by, got.Depth, got.Delayed, got.Held)
	}
	if want := "ready immediate,ready held,delayed delayed,held held"; strings.Join(rows, ",") != want {
		t.Errorf("rows %q, want %q", rows, want)
	}
}

// TestInspectorKeysWrapAtSlashes checks that a key wraps between its
// namespace and name, never inside either, and is escaped.
func TestInspectorKeysWrapAtSlashes(t *testing.T) {
	q, _, _ := inspectedQueue(t, "wrap")
	q.Add("a-rather-long-namespace/a-<rather>-long-name-that-would-wrap")
	_, html := get(t, &otelqueue.Inspector{}, http.MethodGet, "/", "")
	if want := `<td class="key">a-rather-long-namespace/<wbr>a-&lt;rather&gt;-long-name-that-would-wrap</td>`; !strings.Contains(html, want) {
		t.Errorf("the page lacks %s", want)
	}
	if strings.Contains(html, "break-all") || !strings.Contains(html, ".key { font-family: ui-monospace, monospace; white-space: nowrap; }") {
		t.Error("keys may break anywhere, not only at their slashes")
	}
}

// The inspector serves the queues of the process: mount it beside
// /metrics, where only those who may read the metrics reach it. With a
// Sizer, the page starts with the workers, cores and memory to give the
// controller.
func ExampleInspector() {
	queue := scheduler.New(scheduler.Config[string]{Name: "configmaps"})
	defer queue.ShutDown()
	sizer := &otelqueue.Sizer{}
	inst, err := otelqueue.Instrument(queue, otelqueue.WithSizer(sizer))
	if err != nil {
		panic(err)
	}
	defer inst.Stop()
	queue.Add("default/web")

	mux := http.NewServeMux()
	mux.Handle("/debug/queues", &otelqueue.Inspector{Sizer: sizer})
	// http.ListenAndServe("127.0.0.1:9464", mux) in a program; here one request:
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/queues?format=json", nil))
	var page inspect.Page
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		panic(err)
	}
	q := page.Queues[0]
	fmt.Println(q.Name, "depth", q.Depth, "oldest key", q.Oldest[0].Key)
	fmt.Println("sized:", page.Recommendation.Queues[0].Name)
	// Output:
	// configmaps depth 1 oldest key default/web
	// sized: configmaps
}

// panicKey is a key type whose String panics.
type panicKey struct{ n int }

func (panicKey) String() string { panic("a broken String") }

// TestInspectorHostileInput: a key type whose String panics is shown as
// what fmt makes of it, on a page that still has every other queue, and
// its attempts are traced without a panic; an Accept header that refuses
// JSON, or names another type, gets HTML; two queues of one name get two
// element ids.
func TestInspectorHostileInput(t *testing.T) {
	fc := testingclock.NewFakeClock(t0)
	pq := scheduler.New(scheduler.Config[panicKey]{Name: "panicky", Clock: fc})
	defer pq.ShutDown()
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	inst, err := otelqueue.Instrument(pq, otelqueue.WithTracerProvider(tp), otelqueue.WithMeterProvider(metricnoop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	pq.Add(panicKey{1})
	it, err := pq.GetContext(context.Background()) // a traced attempt: the key is a span attribute
	if err != nil {
		t.Fatal(err)
	}
	pq.Done(it.Key)
	pq.Add(panicKey{2})
	inspectedQueue(t, "twin")
	inspectedQueue(t, "twin")

	_, body := get(t, &otelqueue.Inspector{}, http.MethodGet, "/?format=json", "")
	var page inspect.Page
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("JSON: %v\n%s", err, body)
	}
	q := queueOf(t, page, "panicky")
	if len(q.Oldest) != 1 || !strings.Contains(q.Oldest[0].Key, "its String panicked: a broken String") {
		t.Errorf("the panicking key reads %+v", q.Oldest)
	}
	if n := len(page.Queues); n < 3 {
		t.Errorf("%d queues on the page, want the panicky one and both twins", n)
	}
	_, html := get(t, &otelqueue.Inspector{}, http.MethodGet, "/", "")
	if !strings.Contains(html, `id="queue-twin"`) || !strings.Contains(html, `id="queue-twin-2"`) {
		t.Error("two queues named twin do not get two element ids")
	}

	for accept, json := range map[string]bool{
		"application/json":                    true,
		"application/json; charset=utf-8":     true,
		"application/json, text/html;q=0.5":   true,
		"application/json;q=0, text/html":     false,
		"text/html, application/json;q=0.9":   false,
		"application/jsonx":                   false,
		"*/*":                                 false,
		"text/html,application/xhtml+xml,*/*": false,
	} {
		resp, _ := get(t, &otelqueue.Inspector{}, http.MethodGet, "/", accept)
		if got := resp.Header.Get("Content-Type") == "application/json"; got != json {
			t.Errorf("Accept %q: %s, want JSON %t", accept, resp.Header.Get("Content-Type"), json)
		}
	}
}

// TestInspectorSizerWindow: with a Sizer, the class of a queue it sizes is
// that of the Sizer's last window: the same for two Inspectors and for
// every look until the next reading, with the process's CPU from the first
// look on.
func TestInspectorSizerWindow(t *testing.T) {
	e := newSizerEnv(t, 4)
	e.run(t, 30*time.Second, 20, 2, 20*time.Millisecond)
	look := func(h *otelqueue.Inspector) inspect.Bottleneck {
		t.Helper()
		_, body := get(t, h, http.MethodGet, "/?format=json", "")
		var page inspect.Page
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		b := queueOf(t, page, queueName).Bottleneck
		if b == nil {
			t.Fatal("no bottleneck")
		}
		return *b
	}
	a, b := &otelqueue.Inspector{Sizer: e.sizer}, &otelqueue.Inspector{Sizer: e.sizer}
	first := look(a)
	if first.Class != "none" || first.Window != 10*time.Second || first.Workers != 4 || first.CPUCores == 0 {
		t.Errorf("first look: %+v, want none over the Sizer's 10s window of 4 workers, with the CPU", first)
	}
	e.step(3 * time.Second)
	if again, other := look(a), look(b); again != first || other != first {
		t.Errorf("looks before the next reading differ:\n%+v\n%+v\n%+v", first, again, other)
	}
}
