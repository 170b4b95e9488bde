package otelqueue_test

// These tests scrape the OpenTelemetry Prometheus exporter
// (go.opentelemetry.io/otel/exporters/prometheus v0.69.0) as Prometheus does,
// to pin down what a controller-runtime dashboard sees.
//
// What the exporter does, with no option but WithRegisterer:
//
//   - Names: its default translation strategy, UnderscoreEscapingWithSuffixes,
//     turns "." into "_", appends the unit ("s" becomes "_seconds"; units in
//     braces such as "{item}" are annotations and add nothing) and "_total" to
//     monotonic counters. That yields exactly controller-runtime's series
//     names: workqueue_depth, workqueue_adds_total, workqueue_retries_total,
//     workqueue_queue_duration_seconds_{bucket,sum,count},
//     workqueue_work_duration_seconds_*, workqueue_unfinished_work_seconds and
//     workqueue_longest_running_processor_seconds. Other strategies
//     (NoTranslation, NoUTF8EscapingWithSuffixes, ...) or the deprecated
//     WithoutUnits / WithoutCounterSuffixes options break these names, so an
//     application must not set them. No "# UNIT" metadata is written.
//   - Labels: the "name" and "controller" attributes become labels, and the
//     exporter adds otel_scope_name, otel_scope_version and
//     otel_scope_schema_url to every series, plus a target_info series with
//     the resource. Queries and dashboards that select or aggregate by name
//     and controller keep working; for exactly controller-runtime's label
//     sets, the application sets WithoutScopeInfo() (and WithoutTargetInfo()
//     to drop target_info).
//   - Exemplars: histogram buckets carry `# {trace_id="...",span_id="..."} v t`
//     only in the OpenMetrics format (the scraper must send
//     "Accept: application/openmetrics-text"); the classic text format has
//     none. Prometheus asks for OpenMetrics when exemplar storage is on.
//   - WithRegisterer: without it the exporter registers with the global
//     prometheus.DefaultRegisterer.

import (
	"encoding/hex"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// sample is one line of an OpenMetrics or Prometheus text exposition.
type sample struct {
	name     string
	labels   map[string]string
	value    float64
	exemplar map[string]string // nil when the line has none
	exValue  float64
}

var (
	sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)(?: # \{([^}]*)\} (\S+)(?: \S+)?)?$`)
	labelRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	typeRE   = regexp.MustCompile(`^# TYPE (\S+) (\S+)$`)
)

func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range labelRE.FindAllStringSubmatch(s, -1) {
		m[kv[1]] = kv[2]
	}
	return m
}

// exposition is a parsed scrape.
type exposition struct {
	contentType string
	types       map[string]string // family name -> type
	samples     []sample
	raw         string
}

// scrape GETs url with the given Accept header and parses the answer.
func scrape(t testing.TB, url, accept string) exposition {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	x := exposition{contentType: resp.Header.Get("Content-Type"), types: map[string]string{}, raw: string(body)}
	for _, line := range strings.Split(string(body), "\n") {
		if m := typeRE.FindStringSubmatch(line); m != nil {
			x.types[m[1]] = m[2]
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("cannot parse exposition line %q", line)
		}
		s := sample{name: m[1], labels: parseLabels(m[2])}
		if s.value, err = strconv.ParseFloat(m[3], 64); err != nil {
			t.Fatalf("value of %q: %v", line, err)
		}
		if m[4] != "" {
			s.exemplar = parseLabels(m[4])
			if s.exValue, err = strconv.ParseFloat(m[5], 64); err != nil {
				t.Fatalf("exemplar value of %q: %v", line, err)
			}
		}
		x.samples = append(x.samples, s)
	}
	return x
}

// series returns the samples called name.
func (x exposition) series(name string) []sample {
	return slices.DeleteFunc(slices.Clone(x.samples), func(s sample) bool { return s.name != name })
}

