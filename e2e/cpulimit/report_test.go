package cpulimit

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// check records what a run showed for one assertion, for the report, and
// fails t when ok is false.
func (r *run) check(t *testing.T, ok bool, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	if ok {
		r.findings = append(r.findings, "ok: "+msg)
		return
	}
	r.findings = append(r.findings, "FAILED: "+msg)
	t.Errorf("run %s: %s", r.name, msg)
}

// report renders the runs as Markdown: for each, its command line, the
// cgroup and its quota, the judged summary lines trimmed to what the test
// reads, the adaptive pool's decisions and what each assertion found.
func report(header string, runs []*run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The example app on a real CPU limit (e2e/cpulimit, %s)\n\n%s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), header)
	for _, r := range runs {
		fmt.Fprintf(&b, "\n## Run %s: %s\n\n", r.name, r.title)
		if r.start.IsZero() {
			b.WriteString("Not run.\n")
			continue
		}
		fmt.Fprintf(&b, "`%s`, in the %s from its first instruction.\n", r.command(), r.cgroup)
		switch {
		case r.steady:
			b.WriteString("No quota.")
		case r.lift.IsZero():
			b.WriteString("The quota was never lifted.")
		default:
			fmt.Fprintf(&b, "Quota lifted at %s.", r.since(r.lift))
		}
		switch {
		case !r.exited:
			b.WriteString(" The app did not exit by itself: the test stopped it.\n")
		case r.exit != nil:
			fmt.Fprintf(&b, " The app exited with %v.\n", r.exit)
		default:
			b.WriteString(" The app exited with status 0 at its -duration.\n")
		}
		b.WriteString("\n| t | phase | class | cpu (used/cores) | throttled | workers | recommendation | size |\n|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.summaries {
			p := r.phase(s.at)
			if p != phaseQuota && p != phaseLifted && p != phaseSteady {
				continue
			}
			cpu, throttled := "", s.throttled
			if s.cpuKnown {
				cpu = fmt.Sprintf("%.2f/%.2f", s.cpuUsed, s.cpuCores)
			}
			if throttled == "" {
				throttled = "–"
			}
			workers := fmt.Sprintf("%d (fixed)", r.fixed)
			if s.pool != "" {
				workers = fmt.Sprintf("workers=%d", s.workers)
			}
			class := orNone(s.class)
			if s.class == "cpu" && s.signal != "" {
				class += " (" + s.signal + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.since(s.at), p, class, cpu, throttled, workers, orNone(s.rec), orNone(s.size))
		}
		if len(r.decisions) > 0 {
			b.WriteString("\nThe pool's decisions (\"adaptive workers\" lines):\n\n| t | phase | from → to | reason |\n|---|---|---|---|\n")
			for _, d := range r.decisions {
				fmt.Fprintf(&b, "| %s | %s | %d → %d | %s |\n", r.since(d.at), r.phase(d.at), d.from, d.to, d.reason)
			}
		}
		if len(r.findings) > 0 {
			b.WriteString("\n")
			for _, f := range r.findings {
				fmt.Fprintf(&b, "- %s\n", f)
			}
		}
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
