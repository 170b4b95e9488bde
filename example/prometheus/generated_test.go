// Package prometheus_test checks the recording and alerting rules and
// queue-figures.sh of this directory against their templates and the
// classifier's table (their renderer: the root module's internal/rulesgen).
package prometheus_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/rulesgen"
	"github.com/otelqueue/otelqueue/internal/sizing"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/testutil"
)

var update = flag.Bool("update", false, "write the generated artifacts")

func TestMain(m *testing.M) { testutil.Main(m) }

// TestGenerated fails when a checked-in artifact is not its rendering from
// its template and the table: a threshold changed in package bottleneck
// fails here until the artifacts are regenerated (-update).
func TestGenerated(t *testing.T) {
	for _, path := range rulesgen.Artifacts {
		file := filepath.Join("..", "..", path)
		tmpl, err := os.ReadFile(file + ".tmpl")
		if err != nil {
			t.Fatal(err)
		}
		want, err := rulesgen.Render(path, string(tmpl))
		if err != nil {
			t.Fatal(err)
		}
		testutil.Generated(t, file, want, *update, "cd example && go test ./prometheus -update (and make rules)")
	}
}

// boundaryCases are, for each signal of the table, the cases of
// rules_test.yml and queue-figures_test.sh just below its threshold, at it
// and just above it, every other signal neutral.
var boundaryCases = map[bottleneck.Signal][3]string{
	"apiserver_unavailable": {"ua-below", "ua-at", "ua-above"},
	"apiserver_latency":     {"lat-below", "lat-at", "lat-above"},
	"cpu_utilization":       {"cpu-below", "cpu-at", "cpu-above"},
	"cpu_throttled":         {"thr-below", "thr-at", "thr-above"},
	"cpu_maxprocs":          {"mp-below", "mp-at", "mp-above"},
	"cpu_wait_share":        {"cw-below", "cw-at", "cw-above"},
	"retry_after_share":     {"ra-below", "ra-at", "ra-above"},
	"rate_limiter_share":    {"rl-below", "rl-at", "rl-above"},
	"error_retries":         {"err-below", "err-at", "err-above"},
	// Little's law one under the configured count is no case of its own:
	// equal to it is the threshold (1), one more is above.
	"workers_needed": {"", "ll-equal", "ll-more"},
}

// promCase is an expected sample of queue:workqueue_bottleneck:rate5m in
// rules_test.yml: its class, for the queue named after its case.
var promCase = regexp.MustCompile(`'queue:workqueue_bottleneck:rate5m\{bottleneck="([a-z-]+)",[^}]*name="([a-z-]+)"`)

// figuresCase is a check of queue-figures_test.sh: its case and class.
var figuresCase = regexp.MustCompile(`(?m)^check ([a-z-]+) ["']bottleneck=([a-z-]+) `)

// TestBoundaryCases checks that rules_test.yml (promtool) and
// queue-figures_test.sh test every rule of the table on both sides of its
// threshold and at it, with the class the table gives there: a rule's
// comparison changed in the table (>= to >) fails here until the cases
// follow, and a rule added to the table fails until it has cases.
func TestBoundaryCases(t *testing.T) {
	suites := map[string]map[string]string{"rules_test.yml": {}, "queue-figures_test.sh": {}}
	for _, m := range promCase.FindAllStringSubmatch(readFile(t, "rules_test.yml"), -1) {
		suites["rules_test.yml"][m[2]] = m[1]
	}
	for _, m := range figuresCase.FindAllStringSubmatch(readFile(t, "queue-figures_test.sh"), -1) {
		suites["queue-figures_test.sh"][m[1]] = m[2]
	}
	for _, r := range bottleneck.Rules() {
		cases, ok := boundaryCases[r.Signal]
		if !ok {
			t.Errorf("%v: no boundary cases: add them to rules_test.yml, queue-figures_test.sh and boundaryCases", r)
			continue
		}
		for suite, got := range suites {
			for i, name := range cases {
				if name == "" {
					continue
				}
				class, ok := got[name]
				if !ok {
					t.Errorf("%s: no case %s for %v", suite, name, r)
					continue
				}
				want := []bool{false, r.Inclusive, true}[i]
				if (class == string(r.Class)) != want {
					t.Errorf("%s: case %s expects %s; the table's %v says the class holds there: %v", suite, name, class, r, want)
				}
			}
		}
	}
}

