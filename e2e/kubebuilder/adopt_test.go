package kubebuilder

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/e2e"
)

const (
	// envRequire, set to 1, turns the skip without KUBEBUILDER_ASSETS into
	// a failure (make test-apiserver sets it).
	envRequire = "OTELQUEUE_REQUIRE_APISERVER"
	// controllerName is the scaffold's controller: Named("greeting").
	controllerName = "greeting"
	// objects is how many Greetings each run creates, then changes.
	objects = 50
)

// noAssets says why the test cannot run and how to get what it needs.
const noAssets = e2e.EnvAssets + " is unset: no kube-apiserver and etcd for the kubebuilder operator. " +
	"Run make test-apiserver, or export " + e2e.EnvAssets + "=$(cd e2e && go run ./cmd/controlplane) " +
	"(from the repository's root; it builds them from the Go module proxy, ~11 minutes cold) and run the test again"

// TestAdoption adopts otelqueue into a kubebuilder v4 scaffold by the
// README's steps and checks that its manager serves what it served before,
// plus exemplars (the package documentation says how).
func TestAdoption(t *testing.T) {
	assets := os.Getenv(e2e.EnvAssets)
	if assets == "" {
		if os.Getenv(envRequire) == "1" {
			t.Fatal(noAssets + " (" + envRequire + "=1: this test may not skip)")
		}
		t.Skip(noAssets)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: the test applies the README's diffs with git apply, as a user may; install git (apt-get install git)")
	}
	moduleDir, err := e2e.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(moduleDir)
	readme, readmePath := readReadme(t)
	qs, err := parseQuickStart(readme)
	if err != nil {
		t.Fatalf("%s: %v", readmePath, err)
	}
	checkout, err := checkoutCommands(readme, repo)
	if err != nil {
		t.Fatalf("%s: %v", readmePath, err)
	}

	tmp := tempDir(t)
	rep := &report{readme: readmePath}
	defer rep.finish(t)
	ctx := context.Background()

	before := copyScaffold(t, tmp, "before")
	after := copyScaffold(t, tmp, "after")
	beforeGoMod := goModRequires(t, before)

	var beforeBin, afterBin string
	rep.phase("go build (the scaffold as generated)", func() {
		beforeBin = goBuild(t, before, filepath.Join(tmp, "manager-before"))
	})
	rep.phase("the README's steps (go commands, git apply)", func() {
		adopt(t, after, qs, checkout, readmePath)
	})
	afterGoMod := goModRequires(t, after)
	rep.requires = checkRequirements(t, qs.versions, beforeGoMod, afterGoMod, readmePath)
	rep.phase("go build (adopted)", func() {
		afterBin = goBuild(t, after, filepath.Join(tmp, "manager-after"))
	})
	rep.phase("go vet ./... (adopted)", func() {
		goRun(t, after, nil, "go", "vet", "./...")
	})
	rep.phase("the scaffold's tests, go test -race (adopted)", func() {
		rep.scaffoldTests = scaffoldTests(t, after, assets)
	})

	var p *plane
	rep.phase("envtest: kube-apiserver and etcd", func() {
		p = startPlane(t, assets, tmp)
	})
	var runs [2]*run
	for i, r := range []struct{ name, bin, dir string }{{"before", beforeBin, before}, {"after", afterBin, after}} {
		rep.phase("the "+r.name+" manager: start, workload, scrapes, stop", func() {
			runs[i] = runManager(ctx, t, p, r.name, r.bin, r.dir, tmp)
		})
	}
	rep.before, rep.after = runs[0], runs[1]
	check(t, runs[0], runs[1])
}

// tempDir returns a directory for the copies of the scaffold, the binaries
// and the logs, removed after the test unless it failed or
// OTELQUEUE_E2E_KEEP=1.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "otelqueue-kubebuilder-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("OTELQUEUE_E2E_KEEP") == "1" {
			t.Logf("kept %s (the scaffold before and after, the managers' and the control plane's logs)", dir)
			return
		}
		// The module cache makes its files read-only, but none is in here.
		os.RemoveAll(dir)
	})
	return dir
}

// copyScaffold copies testdata/scaffold to dir/name.
func copyScaffold(t *testing.T, dir, name string) string {
	t.Helper()
	dst := filepath.Join(dir, name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", "scaffold"))); err != nil {
		t.Fatalf("copying the scaffold: %v", err)
	}
	return dst
}

