package cpulimit

import (
	"fmt"
	"strings"
	"time"
)

// The scenario's timeline, from the app's start: the first lines are its
// warm-up (the informers' initial list, the first reconciles), the quota
// is lifted at liftAfter, and the lines of the next transition are neither
// the quota's nor its absence's (their interval holds both, or the backlog
// the quota left).
const (
	warmup     = 10 * time.Second
	liftAfter  = 40 * time.Second
	transition = 10 * time.Second
	// runFor is the app's -duration: about as many judged lines after
	// the lift as before it.
	runFor = 75 * time.Second
	// exitGrace is how long past runFor the app may take to exit (its
	// flush has a deadline of 10 s) before the test kills it.
	exitGrace = 45 * time.Second
)

// phase is where a line of a run falls in the scenario's timeline.
type phase int

const (
	phaseWarmup     phase = iota // the first 10 s: not judged
	phaseQuota                   // the quota holds: judged
	phaseTransition              // the 10 s after the lift: not judged
	phaseLifted                  // no quota: judged
	phaseSteady                  // a run with no lift, past its warm-up: judged
)

func (p phase) String() string {
	return [...]string{"warm-up", "quota", "transition", "lifted", "steady"}[p]
}

// run is one run of the app in the cgroup.
type run struct {
	name  string // "A", as the report names it
	title string
	args  []string
	env   []string // added to the app's environment
	// steady is a run whose conditions hold from start to end (no quota
	// to lift): its lines past the warm-up are phaseSteady.
	steady bool
	// fixed is the fixed worker count, 0 with an adaptive pool.
	fixed int
	// cgroup is the cgroup it ran in, as the report shows it.
	cgroup string
	// start is when the app was started, lift when the quota was lifted
	// (the moment before the write).
	start, lift time.Time
	// exited says whether the app exited by itself, exit how.
	exited    bool
	exit      error
	logPath   string
	lines     []string
	summaries []summary
	decisions []decision
	// findings are what the assertions found, for the report.
	findings []string
}

// phase returns where the time at falls in r's timeline.
func (r *run) phase(at time.Time) phase {
	switch {
	case at.Before(r.start.Add(warmup)):
		return phaseWarmup
	case r.steady:
		return phaseSteady
	case r.lift.IsZero() || at.Before(r.lift):
		return phaseQuota
	case !at.After(r.lift.Add(transition)):
		return phaseTransition
	}
	return phaseLifted
}

// judged returns r's summary lines in phase p.
func (r *run) judged(p phase) []summary {
	var out []summary
	for _, s := range r.summaries {
		if r.phase(s.at) == p {
			out = append(out, s)
		}
	}
	return out
}

// since is at as seconds from the app's start.
func (r *run) since(at time.Time) string {
	return fmt.Sprintf("%.1f s", at.Sub(r.start).Seconds())
}

// command is the app's command line as a user types it.
func (r *run) command() string {
	var b strings.Builder
	for _, e := range r.env {
		b.WriteString(e + " ")
	}
	b.WriteString("app")
	for _, a := range r.args {
		b.WriteByte(' ')
		if a == "" || strings.ContainsAny(a, " \"'$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		b.WriteString(a)
	}
	return b.String()
}
