package inspect

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// Serve answers r with the page that page returns: JSON for ?format=json
// or an Accept header that prefers application/json, HTML otherwise, in
// which every trace id is a link when traceURL is set (its "{trace_id}"
// replaced by the id). Only GET and HEAD are allowed; page is not called
// for other methods. otelqueue.Inspector's ServeHTTP is Serve with its
// Page and TraceURL.
func Serve(w http.ResponseWriter, r *http.Request, page func() Page, traceURL string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the queue inspector is read-only: use GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	p := page()
	if r.URL.Query().Get("format") == "json" || wantsJSON(r.Header.Values("Accept")) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(p)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	view := inspectorView{Page: p, traceURL: traceURL}
	seen := map[string]int{}
	for _, q := range p.Queues {
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
	Page
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
{{with .Shard}}<p data-field="shard">Shard {{.}}</p>{{end}}
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
