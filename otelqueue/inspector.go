package otelqueue

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/schedhooks"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Inspector is a read-only http.Handler that shows the queues of the
// process instrumented with Instrument (and so those of package
// controllerruntime): per queue, its numbers, the keys waiting by priority
// and wait reason, the keys that have waited longest with why they wait,
// their priority, attempts and the trace that enqueued them or their last
// attempt, the keys in flight with how long they have run, the last failed
// attempts with their error and trace, the adaptive pool's count and last
// decision, and whether the queue is standby. It
// serves an HTML page, or JSON (InspectorPage) when the request asks for it
// (?format=json, or an Accept header of application/json).
//
// Keys are object names, and the page shows trace ids: serve it only where
// the metrics may be read (a loopback address, or behind the same
// authentication as /metrics); it never listens by itself. Nothing is
// recorded for it on the queues' hot path: each request reads the queues
// (scheduler.Scheduler.Inspect, under each queue's lock in turn) and
// renders them, with at most Limit keys per list. Each look also ends a
// window of the queue's counters, which gives its bottleneck class
// (InspectedBottleneck). An Inspector must not be copied after first use.
type Inspector struct {
	// Limit is the number of keys listed per queue in each list: 0 (or
	// less) means DefaultInspectorLimit, and more than MaxInspectorLimit
	// means MaxInspectorLimit.
	Limit int
	// TraceURL, when set, makes every trace id a link: the URL with its
	// "{trace_id}" replaced by the id in hex, e.g.
	// "http://127.0.0.1:16686/trace/{trace_id}" for Jaeger's UI.
	TraceURL string
	// Sizer, when set, puts its recommendation at the top of the page
	// (InspectorPage.Recommendation): the workers, cores and memory the
	// queues it sizes and their process need.
	Sizer *Sizer

	// mu guards looks: the start of each queue's current window, per
	// Inspector (InspectedBottleneck).
	mu    sync.Mutex
	looks map[*inspectable]*look
}

// DefaultInspectorLimit is the number of keys an Inspector lists per queue
// and list unless told otherwise; MaxInspectorLimit the most it lists.
const (
	DefaultInspectorLimit = 20
	MaxInspectorLimit     = 1000
)

// InspectorPage is what an Inspector shows, and its JSON form.
type InspectorPage struct {
	// At is when the page was made.
	At time.Time `json:"at"`
	// Recommendation is the Inspector's Sizer's, nil without one.
	Recommendation *bottleneck.Recommendation `json:"recommendation,omitempty"`
	Queues         []InspectedQueue           `json:"queues"`
}

// InspectedQueue is one queue on an Inspector's page.
type InspectedQueue struct {
	Name    string `json:"name"`
	Standby bool   `json:"standby"`
	// Depth, Delayed, Held and InFlight are those of scheduler.Stats;
	// OldestPending the wait of the oldest key ready.
	Depth         int           `json:"depth"`
	Delayed       int           `json:"delayed"`
	Held          int           `json:"held"`
	InFlight      int           `json:"in_flight"`
	OldestPending time.Duration `json:"oldest_pending_ns"`
	// Pending counts the keys waiting by priority and wait reason.
	Pending []InspectedCount `json:"pending"`
	// Oldest are the keys that have waited longest, Running the runs in
	// flight that have run longest: at most the Inspector's Limit each.
	Oldest  []InspectedKey `json:"oldest"`
	Running []InspectedRun `json:"running"`
	// Failures are the last failed attempts, the latest first (at most
	// MaxFailures): those of a Runner, of package controllerruntime's
	// Reconciler, and those given to Instrumentation.RecordFailure.
	Failures []InspectedFailure `json:"failures"`
	// Adaptive is the adaptive pool's state, when the queue has one, and
	// Decisions its last decisions (at most MaxDecisions), the latest
	// first.
	Adaptive  *AdaptiveStats      `json:"adaptive,omitempty"`
	Decisions []InspectedDecision `json:"decisions,omitempty"`
	// Bottleneck is what limits the queue over this Inspector's last
	// window.
	Bottleneck *InspectedBottleneck `json:"bottleneck"`
}

