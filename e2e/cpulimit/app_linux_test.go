package cpulimit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/e2e"
)

// buildApp builds example/app into dir.
func buildApp(ctx context.Context, dir string) (string, error) {
	return e2e.BuildExample(ctx, "./app", dir)
}

// appFor returns the context of a test's runs, ending 10 s before its
// deadline, and the example app built for it (within 5 minutes).
func appFor(t *testing.T) (context.Context, string) {
	t.Helper()
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-10*time.Second))
		t.Cleanup(cancel)
	}
	buildCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	bin, err := buildApp(buildCtx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ctx, bin
}

// runApp runs the app bin with args in cg, with its quota set again first,
// from its first instruction (startApp), lifts the quota liftAfter after
// the start, and waits for the app to exit at its -duration (waitApp).
func runApp(ctx context.Context, t *testing.T, r *run, cg *cgroup, bin string) {
	t.Helper()
	if err := cg.limit(); err != nil {
		t.Fatalf("setting the quota of %s again: %v", cg, err)
	}
	ctx, cancel := context.WithTimeout(ctx, runFor+exitGrace)
	defer cancel()
	p := startApp(t, r, cg, bin)
	// The lines are read however the run ends, for the report.
	defer r.read(t)
	exited, exitErr := p.Exited()
	lift := time.NewTimer(liftAfter)
	defer lift.Stop()
	select {
	case <-lift.C:
		r.lift = time.Now()
		if err := cg.lift(); err != nil {
			t.Fatalf("lifting the quota of %s: %v", cg, err)
		}
	case <-exited:
		r.exited, r.exit = true, exitErr()
		t.Fatalf("the app exited %v after its start, before the lift at %v: %v", time.Since(r.start).Round(time.Millisecond), liftAfter, exitErr())
	case <-ctx.Done():
		t.Fatalf("waiting to lift the quota: %v", ctx.Err())
	}
	waitApp(ctx, t, r, p, runFor)
}

// startApp starts the app bin with r's args and environment in cg from its
// first instruction (sh writes its own pid into the cgroup, then becomes
// the app), and sets r.start. The app is killed when the test ends, before
// the cgroup's removal (registered earlier: a cgroup with a process in it
// cannot be removed); with t failed, its whole output is logged.
func startApp(t *testing.T, r *run, cg *cgroup, bin string) *e2e.Process {
	t.Helper()
	r.cgroup = cg.String()
	sh, err := exec.LookPath("sh")
	if err != nil {
		cannotRun(t, "no sh to start the app in the cgroup: %v", err)
	}
	r.logPath = filepath.Join(t.TempDir(), "app.log")
	p := &e2e.Process{
		Name:    "app (run " + r.name + ")",
		Path:    sh,
		Args:    append([]string{"-c", `echo $$ > "$OTELQUEUE_CGROUP_PROCS" && exec "$0" "$@"`, bin}, r.args...),
		Env:     append([]string{"OTELQUEUE_CGROUP_PROCS=" + cg.procs()}, r.env...),
		LogPath: r.logPath,
	}
	t.Cleanup(func() {
		if err := p.Kill(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			b, err := os.ReadFile(r.logPath)
			if err != nil {
				t.Logf("the output of the app of run %s: %v", r.name, err)
				return
			}
			t.Logf("the whole output of the app of run %s (%s):\n%s", r.name, r.command(), b)
		}
	})
	r.start = time.Now()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitApp waits for p to exit at its -duration d, and fails the test if
// it does not within exitGrace of it (ctx's deadline) or exits with an
// error.
func waitApp(ctx context.Context, t *testing.T, r *run, p *e2e.Process, d time.Duration) {
	t.Helper()
	exited, exitErr := p.Exited()
	select {
	case <-exited:
		r.exited, r.exit = true, exitErr()
	case <-ctx.Done():
		t.Fatalf("the app did not exit within %v of its start (-duration %v): %v", d+exitGrace, d, ctx.Err())
	}
	if r.exit != nil {
		t.Fatalf("the app exited with %v, want exit status 0 at its -duration", r.exit)
	}
}

// read reads the app's log and parses its lines.
func (r *run) read(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		t.Errorf("reading the app's log: %v", err)
		return
	}
	r.lines = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	r.summaries, r.decisions = nil, nil
	for _, l := range r.lines {
		if s, ok := parseSummary(l, r.start); ok {
			r.summaries = append(r.summaries, s)
		}
		if d, ok := parseDecision(l, r.start); ok {
			r.decisions = append(r.decisions, d)
		}
	}
}