// goEnv is the environment of the go commands run in a copy of the
// scaffold: the test's (GOFLAGS, GOPROXY, the caches), in no workspace.
func goEnv(extra ...string) []string {
	return append(append(os.Environ(), "GOWORK=off"), extra...)
}

// goRun runs a command in dir and fails the test with its output if it
// fails. It returns the output.
func goRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = goEnv(env...)
	// git apply must not find a repository above the copy (TMPDIR could be
	// in one): it would apply the paths relative to that repository's root.
	cmd.Env = append(cmd.Env, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (in %s) failed: %v\n%s", name, strings.Join(args, " "), dir, err, e2e.Tail(string(out), 60))
	}
	return string(out)
}

// goBuild builds the scaffold's manager (cmd/main.go) in dir into bin.
func goBuild(t *testing.T, dir, bin string) string {
	t.Helper()
	goRun(t, dir, nil, "go", "build", "-o", bin, "./cmd")
	return bin
}

// adopt runs the README section's steps in dir, in order: the commands of
// its ```sh blocks, and its ```diff blocks through git apply.
func adopt(t *testing.T, dir string, qs quickStart, checkout []string, readmePath string) {
	t.Helper()
	for i, s := range qs.steps {
		switch s.kind {
		case "sh":
			cmds, err := commands(s, checkout)
			if err != nil {
				t.Fatalf("%s: %v", readmePath, err)
			}
			for _, c := range cmds {
				goRun(t, dir, nil, c[0], c[1:]...)
			}
		case "diff":
			patch := filepath.Join(filepath.Dir(dir), fmt.Sprintf("readme-step-%d.diff", i))
			if err := os.WriteFile(patch, []byte(s.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("git", "apply", "--verbose", patch)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s:%d: the ```diff block of %s does not apply to the kubebuilder scaffold (e2e/kubebuilder/testdata/scaffold): %v\n%s\n"+
					"Write it as git diff prints the change of the scaffold's file (context lines as the scaffold has them, tabs kept).",
					readmePath, s.line, strings.Join(diffPaths(s), ", "), err, out)
			}
		}
	}
}

// requirement is a go.mod require line.
type requirement struct {
	Path, Version string
	Indirect      bool
}

// goModRequires returns the requirements of dir's go.mod.
func goModRequires(t *testing.T, dir string) map[string]requirement {
	t.Helper()
	out := goRun(t, dir, nil, "go", "mod", "edit", "-json")
	var mod struct{ Require []requirement }
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	reqs := map[string]requirement{}
	for _, r := range mod.Require {
		reqs[r.Path] = r
	}
	return reqs
}

// checkRequirements checks the README's table of raised requirements
// against go.mod before and after the steps, and that OpenTelemetry-Go's
// stable modules, which are released together, end at one version. It
// returns the table's rows as the report shows them.
func checkRequirements(t *testing.T, rows []versionRow, before, after map[string]requirement, readmePath string) []string {
	t.Helper()
	var out []string
	for _, row := range rows {
		for _, m := range row.modules {
			b, a := before[m].Version, after[m].Version
			if b != row.from || a != row.to {
				t.Errorf("%s: its table says %s goes from %s (the scaffold's) to %s; go.mod requires %s before the steps and %s after: correct the table",
					readmePath, m, row.from, row.to, orNone(b), orNone(a))
			}
			out = append(out, fmt.Sprintf("%s %s → %s", m, orNone(b), orNone(a)))
		}
	}
	versions := map[string][]string{}
	for p, r := range after {
		if (p == "go.opentelemetry.io/otel" || strings.HasPrefix(p, "go.opentelemetry.io/otel/")) && strings.HasPrefix(r.Version, "v1.") {
			versions[r.Version] = append(versions[r.Version], p)
		}
	}
	if len(versions) > 1 {
		var s []string
		for v, ps := range versions {
			slices.Sort(ps)
			s = append(s, v+": "+strings.Join(ps, ", "))
		}
		slices.Sort(s)
		t.Errorf("after the README's steps, go.mod requires OpenTelemetry-Go's modules, which are released together, at different versions (%s): "+
			"the README's go get must pin the exporters at the version otelqueue raises the SDK to", strings.Join(s, "; "))
	}
	return out
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// scaffoldTests runs the scaffold's own tests as its Makefile's test target
// does (go test of every package but the Kind-based e2e ones, with
// KUBEBUILDER_ASSETS), with -race, and returns go test's summary lines.
func scaffoldTests(t *testing.T, dir, assets string) string {
	t.Helper()
	var pkgs []string
	for p := range strings.SplitSeq(strings.TrimSpace(goRun(t, dir, nil, "go", "list", "./...")), "\n") {
		if !strings.Contains(p, "/e2e") {
			pkgs = append(pkgs, p)
		}
	}
	out := goRun(t, dir, []string{e2e.EnvAssets + "=" + assets}, "go", append([]string{"test", "-race", "-count=1"}, pkgs...)...)
	var lines []string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, "ok ") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(lines) == 0 {
		t.Fatalf("the scaffold's go test ran no test package:\n%s", e2e.Tail(out, 40))
	}
	return strings.Join(lines, "; ")
}

// check compares the adopted manager's run with the scaffold's.
func check(t *testing.T, before, after *run) {
	t.Helper()
	checkSize(t, after)
	// The baseline: the scaffold's own queue serves controller-runtime's
	// workqueue families for the controller. Without them the comparison
	// would prove nothing.
	for _, f := range workqueueFamilies {
		if withLabel(before.scrape.families, f, "name", controllerName) == 0 {
			t.Errorf("the scaffold's manager serves no %s{name=%q}: the baseline is not what controller-runtime v0.25 serves; look at its scrape in %s",
				f, controllerName, before.scrapePath)
		}
	}
	c := compare(before.scrape, after.scrape)
	if len(c.families) > 0 {
		t.Errorf("the adopted manager no longer serves %d metric families that the scaffold's served: %s.\n"+
			"The README's cmd/main.go step registers otelqueue's Prometheus exporter with controller-runtime's metrics.Registry "+
			"(otelprom.WithRegisterer), which the manager serves: is it there? Scrapes: %s, %s",
			len(c.families), strings.Join(c.families, ", "), before.scrapePath, after.scrapePath)
	}
	if len(c.series) > 0 {
		t.Errorf("the adopted manager no longer serves %d series (label sets) that the scaffold's served:\n  %s\n"+
			"(only the bucket bounds of the workqueue histograms may differ). Scrapes: %s, %s",
			len(c.series), strings.Join(c.series, "\n  "), before.scrapePath, after.scrapePath)
	}
	if len(c.native) > 0 {
		t.Errorf("native buckets the scaffold's manager served (protobuf) are gone or changed:\n  %s\n"+
			"The README's step gives the MeterProvider otelqueuesdk.NativeHistograms' views and the exporter otelqueuesdk.NativeHistogramRegisterer(metrics.Registry)",
			strings.Join(c.native, "\n  "))
	}
	var unnamed []string
	for _, f := range workqueueFamilies {
		if _, ok := after.scrape.families[f]; ok && withLabel(after.scrape.families, f, "name", controllerName) == 0 {
			unnamed = append(unnamed, f)
		}
	}
	if len(unnamed) > 0 {
		t.Errorf("the adopted manager serves %s, but none with name=%q: otelqueue's queue serves them under the controller's name (scrape: %s)",
			strings.Join(unnamed, ", "), controllerName, after.scrapePath)
	}
	// The scaffold's concurrency, kept: otq.Options returns the options as
	// given, and controller-runtime resolves MaxConcurrentReconciles 0 as
	// before.
	const workers = "controller_runtime_max_concurrent_reconciles"
	if b, a := sumOf(before.scrape.families, workers, "controller", controllerName), sumOf(after.scrape.families, workers, "controller", controllerName); a != b {
		t.Errorf("%s{controller=%q} is %v after the adoption, %v before: the README's SetupWithManager step changed the controller's concurrency", workers, controllerName, a, b)
	}
	if after.scrape.omType != "application/openmetrics-text" {
		t.Errorf("asked for OpenMetrics (Accept: %s), the adopted manager answered %q: the README's metricsserver.Options step sets HandlerOpts' EnableOpenMetrics",
			acceptOpenMetrics, after.scrape.omType)
	}
	if n := after.exemplars["workqueue_queue_duration_seconds"] + after.exemplars["workqueue_work_duration_seconds"]; n == 0 {
		t.Errorf("the adopted manager's OpenMetrics scrape has no exemplar with a trace_id on workqueue_queue_duration_seconds_bucket or "+
			"workqueue_work_duration_seconds_bucket{name=%q}: exemplars need OpenMetrics on the metrics server and a TracerProvider (README, cmd/main.go). Scrape: %s",
			controllerName, after.openMetricsPath)
	}
}

// report is the table the test prints: both runs side by side.
type report struct {
	readme        string
	phases        []string
	requires      []string
	scaffoldTests string
	before, after *run
}

// phase runs f and records how long it took.
func (r *report) phase(name string, f func()) {
	start := time.Now()
	defer func() {
		r.phases = append(r.phases, fmt.Sprintf("%s %.1fs", name, time.Since(start).Seconds()))
	}()
	f()
}

// finish prints the table to stderr and, with OTELQUEUE_E2E_REPORT set,
// writes it there.
func (r *report) finish(t *testing.T) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "## otelqueue adopted into a kubebuilder v4.16 operator by the steps of %s\n\n", r.readme)
	fmt.Fprintf(&b, "| manager | converged | metric families | series | workqueue_* with name=%q | workers | native histograms | exemplars with trace_id (queue, work) | SIGTERM |\n", controllerName)
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|")
	for _, x := range []struct {
		name string
		r    *run
	}{{"scaffold (controller-runtime v0.25.0)", r.before}, {"adopted (otelqueue)", r.after}} {
		if x.r == nil || x.r.scrape == nil {
			fmt.Fprintf(&b, "| %s | not run | | | | | | | |\n", x.name)
			continue
		}
		s := x.r.scrape
		wq := 0
		for _, f := range workqueueFamilies {
			if withLabel(s.families, f, "name", controllerName) > 0 {
				wq++
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d of %d | %v | %d | %d, %d | %s |\n", x.name, x.r.converged, len(s.families), len(series(s.families, nil)),
			wq, len(workqueueFamilies), sumOf(s.families, "controller_runtime_max_concurrent_reconciles", "controller", controllerName),
			len(s.native), x.r.exemplars["workqueue_queue_duration_seconds"], x.r.exemplars["workqueue_work_duration_seconds"], x.r.stopped)
	}
	if r.before != nil && r.after != nil && r.before.scrape != nil && r.after.scrape != nil {
		var added []string
		for name := range r.after.scrape.families {
			if _, ok := r.before.scrape.families[name]; !ok {
				added = append(added, name)
			}
		}
		slices.Sort(added)
		if len(added) == 0 {
			added = []string{"none"}
		}
		fmt.Fprintf(&b, "\nFamilies served only after: %s.\n", strings.Join(added, ", "))
	}
	if len(r.requires) > 0 {
		fmt.Fprintf(&b, "\nRequirements (the README's table, checked): %s.\n", strings.Join(r.requires, "; "))
	}
	if r.scaffoldTests != "" {
		fmt.Fprintf(&b, "\nThe scaffold's tests, adopted: %s.\n", r.scaffoldTests)
	}
	fmt.Fprintf(&b, "\nPhases: %s.\n", strings.Join(r.phases, "; "))
	fmt.Fprint(os.Stderr, "\n"+b.String())
	if path := os.Getenv("OTELQUEUE_E2E_REPORT"); path != "" {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// checkSize checks that the adopted manager's inspector, which the README's
// steps mount on its metrics server, gives the size of the pod: the
// controller's workers (1 run), its CPU and memory, and the objects of the
// Greetings' and ConfigMaps' caches (the workload's 50 each) it counts.
func checkSize(t *testing.T, after *run) {
	t.Helper()
	if after.sizeErr != nil {
		t.Errorf("the adopted manager's inspector (/debug/queues on the metrics server, the README's cmd/main.go step): %v", after.sizeErr)
		return
	}
	r := after.size.Recommendation
	if r == nil {
		t.Error("the adopted manager's inspector has no recommendation: is its Sizer given (Inspector{Sizer: sizer})?")
		return
	}
	t.Logf("the adopted manager's size: %+v", *r)
	if len(r.Queues) != 1 || r.Queues[0].Name != controllerName || !r.Queues[0].Known || r.Queues[0].Workers != 1 || r.Queues[0].Run < 1 {
		t.Errorf("the recommendation's queues %+v, want %s known, 1 worker run: is the queue sized (otelqueue.WithSizer(r.Sizer) in SetupWithManager)?", r.Queues, controllerName)
	}
	if !r.CPU.Known || r.CPU.Request <= 0 || r.CPU.Limit <= r.CPU.Request {
		t.Errorf("the recommendation's CPU %+v, want a request and a limit above it", r.CPU)
	}
	if !r.Memory.Known || r.Memory.Request <= 0 || r.Memory.Objects < 2*objects || r.Memory.PerObject <= 0 {
		t.Errorf("the recommendation's memory %+v, want a request, and at least the %d Greetings and ConfigMaps counted from the cache", r.Memory, 2*objects)
	}
}