// InspectedCount is the number of keys waiting with one priority and wait
// reason in one place: "ready" (counted in Depth), "delayed" (Delayed) or
// "held" (Held). A key held until its run ended is ready, with the reason
// held (scheduler.PendingCount).
type InspectedCount struct {
	Priority int    `json:"priority"`
	Reason   string `json:"reason"`
	Place    string `json:"place"`
	Keys     int    `json:"keys"`
}

// InspectedKey is a key waiting.
type InspectedKey struct {
	Key string `json:"key"`
	// Wait is how long since its earliest add still pending.
	Wait time.Duration `json:"wait_ns"`
	// ReadyIn is how long until it may run, for a key delayed (0: ready).
	ReadyIn time.Duration `json:"ready_in_ns"`
	// Reason is why it waits; Trigger what the add that set its ready
	// time came from (scheduler.Trigger): why it will run.
	Reason  string `json:"reason"`
	Trigger string `json:"trigger"`
	// Source is where the trigger's event came from, when the add said
	// (scheduler.AddOptions.Source: with package controllerruntime's
	// handlers, the watched object's kind).
	Source   string `json:"source,omitempty"`
	Priority int    `json:"priority"`
	// Attempts is the attempt its next run will be (1 + the rate
	// limiter's failures); Coalesced the adds merged into it.
	Attempts  int `json:"attempts"`
	Coalesced int `json:"coalesced"`
	// EnqueuedBy is the trace id of the first add that carried a trace
	// context; LastAttempt that of the attempt a retry follows. Empty when
	// none.
	EnqueuedBy  string `json:"enqueued_by,omitempty"`
	LastAttempt string `json:"last_attempt,omitempty"`
}

// InspectedRun is a run in flight.
type InspectedRun struct {
	Key     string        `json:"key"`
	Running time.Duration `json:"running_ns"`
	// Trigger is why it runs (scheduler.Trigger); Source where its event
	// came from, if the add said.
	Trigger string `json:"trigger"`
	Source  string `json:"source,omitempty"`
	// TraceID is the attempt's trace id, when it is traced.
	TraceID string `json:"trace_id,omitempty"`
}

// inspectable is a live Instrumentation, as an Inspector reads it. It
// refers to its scheduler through a weak pointer only (the Instrumentation
// refers to it strongly): a scheduler dropped without Stop is not kept
// alive by the list of inspectables.
type inspectable struct {
	name    string
	inspect func(limit int) (inspected, bool)
	standby *standby // nil without WithStandby
	b       *binding
	// client is the Instrumentation's client instruments WithClientTime,
	// nil without; workers is WithWorkers' count, 0 without.
	client  *clientInstruments
	workers int
	// realClock says whether the queue runs on the real clock, so that
	// its windows are the process's time (for its CPU); start is the
	// reading at registration, the start of every Inspector's first
	// window.
	realClock bool
	start     queueReading
}

// inspected is one reading of a queue for a page.
type inspected struct {
	raw         scheduler.Inspection[string]
	stats       scheduler.Stats
	maxInFlight int
}

// inspectables are the live Instrumentations of the process, in the order
// they were made.
var inspectables struct {
	mu   sync.Mutex
	list []*inspectable
}

