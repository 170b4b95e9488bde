// Package rulesgen renders the artifacts of example/prometheus that copy the
// classifier's table (package bottleneck): the Prometheus rules
// (rules.yml, from rules.yml.tmpl) and the figures script for a user with
// no Prometheus (queue-figures.sh, from queue-figures.sh.tmpl). The test
// beside them (the example module's, which holds the files: the root
// module does not) fails when a checked-in artifact differs from its
// rendering, so that a threshold changed in the table fails the build until
// they are regenerated:
//
//	cd example && go test ./prometheus -update
package rulesgen

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/otelqueue/otelqueue/internal/sizing"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// Artifacts are the generated files, by their path from the repository's
// root, each with its template beside it (the path + ".tmpl").
var Artifacts = []string{
	"example/prometheus/rules.yml",
	"example/prometheus/queue-figures.sh",
	"example/prometheus/fleet-figures.sh",
}

// Header is the first line of every generated file: where it comes from.
const Header = "GENERATED from %s.tmpl and the table of package bottleneck by internal/rulesgen (cd example && go test ./prometheus -update): edit those, not this file."

// promSeries is, for each signal of the table, the per-queue series of
// rules.yml that holds it, and how the rule compares it: "%s" is the
// comparison and threshold (">= 0.9").
var promSeries = map[bottleneck.Signal]string{
	// The API server's signals are the process's, joined onto only the
	// queues that have client series (a queue that makes no API calls is
	// never classified by the API server).
	"apiserver_unavailable": "queue:process_apiserver_unavailable:ratio_rate5m %s",
	"cpu_utilization":       "queue:process_cpu_utilization:ratio_rate5m %s",
	"cpu_throttled":         "queue:process_cpu_throttled:ratio_rate5m %s",
	"cpu_maxprocs":          "queue:process_cpu_maxprocs:ratio_rate5m %s",
	"cpu_wait_share":        "queue:workqueue_cpu_wait:share_rate5m %s",
	"retry_after_share":     "queue:workqueue_client_retry_after:share_rate5m %s",
	"rate_limiter_share":    "queue:workqueue_client_rate_limiter:share_rate5m %s",
	"apiserver_latency":     "queue:process_apiserver_latency:mean_rate5m %s",
	"error_retries":         "queue:workqueue_backoff_retries:ratio_rate5m %s",
	// The workers class's value is Little's law itself: the threshold is
	// a factor of the configured count.
	"workers_needed": "queue:workqueue_littles_law_workers:rate5m %s * queue:workqueue_workers:sum",
}

// awkSignals is, for each signal, the name queue-figures.sh computes it
// under (its val[] and known[] arrays).
var awkSignals = map[bottleneck.Signal]bool{
	"apiserver_unavailable": true, "apiserver_latency": true,
	"cpu_utilization": true, "cpu_throttled": true,
	"cpu_maxprocs": true, "cpu_wait_share": true,
	"retry_after_share": true, "rate_limiter_share": true,
	"error_retries": true, "workers_needed": true,
}

// Num is a threshold as the rules write it: the shortest decimal.
func Num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// promDuration is d as PromQL writes it, in its largest whole unit: "5m",
// "1h", "90s".
func promDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// pct is a share as a percentage.
func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', -1, 64) + "%" }

// classChain is the expression of queue:workqueue_bottleneck:rate5m: each
// rule of the table in its order, a class only for the queues no earlier
// one took, and none with the utilization for the others. indent prefixes
// every line but the first.
func classChain(indent string) (string, error) {
	var b strings.Builder
	for _, r := range bottleneck.Rules() {
		series, ok := promSeries[r.Signal]
		if !ok {
			return "", fmt.Errorf("rulesgen: the table's signal %q has no series in rules.yml: add it to promSeries", r.Signal)
		}
		expr := fmt.Sprintf(series, r.Comparison()+" "+Num(r.Threshold))
		fmt.Fprintf(&b, "label_replace(%s, \"bottleneck\", %q, \"\", \"\")\n%sor on (job, instance, name, controller)\n%s", expr, r.Class, indent, indent)
	}
	b.WriteString(`label_replace(queue:workqueue_utilization:ratio_rate5m, "bottleneck", "none", "", "")`)
	return b.String(), nil
}

// classTable is the table as comment lines, each prefixed by prefix.
func classTable(prefix string) string {
	var b strings.Builder
	for _, r := range bottleneck.Rules() {
		fmt.Fprintf(&b, "%s%-18s %s %s %s\n", prefix, r.Class, r.Signal, r.Comparison(), Num(r.Threshold))
	}
	fmt.Fprintf(&b, "%s%-18s otherwise, when the utilization is known", prefix, bottleneck.None)
	return b.String()
}