// one returns the single sample called name whose labels include want.
func (x exposition) one(t testing.TB, name string, want map[string]string) sample {
	t.Helper()
	var found []sample
	for _, s := range x.series(name) {
		ok := true
		for k, v := range want {
			if s.labels[k] != v {
				ok = false
			}
		}
		if ok {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d samples %s%v, want 1; exposition:\n%s", len(found), name, want, x.raw)
	}
	return found[0]
}

// names returns the sorted distinct sample names that start with prefix.
func (x exposition) names(prefix string) []string {
	set := map[string]bool{}
	for _, s := range x.samples {
		if strings.HasPrefix(s.name, prefix) {
			set[s.name] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// controller-runtime's workqueue series, as its Prometheus provider exposes
// them, and the series otelqueue adds beyond them.
var (
	controllerRuntimeSeries = []string{
		"workqueue_adds_total",
		"workqueue_depth",
		"workqueue_longest_running_processor_seconds",
		"workqueue_queue_duration_seconds_bucket",
		"workqueue_queue_duration_seconds_count",
		"workqueue_queue_duration_seconds_sum",
		"workqueue_retries_total",
		"workqueue_unfinished_work_seconds",
		"workqueue_work_duration_seconds_bucket",
		"workqueue_work_duration_seconds_count",
		"workqueue_work_duration_seconds_sum",
	}
	extraSeries = []string{
		"workqueue_active_workers",
		"workqueue_coalesced_total",
		"workqueue_delayed",
		"workqueue_delayed_adds_total",
		"workqueue_oldest_pending_item_seconds",
		"workqueue_reconcile_results_total",
		"workqueue_workers",
	}
	familyTypes = map[string]string{
		"workqueue_adds":  "counter",
		"workqueue_depth": "gauge",
		"workqueue_longest_running_processor_seconds": "gauge",
		"workqueue_queue_duration_seconds":            "histogram",
		"workqueue_retries":                           "counter",
		"workqueue_unfinished_work_seconds":           "gauge",
		"workqueue_work_duration_seconds":             "histogram",
		"workqueue_active_workers":                    "gauge",
		"workqueue_coalesced":                         "counter",
		"workqueue_delayed":                           "gauge",
		"workqueue_oldest_pending_item_seconds":       "gauge",
		"workqueue_reconcile_results":                 "counter",
		"workqueue_workers":                           "gauge",
	}
	scopeLabels = []string{"otel_scope_name", "otel_scope_schema_url", "otel_scope_version"}
)

const openMetrics = "application/openmetrics-text; version=1.0.0"

// TestPrometheusBridge scrapes the Prometheus exporter over HTTP, in
// OpenMetrics, and checks controller-runtime's series names and labels, the
// values, and the exemplars that lead from a bucket to the item's trace.
func TestPrometheusBridge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []otelprom.Option
		labels []string // the label names of every workqueue series but le and result
		target bool     // target_info is exposed
	}{
		{"default", nil, append([]string{"controller", "name"}, scopeLabels...), true},
		{"WithoutScopeInfo", []otelprom.Option{otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo()}, []string{"controller", "name"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			exp, err := otelprom.New(append([]otelprom.Option{otelprom.WithRegisterer(reg)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, envConfig{reader: exp})
			runner, err := newRunner(e.q, 1, okReconcile)
			if err != nil {
				t.Fatal(err)
			}
			defer runtime.KeepAlive(runner) // its workers count while it lives
			srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
			t.Cleanup(srv.Close)

			enq, _ := e.enqueuer(t, "handler")
			e.q.AddContext(enq, "a") // t=0
			e.step(3 * time.Second)
			e.getKey(t, "a") // waited 3s
			e.step(time.Second)
			e.q.AddRateLimited("a") // a retry
			e.q.Done("a")           // worked 1s
			e.q.Add("b")            // t=4s, waits
			e.step(500 * time.Millisecond)

			x := scrape(t, srv.URL, openMetrics)
			if !strings.HasPrefix(x.contentType, "application/openmetrics-text") {
				t.Fatalf("Content-Type %q, want OpenMetrics", x.contentType)
			}

			// Names: controller-runtime's, plus ours, and nothing else.
			want := slices.Sorted(slices.Values(append(slices.Clone(controllerRuntimeSeries), extraSeries...)))
			if got := x.names("workqueue_"); !slices.Equal(got, want) {
				t.Errorf("series %q\nwant %q", got, want)
			}
			for fam, typ := range familyTypes {
				if x.types[fam] != typ {
					t.Errorf("# TYPE %s is %q, want %q", fam, x.types[fam], typ)
				}
			}
			if got := len(x.series("target_info")); (got == 1) != tc.target {
				t.Errorf("%d target_info series; want one: %v", got, tc.target)
			}

			// Labels: name and controller (and the scope's, by default); the
			// depth also has priority.
			for _, s := range x.samples {
				if !strings.HasPrefix(s.name, "workqueue_") {
					continue
				}
				if s.labels["name"] != queueName || s.labels["controller"] != queueName {
					t.Errorf("%s%v: want name and controller %q", s.name, s.labels, queueName)
				}
				if tc.target && s.labels["otel_scope_name"] != semconv.ScopeOtelqueue {
					t.Errorf("%s: otel_scope_name %q", s.name, s.labels["otel_scope_name"])
				}
				names := slices.Sorted(maps.Keys(s.labels))
				names = slices.DeleteFunc(names, func(l string) bool { return l == "le" || l == "result" })
				want := tc.labels
				if s.name == "workqueue_depth" {
					// controller-runtime's third label on the depth.
					want = slices.Sorted(slices.Values(append(slices.Clone(want), "priority")))
					if s.labels["priority"] != "0" {
						t.Errorf("%s%v: want priority 0", s.name, s.labels)
					}
				}
				if !slices.Equal(names, want) {
					t.Errorf("%s has labels %q, want %q", s.name, names, want)
				}
			}

			// Values.
			q := map[string]string{"name": queueName}
			for name, v := range map[string]float64{
				"workqueue_depth":                             1, // b
				"workqueue_delayed":                           1, // a's retry, ready at t=5s
				"workqueue_adds_total":                        3, // a, its retry, b
				"workqueue_retries_total":                     1,
				"workqueue_oldest_pending_item_seconds":       0.5,
				"workqueue_unfinished_work_seconds":           0,
				"workqueue_longest_running_processor_seconds": 0,
				"workqueue_queue_duration_seconds_count":      1,
				"workqueue_queue_duration_seconds_sum":        3,
				"workqueue_work_duration_seconds_count":       1,
				"workqueue_work_duration_seconds_sum":         1,
				"workqueue_active_workers":                    0,
				"workqueue_workers":                           1, // the Runner's
			} {
				if got := x.one(t, name, q).value; got != v {
					t.Errorf("%s = %v, want %v", name, got, v)
				}
			}

			// Buckets: the DefaultBuckets bounds, cumulative.
			var les []string
			for _, s := range x.series("workqueue_queue_duration_seconds_bucket") {
				les = append(les, s.labels["le"])
			}
			var wantLes []string
			for _, b := range otelqueue.DefaultBuckets() {
				wantLes = append(wantLes, formatLe(b))
			}
			wantLes = append(wantLes, "+Inf")
			if !slices.Equal(les, wantLes) {
				t.Errorf("le %q\nwant %q", les, wantLes)
			}
			if v := x.one(t, "workqueue_queue_duration_seconds_bucket", map[string]string{"le": "2.5"}).value; v != 0 {
				t.Errorf("bucket le=2.5 = %v, want 0", v)
			}
			if v := x.one(t, "workqueue_queue_duration_seconds_bucket", map[string]string{"le": "+Inf"}).value; v != 1 {
				t.Errorf("bucket le=+Inf = %v, want 1", v)
			}

			// Exemplars: the 3s wait's bucket leads to a's "queued" span, the
			// 1s work's bucket to its "reconcile" span.
			_, queued, reconcile := attemptSpans(t, e.sr.Ended(), "a", 1)
			assertExemplar(t, x.one(t, "workqueue_queue_duration_seconds_bucket", map[string]string{"le": "5.0"}), queued.SpanContext(), 3)
			assertExemplar(t, x.one(t, "workqueue_work_duration_seconds_bucket", map[string]string{"le": "1.0"}), reconcile.SpanContext(), 1)
			n := 0
			for _, s := range x.samples {
				if s.exemplar != nil {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%d samples with exemplars, want 2", n)
			}

			// The classic text format: the same names, no exemplars.
			classic := scrape(t, srv.URL, "text/plain; version=0.0.4")
			if got := classic.names("workqueue_"); !slices.Equal(got, want) {
				t.Errorf("classic format series %q\nwant %q", got, want)
			}
			for _, s := range classic.samples {
				if s.exemplar != nil {
					t.Errorf("classic format has an exemplar on %s", s.name)
				}
			}
		})
	}
}

// formatLe formats a bucket bound as the OpenMetrics exposition does.
func formatLe(b float64) string {
	s := strconv.FormatFloat(b, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// assertExemplar checks that a bucket's exemplar carries span sc and value v.
func assertExemplar(t testing.TB, s sample, sc trace.SpanContext, v float64) {
	t.Helper()
	if s.exemplar == nil {
		t.Errorf("%s%v has no exemplar", s.name, s.labels)
		return
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	want := map[string]string{"trace_id": hex.EncodeToString(tid[:]), "span_id": hex.EncodeToString(sid[:])}
	if !maps.Equal(s.exemplar, want) || s.exValue != v {
		t.Errorf("%s{le=%q} exemplar %v %v, want %v %v", s.name, s.labels["le"], s.exemplar, s.exValue, want, v)
	}
}

// TestPrometheusTwoQueues checks that a second queue on the same exporter
// gets its own series, told apart by name and controller.
func TestPrometheusTwoQueues(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envConfig{reader: exp})
	other := newEnvWithMeter(t, e, "payments", otelqueue.WithControllerName("payment-reconciler"))
	e.q.Add("a")
	other.Add("x")
	other.Add("y")
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	t.Cleanup(srv.Close)
	x := scrape(t, srv.URL, openMetrics)
	for _, tc := range []struct {
		name, controller string
		depth            float64
	}{{queueName, queueName, 1}, {"payments", "payment-reconciler", 2}} {
		s := x.one(t, "workqueue_depth", map[string]string{"name": tc.name})
		if s.labels["controller"] != tc.controller || s.value != tc.depth {
			t.Errorf("workqueue_depth%v = %v, want controller %q, %v", s.labels, s.value, tc.controller, tc.depth)
		}
	}
	if n := len(x.series("workqueue_depth")); n != 2 {
		t.Errorf("%d workqueue_depth series, want 2", n)
	}
}

// newEnvWithMeter instruments a second scheduler, called name, with the
// providers of e.
func newEnvWithMeter(t testing.TB, e *env, name string, opts ...otelqueue.Option) *scheduler.Scheduler[string] {
	t.Helper()
	q := scheduler.New(scheduler.Config[string]{Name: name, Clock: e.clock})
	t.Cleanup(q.ShutDown)
	inst, err := otelqueue.Instrument(q, append([]otelqueue.Option{otelqueue.WithMeterProvider(e.mp), otelqueue.WithTracerProvider(e.tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	return q
}