// registerInspectable adds the Instrumentation of s to what Inspectors
// show, and returns the function that removes it. The scheduler is held by
// a weak pointer: a scheduler dropped without Stop is not kept alive.
func registerInspectable[K comparable](s *scheduler.Scheduler[K], sb *standby, b *binding, client *clientInstruments, workers int) func() {
	wp := weak.Make(s)
	clk := schedhooks.Of(s).Clock
	_, real := clk.(clock.RealClock)
	in := &inspectable{name: s.Name(), standby: sb, b: b, client: client, workers: workers, realClock: real}
	// The start of the first windows: the queue's counters now, without
	// the process's (a program that never looks pays no read of them).
	in.start = queueReading{at: clk.Now(), q: s.Stats()}
	if client != nil {
		in.start.client = client.stats()
	}
	in.inspect = func(limit int) (inspected, bool) {
		s := wp.Value()
		if s == nil {
			return inspected{}, false
		}
		st := s.Stats()
		raw := s.Inspect(limit)
		out := scheduler.Inspection[string]{At: raw.At, Pending: raw.Pending, InFlight: raw.InFlight, ByPriority: raw.ByPriority}
		for _, p := range raw.Oldest {
			out.Oldest = append(out.Oldest, scheduler.PendingKey[string]{
				Key: keyString(p.Key), EnqueuedAt: p.EnqueuedAt, ReadyAt: p.ReadyAt, Reason: p.Reason, Trigger: p.Trigger, Source: p.Source,
				Priority: p.Priority, Requeues: p.Requeues, Coalesced: p.Coalesced, Delayed: p.Delayed, Held: p.Held,
				Origin: p.Origin, PreviousAttempt: p.PreviousAttempt,
			})
		}
		for _, r := range raw.Running {
			out.Running = append(out.Running, scheduler.RunningKey[string]{Key: keyString(r.Key), StartedAt: r.StartedAt, SpanContext: r.SpanContext, Trigger: r.Trigger, Source: r.Source})
		}
		return inspected{raw: out, stats: st, maxInFlight: s.MaxInFlight()}, true
	}
	inspectables.mu.Lock()
	inspectables.list = append(inspectables.list, in)
	inspectables.mu.Unlock()
	return func() {
		inspectables.mu.Lock()
		defer inspectables.mu.Unlock()
		inspectables.list = slices.DeleteFunc(inspectables.list, func(x *inspectable) bool { return x == in })
	}
}

// Page returns what the Inspector shows now.
func (i *Inspector) Page() InspectorPage {
	limit := DefaultInspectorLimit
	if i != nil && i.Limit > 0 {
		limit = min(i.Limit, MaxInspectorLimit)
	}
	inspectables.mu.Lock()
	list := slices.Clone(inspectables.list)
	inspectables.mu.Unlock()
	page := InspectorPage{At: time.Now(), Queues: []InspectedQueue{}}
	var gone []*inspectable
	var proc processReading
	for _, in := range list {
		got, ok := in.inspect(limit)
		if !ok {
			gone = append(gone, in) // its scheduler was dropped without Stop
			continue
		}
		raw, st := got.raw, got.stats
		q := InspectedQueue{
			Name: in.name, Standby: in.standby.isStandby(),
			Depth: st.Depth, Delayed: st.Delayed, Held: st.Held, InFlight: st.InFlight, OldestPending: st.OldestPending,
			// Empty lists, not null, in the JSON.
			Pending: []InspectedCount{}, Oldest: []InspectedKey{}, Running: []InspectedRun{},
			Failures: in.b.failures.last(),
		}
		for _, c := range raw.ByPriority {
			place := "ready"
			switch {
			case c.Held:
				place = "held"
			case c.Delayed:
				place = "delayed"
			}
			q.Pending = append(q.Pending, InspectedCount{Priority: c.Priority, Reason: c.Reason.String(), Place: place, Keys: c.Keys})
		}
		now := raw.At
		for _, p := range raw.Oldest {
			k := InspectedKey{
				Key: p.Key, Reason: p.Reason.String(), Trigger: p.Trigger.String(), Source: p.Source, Priority: p.Priority,
				Attempts: p.Requeues + 1, Coalesced: p.Coalesced,
				EnqueuedBy: traceID(p.Origin), LastAttempt: traceID(p.PreviousAttempt),
			}
			if !now.IsZero() {
				k.Wait = now.Sub(p.EnqueuedAt)
				if p.Delayed {
					k.ReadyIn = max(0, p.ReadyAt.Sub(now))
				}
			}
			q.Oldest = append(q.Oldest, k)
		}
		for _, r := range raw.Running {
			run := InspectedRun{Key: r.Key, Trigger: r.Trigger.String(), Source: r.Source, TraceID: traceID(r.SpanContext)}
			if !now.IsZero() {
				run.Running = now.Sub(r.StartedAt)
			}
			q.Running = append(q.Running, run)
		}
		if p := in.b.pool.Load(); p != nil {
			a := p.Stats()
			q.Adaptive = &a
			q.Decisions = p.decisions()
		}
		workers := int(in.b.workerCount())
		if workers == 0 {
			workers = in.workers
		}
		if workers == 0 {
			workers = got.maxInFlight
		}
		if w, since, ok := i.sizerWindow(in); ok {
			q.Bottleneck = inspectedBottleneck(w, since)
			if q.Standby {
				q.Bottleneck.Class, q.Bottleneck.Recommended = "", 0
				q.Bottleneck.Verdict = "none while standby: the workers wait for leadership"
			}
		} else if !now.IsZero() {
			q.Bottleneck = i.bottleneckOf(in, in.reading(now, st, &proc), workers, q.Standby)
		}
		page.Queues = append(page.Queues, q)
	}
	if len(gone) > 0 {
		inspectables.mu.Lock()
		inspectables.list = slices.DeleteFunc(inspectables.list, func(x *inspectable) bool { return slices.Contains(gone, x) })
		inspectables.mu.Unlock()
	}
	i.forget(list, gone)
	slices.SortStableFunc(page.Queues, func(a, b InspectedQueue) int { return cmp.Compare(a.Name, b.Name) })
	if i != nil && i.Sizer != nil {
		r := i.Sizer.Recommend()
		page.Recommendation = &r
	}
	return page
}