// TestPodSizeCase computes, with package bottleneck's Recommend, the case
// of rules_test.yml's group "pod size" (minute by minute, each span the
// 5 minutes before it, as the rules' 5m rates), and checks that the values
// that group expects of the recording rules at 70m are Recommend's: the
// rules give the one answer the Sizer gives.
func TestPodSizeCase(t *testing.T) {
	busy := func(m int) bool { return m > 30 && m <= 40 }
	perMinute := func(quiet, loud float64, m int) float64 {
		if busy(m) {
			return loud
		}
		return quiet
	}
	var history []bottleneck.Span
	for end := 5; end <= 70; end++ {
		var adds, work, cpu float64
		var memory uint64
		for m := end - 4; m <= end; m++ {
			adds += perMinute(600, 2400, m)
			work += perMinute(30, 120, m)
			cpu += perMinute(6, 24, m)
			memory = max(memory, uint64(perMinute(30<<20, 50<<20, m)))
		}
		d := 5 * time.Minute
		use := bottleneck.CPUUse{Known: true, Used: cpu / d.Seconds(), Cores: 2}
		w := bottleneck.Window{Name: "pod", Duration: d, Workers: 4, Adds: uint64(adds), Reconciles: uint64(adds),
			Busy: time.Duration(work * float64(time.Second)), CPU: use}
		history = append(history, bottleneck.Span{End: t0.Add(time.Duration(end) * time.Minute), Queues: []bottleneck.Window{w}, CPU: use, Memory: memory})
	}
	r := bottleneck.Recommend(history)
	want := map[string]string{
		"queue:workqueue_workers_to_run:max1h": fmt.Sprint(r.Queues[0].Run),
		"process:cpu_request:cores":            rulesgen.Num(r.CPU.Request),
		"process:cpu_limit:cores":              rulesgen.Num(r.CPU.Limit),
		"process:memory_request:bytes":         fmt.Sprint(r.Memory.Request),
		"process:memory_limit:bytes":           fmt.Sprint(r.Memory.Limit),
		"process:gomemlimit:bytes":             fmt.Sprint(r.Memory.GOMEMLIMIT),
	}
	t.Logf("Recommend: %v", r)
	text, err := os.ReadFile("rules_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	group := string(text)
	start := strings.Index(group, "  - name: pod size\n")
	if start < 0 {
		t.Fatal(`rules_test.yml has no group "pod size"`)
	}
	group = group[start+1:]
	if end := strings.Index(group, "\n  - name: "); end >= 0 {
		group = group[:end]
	}
	for rule, value := range want {
		re := regexp.MustCompile(`- expr: ` + regexp.QuoteMeta(rule) + `\n\s+eval_time: 70m\n\s+exp_samples:\n\s+- labels: '[^']*'\n\s+value: (\S+)`)
		m := re.FindStringSubmatch(group)
		if m == nil {
			t.Errorf("the group pod size expects nothing of %s at 70m", rule)
			continue
		}
		if m[1] != value {
			t.Errorf("the group pod size expects %s of %s at 70m; Recommend gives %s", m[1], rule, value)
		}
	}
}

var t0 = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)

// fleetCheck is a check of fleet-figures_test.sh: the line "fleet=" it
// expects.
var fleetCheck = regexp.MustCompile(`(?m)^check \S+ '(fleet=[^']*)'`)

// TestFleetClasses checks each row of the fleet's table (internal/sizing's
// Fleet, rendered into docs/scaling.md) against what alerts on it: its
// alert in rules.yml reads its figure, promtool's cases (rules_test.yml)
// expect it to fire, and fleet-figures_test.sh has a case whose "fleet="
// line names its class. A class added to the table fails here until it
// has all three.
func TestFleetClasses(t *testing.T) {
	rules, cases, figures := readFile(t, "rules.yml"), readFile(t, "rules_test.yml"), readFile(t, "fleet-figures_test.sh")
	for _, r := range sizing.Fleet {
		alert := regexp.MustCompile(`(?s)- alert: ` + r.Alert + `\n\s+expr: \|\n(.*?)\n\s+for:`).FindStringSubmatch(rules)
		if alert == nil {
			t.Errorf("%s: no alert %s in rules.yml", r.Class, r.Alert)
		} else if series := strings.Fields(r.Figure)[0]; !strings.Contains(alert[1], series) {
			t.Errorf("%s: the alert %s does not read %s:\n%s", r.Class, r.Alert, series, alert[1])
		}
		if !strings.Contains(cases, "alertname: "+r.Alert) {
			t.Errorf("%s: no case of rules_test.yml expects %s", r.Class, r.Alert)
		}
		named := false
		for _, m := range fleetCheck.FindAllStringSubmatch(figures, -1) {
			named = named || strings.HasPrefix(m[1], "fleet="+r.Class+" ") || strings.Contains(m[1], ") "+r.Class+" (")
		}
		if !named {
			t.Errorf("%s: no case of fleet-figures_test.sh expects the class in its line fleet=", r.Class)
		}
	}
}

// readFile returns the file name of this directory, failing the test if it
// cannot be read.
func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
