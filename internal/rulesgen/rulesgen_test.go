package rulesgen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/testutil"
)

var update = flag.Bool("update", false, "write the generated artifacts")

func TestMain(m *testing.M) { testutil.Main(m) }

// TestGenerated fails when a checked-in artifact is not its rendering from
// its template and the table: a threshold changed in package bottleneck
// fails here until the artifacts are regenerated (-update).
func TestGenerated(t *testing.T) {
	for _, path := range Artifacts {
		file := filepath.Join("..", "..", path)
		tmpl, err := os.ReadFile(file + ".tmpl")
		if err != nil {
			t.Fatal(err)
		}
		want, err := Render(path, string(tmpl))
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			mode := os.FileMode(0o644)
			if st, err := os.Stat(file); err == nil {
				mode = st.Mode()
			}
			if err := os.WriteFile(file, want, mode); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not its rendering from %s.tmpl and the table of package bottleneck: run go test ./internal/rulesgen -update (and make rules)", path, path)
		}
	}
}

// boundaryCases are, for each signal of the table, the cases of
// rules_test.yml and queue-figures_test.sh just below its threshold, at it
// and just above it, every other signal neutral.
var boundaryCases = map[bottleneck.Signal][3]string{
	bottleneck.SignalAPIServerUnavailable: {"ua-below", "ua-at", "ua-above"},
	bottleneck.SignalAPIServerLatency:     {"lat-below", "lat-at", "lat-above"},
	bottleneck.SignalCPUUtilization:       {"cpu-below", "cpu-at", "cpu-above"},
	bottleneck.SignalCPUThrottled:         {"thr-below", "thr-at", "thr-above"},
	bottleneck.SignalRetryAfterShare:      {"ra-below", "ra-at", "ra-above"},
	bottleneck.SignalRateLimiterShare:     {"rl-below", "rl-at", "rl-above"},
	bottleneck.SignalErrorRetries:         {"err-below", "err-at", "err-above"},
	// Little's law one under the configured count is no case of its own:
	// equal to it is the threshold (1), one more is above.
	bottleneck.SignalWorkersNeeded: {"", "ll-equal", "ll-more"},
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
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "example", "prometheus", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	suites := map[string]map[string]string{"rules_test.yml": {}, "queue-figures_test.sh": {}}
	for _, m := range promCase.FindAllStringSubmatch(read("rules_test.yml"), -1) {
		suites["rules_test.yml"][m[2]] = m[1]
	}
	for _, m := range figuresCase.FindAllStringSubmatch(read("queue-figures_test.sh"), -1) {
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