// moreWorkers is the regular expression of the classes whose
// recommendation may ask for more workers than configured, none included.
func moreWorkers() string {
	var cs []string
	for _, r := range bottleneck.Rules() {
		if r.MoreWorkers && !containsString(cs, string(r.Class)) {
			cs = append(cs, string(r.Class))
		}
	}
	return strings.Join(append(cs, string(bottleneck.None)), "|")
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// awkChain is queue-figures.sh's classification: each rule of the table in
// its order, on the figures the script computed into val[] and known[].
func awkChain(indent string) (string, error) {
	var b strings.Builder
	for i, r := range bottleneck.Rules() {
		if !awkSignals[r.Signal] {
			return "", fmt.Errorf("rulesgen: the table's signal %q is not computed by queue-figures.sh: add it to awkSignals and the script", r.Signal)
		}
		if i > 0 {
			b.WriteString(" else ")
		}
		fmt.Fprintf(&b, "if (known[%q] && val[%q] %s %s) {\n%s\tcls = %q; sig = %q; thr = %q\n%s\tchange = %s\n%s}",
			r.Signal, r.Signal, r.Comparison(), Num(r.Threshold), indent, r.Class, r.Signal, r.Comparison()+" "+Num(r.Threshold), indent, awkString(r.Change), indent)
	}
	return b.String(), nil
}

// awkLabel is the awk function of the figures scripts that reads a label
// of a series.
const awkLabel = `# The value of label k in a series name{labels}: k must follow { or , (so
# that name does not match otel_scope_name).
function label(s, k,    i, r) {
	i = index(s, "{" k "=\"")
	if (i == 0) i = index(s, "," k "=\"")
	if (i == 0) return ""
	r = substr(s, i + length(k) + 3)
	return substr(r, 1, index(r, "\"") - 1)
}`

// awkString is s as a double-quoted awk string inside the script's
// single-quoted awk program: an apostrophe closes the shell's quotes, is
// written quoted, and reopens them.
func awkString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + strings.ReplaceAll(s, "'", `'"'"'`) + `"`
}

// thresholds returns the table's threshold of each signal. The three
// downstream shares are one threshold in the templates: an error when they
// differ.
func thresholds() (map[bottleneck.Signal]float64, error) {
	th := map[bottleneck.Signal]float64{}
	for _, r := range bottleneck.Rules() {
		th[r.Signal] = r.Threshold
	}
	if th["retry_after_share"] != th["rate_limiter_share"] || th["retry_after_share"] != th["cpu_wait_share"] {
		return nil, fmt.Errorf("rulesgen: the table's downstream shares differ (%v): the templates write one (DownstreamShare)", th)
	}
	return th, nil
}

// Render returns the artifact at path rendered from its template text.
func Render(path, tmpl string) ([]byte, error) {
	t, err := template.New(path).Delims("<%", "%>").Option("missingkey=error").Funcs(template.FuncMap{
		"num": Num, "pct": pct,
		"classChain": classChain, "classTable": classTable, "moreWorkers": moreWorkers,
		"awkChain": awkChain, "awkLabel": func() string { return awkLabel },
		// The sizing's spans as Prometheus durations: "5m", "1h".
		"peakSpan": func() string { return promDuration(bottleneck.PeakSpan) },
		"horizon":  func() string { return promDuration(bottleneck.Horizon) },
		"header":   func() string { return fmt.Sprintf(Header, path) },
	}).Parse(tmpl)
	if err != nil {
		return nil, fmt.Errorf("rulesgen: %s.tmpl: %w", path, err)
	}
	th, err := thresholds()
	if err != nil {
		return nil, err
	}
	data := map[string]float64{
		"APIServerUnavailableShare": th["apiserver_unavailable"],
		"APIServerSlowLatency":      th["apiserver_latency"],
		"CPUUtilizationShare":       th["cpu_utilization"],
		"CPUThrottledShare":         th["cpu_throttled"],
		"DownstreamShare":           th["retry_after_share"],
		"ErrorRetriesShare":         th["error_retries"],
		"TargetUtilization":         bottleneck.TargetUtilization,
		"SaturatedAt":               sizing.SaturatedAt,
		"CPULimitPerRequest":        sizing.CPULimitPerRequest,
		"MemoryLimitPerRequest":     sizing.MemoryLimitPerRequest,
		"GOMEMLIMITShare":           sizing.GOMEMLIMITShare,
		"LargestPodCores":           sizing.LargestPodCores,
		"LargestPodMemory":          sizing.LargestPodMemory,
		"HotShardSkew":              sizing.HotShardSkew,
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("rulesgen: %s.tmpl: %w", path, err)
	}
	return b.Bytes(), nil
}