// sizerWindow is the window of in's queue that the Inspector's Sizer read
// last, when it sizes the queue: the same for every reader.
func (i *Inspector) sizerWindow(in *inspectable) (bottleneck.Window, time.Time, bool) {
	if i == nil || i.Sizer == nil {
		return bottleneck.Window{}, time.Time{}, false
	}
	return i.Sizer.lastWindow(in.b)
}

// traceID is sc's trace id in hex, or "" for an invalid sc.
func traceID(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// ServeHTTP serves the page: JSON for ?format=json or an Accept header of
// application/json, HTML otherwise. Only GET and HEAD are allowed.
func (i *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the queue inspector is read-only: use GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	page := i.Page()
	if r.URL.Query().Get("format") == "json" || wantsJSON(r.Header.Values("Accept")) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(page)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	traceURL := ""
	if i != nil {
		traceURL = i.TraceURL
	}
	view := inspectorView{InspectorPage: page, traceURL: traceURL}
	seen := map[string]int{}
	for _, q := range page.Queues {
		id := "queue-" + q.Name
		if n := seen[q.Name]; n > 0 {
			id = fmt.Sprintf("%s-%d", id, n+1)
		}
		seen[q.Name]++
		view.IDs = append(view.IDs, id)
	}
	if err := inspectorTemplate.Execute(w, view); err != nil {
		// The header is sent: all that is left is to say so in the page.
		fmt.Fprintf(w, "<p>rendering the page failed: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// wantsJSON says whether the Accept headers prefer application/json to
// HTML: a media range of application/json (or application/*) with a
// quality above 0 and above text/html's. Without one, the page is HTML.
func wantsJSON(accept []string) bool {
	json, html := -1.0, -1.0
	for _, h := range accept {
		for _, r := range strings.Split(h, ",") {
			media, params, _ := strings.Cut(r, ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
					if f, err := strconv.ParseFloat(v, 64); err == nil {
						q = f
					}
				}
			}
			switch strings.ToLower(strings.TrimSpace(media)) {
			case "application/json":
				json = max(json, q)
			case "text/html", "text/*", "*/*":
				html = max(html, q)
			}
		}
	}
	return json > 0 && json >= html
}

// inspectorView is the page with what the template needs besides: the
// queues' element ids, unique though two queues have one name.
type inspectorView struct {
	InspectorPage
	traceURL string
	IDs      []string
}

// TraceLink returns the link of a trace id, or "" when no TraceURL is set.
func (v inspectorView) TraceLink(id string) string {
	if v.traceURL == "" || id == "" {
		return ""
	}
	return strings.ReplaceAll(v.traceURL, "{trace_id}", id)
}

// breakAtSlashes is key, escaped, with a line break opportunity after each
// "/": a key (namespace/name) wraps between its parts, never inside a name.
func breakAtSlashes(key string) template.HTML {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = template.HTMLEscapeString(p)
	}
	return template.HTML(strings.Join(parts, "/<wbr>"))
}

// roundForPage shortens a duration for the page.
func roundForPage(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

var inspectorTemplate = template.Must(template.New("inspector").Funcs(template.FuncMap{
	"dur": roundForPage,
	// pair makes the argument of the "trace" template: a trace id and its
	// link (empty when none).
	"pair": func(id, link string) map[string]string { return map[string]string{"ID": id, "Link": link} },
	"wbr":  breakAtSlashes,
	// mib is a whole number of MiB as a Kubernetes quantity ("24Mi");
	// with a B after it, as GOMEMLIMIT takes it.
	"mib":      func(b uint64) string { return fmt.Sprintf("%dMi", b>>20) },
	"peakSpan": func() time.Duration { return bottleneck.PeakSpan },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Queues — otelqueue</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; margin-bottom: 0.3em; }
table { border-collapse: collapse; margin-bottom: 1em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: left; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; } td.num { text-align: right; }
.key { font-family: ui-monospace, monospace; white-space: nowrap; }
.standby { color: #a60; font-weight: bold; } .muted, .source { color: #777; }
dl.figures { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; }
dl.figures dt { color: #555; } dl.figures dd { margin: 0; }
</style>
</head>
<body>
<h1>Queues</h1>
<p class="muted">At {{.At.Format "2006-01-02 15:04:05.000 MST"}}. Read-only; reload for a new look. <a href="?format=json">JSON</a></p>
{{with .Recommendation}}<section class="size" id="size">
<h2>Size</h2>
{{if .At.IsZero}}<p class="muted" data-field="size">Nothing measured yet.</p>{{else}}<dl class="figures">
{{range .Queues}}<dt>workers of {{.Name}}</dt><dd data-field="size-workers" data-queue="{{.Name}}"><strong>{{if .Known}}{{.Run}}{{else}}unknown{{end}}</strong> {{.}}</dd>
{{end}}<dt>CPU</dt><dd data-field="size-cpu">{{if .CPU.Known}}<strong>request {{printf "%.2f" .CPU.Request}}, limit {{printf "%.2f" .CPU.Limit}}</strong> {{end}}{{.CPU}}</dd>
<dt>memory</dt><dd data-field="size-memory">{{if .Memory.Known}}<strong>request {{mib .Memory.Request}}, limit {{mib .Memory.Limit}}, GOMEMLIMIT={{mib .Memory.GOMEMLIMIT}}B</strong> {{end}}{{.Memory}}</dd>
<dt>over</dt><dd data-field="size-over">{{if lt .Span peakSpan}}the {{dur .Over}} so far{{else}}the busiest {{dur .Span}} of the last {{dur .Over}}{{end}}</dd>
</dl>{{end}}
</section>{{end}}
{{if not .Queues}}<p id="no-queues">No instrumented queue in this process.</p>{{end}}
{{range $i, $q := .Queues}}
<section class="queue" id="{{index $.IDs $i}}" data-queue="{{.Name}}">
<h2>{{.Name}}{{if .Standby}} <span class="standby" data-field="standby">standby: waiting for leadership</span>{{end}}</h2>
<dl class="figures">
<dt>ready (depth)</dt><dd data-field="depth">{{.Depth}}</dd>
<dt>delayed</dt><dd data-field="delayed">{{.Delayed}}</dd>
<dt>held (added while in flight)</dt><dd data-field="held">{{.Held}}</dd>
<dt>in flight</dt><dd data-field="in-flight">{{.InFlight}}</dd>
<dt>oldest ready key has waited</dt><dd data-field="oldest-pending">{{dur .OldestPending}}</dd>
{{with .Bottleneck}}<dt>bottleneck</dt><dd><strong class="class" data-field="bottleneck-class">{{if .Class}}{{.Class}}{{else}}unknown{{end}}</strong> <span data-field="bottleneck-verdict">{{.Verdict}}</span></dd>
<dt>over the last</dt><dd data-field="bottleneck-window">{{dur .Window}}{{if .Workers}}: workers {{.Workers}}, utilization {{printf "%.2f" .Utilization}}{{if .Recommended}}, recommended {{.Recommended}}{{end}}{{end}}; {{printf "%.1f" .Arrivals}} arrivals/s, {{printf "%.1f" .Reconciles}} reconciles/s{{if .MeanWork}} of {{dur .MeanWork}}{{end}}{{if .CPUCores}}; CPU {{printf "%.2f" .CPU}} of {{printf "%.2g" .CPUCores}} cores{{end}}</dd>{{end}}
{{with .Adaptive}}<dt>adaptive workers</dt><dd data-field="adaptive">{{.Limit}} (min {{.Min}}, max {{.Max}}{{if .Ceiling}}, ceiling {{.Ceiling}}{{end}}{{if .Needed}}, demand {{.Needed}}{{end}}){{if .Changes}}; last change: {{.Reason}}, {{.Detail}}{{end}}</dd>{{end}}
</dl>
{{if .Decisions}}<h3>The adaptive pool's last decisions, latest first</h3>
<table class="decisions"><tr><th>when</th><th>workers</th><th>reason</th><th>figures</th></tr>
{{range .Decisions}}<tr data-field="decision"><td>{{.At.Format "15:04:05.000"}}</td><td class="num">{{if eq .From .To}}{{.To}} (held){{else}}{{.From}} → {{.To}}{{end}}</td><td>{{.Reason}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>{{end}}
<h3>Waiting, by priority, place and reason</h3>
{{if .Pending}}<table class="pending"><tr><th>priority</th><th>place</th><th>reason</th><th>keys</th></tr>
{{range .Pending}}<tr data-place="{{.Place}}"><td class="num">{{.Priority}}</td><td>{{.Place}}</td><td>{{.Reason}}</td><td class="num">{{.Keys}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No key waits.</p>{{end}}
<h3>Waiting longest</h3>
{{if .Oldest}}<table class="oldest"><tr><th>key</th><th>waited</th><th>reason</th><th>trigger</th><th>ready in</th><th>priority</th><th>attempt</th><th>merged adds</th><th>enqueued by trace</th><th>last attempt's trace</th></tr>
{{range .Oldest}}<tr data-key="{{.Key}}"><td class="key">{{wbr .Key}}</td><td class="num">{{dur .Wait}}</td><td>{{.Reason}}</td><td data-field="trigger">{{.Trigger}}{{if .Source}} <span class="source" data-field="source">{{.Source}}</span>{{end}}</td><td class="num">{{if .ReadyIn}}{{dur .ReadyIn}}{{end}}</td><td class="num">{{.Priority}}</td><td class="num">{{.Attempts}}</td><td class="num">{{.Coalesced}}</td><td class="key">{{template "trace" ($.TraceLink .EnqueuedBy | pair .EnqueuedBy)}}</td><td class="key">{{template "trace" ($.TraceLink .LastAttempt | pair .LastAttempt)}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No key waits.</p>{{end}}
<h3>In flight, longest first</h3>
{{if .Running}}<table class="running"><tr><th>key</th><th>running for</th><th>trigger</th><th>trace</th></tr>
{{range .Running}}<tr data-key="{{.Key}}"><td class="key">{{wbr .Key}}</td><td class="num">{{dur .Running}}</td><td data-field="trigger">{{.Trigger}}{{if .Source}} <span class="source" data-field="source">{{.Source}}</span>{{end}}</td><td class="key">{{template "trace" ($.TraceLink .TraceID | pair .TraceID)}}</td></tr>
{{end}}</table>{{else}}<p class="muted">Nothing in flight.</p>{{end}}
<h3>Last failures, latest first</h3>
{{if .Failures}}<table class="failures"><tr><th>key</th><th>when</th><th>outcome</th><th>error</th><th>trace</th></tr>
{{range .Failures}}<tr data-key="{{.Key}}"><td class="key">{{wbr .Key}}</td><td>{{.At.Format "15:04:05.000"}}</td><td>{{.Outcome}}</td><td class="error">{{.Error}}</td><td class="key">{{template "trace" ($.TraceLink .TraceID | pair .TraceID)}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No failure since the queue was instrumented.</p>{{end}}
</section>
{{end}}
</body>
</html>
{{define "trace"}}{{if .ID}}{{if .Link}}<a href="{{.Link}}">{{.ID}}</a>{{else}}{{.ID}}{{end}}{{end}}{{end}}`))
