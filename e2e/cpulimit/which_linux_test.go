package cpulimit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/e2e"
)

// The runs of TestWhichCPULimit: each as long, with lines of 5 s judged
// after the warm-up.
const whichRunFor = 45 * time.Second

// The busy node: a cgroup beside the app's with four times its weight, its
// CPUs' worth twice over of processes that only burn CPU. The app's
// cgroup, of the default weight and no quota, gets a fifth of the machine:
// 0.4 of 2 cores, under the 0.72 the load asks for.
const (
	noisyWeightV1 = 4096 // cpu.shares; the default is 1024
	noisyWeightV2 = 400  // cpu.weight; the default is 100
)

// TestWhichCPULimit runs the app where the CPU limits it without a quota,
// and checks that the summary line tells which limit it is, with that
// limit's advice: C, on a busy node (a neighbour cgroup of four times the
// weight burning every core), the class cpu by the threads' wait for a CPU
// (cpu-wait, "a larger CPU request, or a quieter node"), where it said
// workers and recommended more of them; D, with GOMAXPROCS 1 on a machine
// of 2 or more CPUs, the class cpu by GOMAXPROCS (gomaxprocs, "raise it,
// not the CPU limit"), where it asked for a CPU limit there was none of.
// Neither recommends more workers. TestCPULimit covers the quota.
func TestWhichCPULimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the test runs the example app twice for 45 s")
	}
	if runtime.NumCPU() < 2 {
		t.Skipf("%d CPU: GOMAXPROCS 1 is not below the CPUs, and a busy node needs two to share", runtime.NumCPU())
	}
	app := newCgroup(t, "-app", nil, nil)
	noisy := newCgroup(t, "-noisy",
		[][2]string{{"cpu.shares", strconv.Itoa(noisyWeightV1)}},
		[][2]string{{"cpu.weight", strconv.Itoa(noisyWeightV2)}})

	ctx, bin := appFor(t)
	base := []string{"-reconcile-cpu", reconcileCPU.String(), "-burst-every", "0", "-error-rate", "0",
		"-metrics-addr", "", "-summary-interval", "5s", "-duration", fmt.Sprintf("%gs", whichRunFor.Seconds())}
	burners := 2 * runtime.NumCPU()
	runs := []*run{
		{name: "C", title: fmt.Sprintf("a busy node: no quota, %d processes burning CPU in a cgroup of 4 times the weight", burners),
			fixed: 4, steady: true, args: append([]string{"-workers", "4", "-churn", strconv.Itoa(churn)}, base...)},
		// 20 reconciles/s of 60 ms: 1.2 cores, more than GOMAXPROCS's one.
		{name: "D", title: "GOMAXPROCS=1, no quota", env: []string{"GOMAXPROCS=1"},
			fixed: 4, steady: true, args: append([]string{"-workers", "4", "-churn", "20"}, base...)},
	}
	t.Run("C busy node", func(t *testing.T) {
		r := runs[0]
		burn(t, noisy, burners)
		runSteady(ctx, t, r, app, bin)
		checkWhich(t, r, "cpu-wait", "a larger CPU request")
	})
	t.Run("D GOMAXPROCS", func(t *testing.T) {
		r := runs[1]
		runSteady(ctx, t, r, app, bin)
		checkWhich(t, r, "gomaxprocs", "raise it, not the CPU limit")
		var cores []string
		for _, s := range r.judged(phaseSteady) {
			if !s.cpuKnown || s.cpuCores != 1 {
				cores = append(cores, fmt.Sprintf("%s: %s", r.since(s.at), cpuText(s)))
			}
		}
		r.check(t, len(cores) == 0, "every judged line shows the one core GOMAXPROCS gives, cpu=U/1.00%s", listed(cores))
	})

	header := fmt.Sprintf("Each run starts the app in the %s (no quota, the default weight) from its first instruction, for %v. "+
		"C: the %s beside it, of %d (v1 cpu.shares) or %d (v2 cpu.weight), runs %d processes that only burn CPU. "+
		"D: GOMAXPROCS=1 on %d CPUs. Judged: the summary lines from %v after the start.\n",
		app, whichRunFor, noisy, noisyWeightV1, noisyWeightV2, burners, runtime.NumCPU(), warmup)
	rep := report(header, runs)
	t.Logf("report:\n%s", rep)
	if dir := os.Getenv("OTELQUEUE_E2E_RESULTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Error(err)
		} else if err := os.WriteFile(filepath.Join(dir, "cpuwhich.md"), []byte(rep), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// checkWhich checks the judged lines of a run where the CPU limits: the
// class is cpu by signal in at least 4 lines and in most, each with its
// advice, and no line recommends more workers.
func checkWhich(t *testing.T, r *run, signal, advice string) {
	t.Helper()
	lines := r.judged(phaseSteady)
	n := 0
	var other, more []string
	for _, s := range lines {
		switch {
		case s.class == "cpu" && s.signal == signal && strings.Contains(s.line, advice):
			n++
		default:
			other = append(other, fmt.Sprintf("%s: %s (%s)", r.since(s.at), orNone(s.class), orNone(s.signal)))
		}
		if strings.HasPrefix(s.rec, "→ recommend") {
			more = append(more, fmt.Sprintf("%s: %s", r.since(s.at), s.rec))
		}
	}
	r.check(t, n >= 4 && 2*n > len(lines), "the class is cpu by %s, with %q, in %d of %d judged lines (want at least 4, and most); the others%s", signal, advice, n, len(lines), orList(other))
	r.check(t, len(more) == 0, "no line recommends more workers (→ recommend)%s", listed(more))
}

// burn starts n processes in cg that only burn CPU, and stops them when
// the test ends (before cg is removed, which was registered earlier).
func burn(t *testing.T, cg *cgroup, n int) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		cannotRun(t, "no sh to burn CPU with: %v", err)
	}
	for i := range n {
		p := &e2e.Process{
			Name:    fmt.Sprintf("burner %d", i),
			Path:    sh,
			Args:    []string{"-c", `echo $$ > "$OTELQUEUE_CGROUP_PROCS" && while :; do :; done`},
			Env:     []string{"OTELQUEUE_CGROUP_PROCS=" + cg.procs()},
			LogPath: filepath.Join(t.TempDir(), "burner.log"),
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.Kill(); err != nil {
				t.Error(err)
			}
		})
	}
}

// runSteady runs the app bin with r's args and environment in cg, from its
// first instruction (startApp), and waits for it to exit at its -duration
// (waitApp).
func runSteady(ctx context.Context, t *testing.T, r *run, cg *cgroup, bin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, whichRunFor+exitGrace)
	defer cancel()
	p := startApp(t, r, cg, bin)
	defer r.read(t)
	waitApp(ctx, t, r, p, whichRunFor)
}
