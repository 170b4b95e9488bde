package apiserver

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// row is one run of an example in the report.
type row struct {
	example, cluster  string
	reconciles        float64 // per second
	writes, requested float64 // per second
	utilization       float64
	waitP50, waitP99  float64       // seconds
	workP50, workP99  float64       // seconds
	outside           time.Duration // outside the simulated work, p50
	queuedP50         time.Duration // exact, from the queued spans
	queuedP99         time.Duration
	watchP50          time.Duration // from a write to its enqueue
	note              string
}

// table collects the rows of the tests' runs.
type table struct {
	mu    sync.Mutex
	rows  []row
	notes []string // the classification runs', below the table
}

func (t *table) add(r row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows = append(t.rows, r)
}

// addNote adds a line below the table.
func (t *table) addNote(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes = append(t.notes, s)
}

// markdown renders the table (docs/examples.md shows one run's, in part).
func (t *table) markdown() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| example | cluster | reconciles/s | writes/s (done/requested) | queue wait p50 (spans) | p99 (spans) | work p50 | p99 | outside the simulated work, p50 | write to enqueue, p50 | utilization | note |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f/%.1f | %s (%s) | %s (%s) | %s | %s | %s | %s | %.2f | %s |\n",
			r.example, r.cluster, r.reconciles, r.writes, r.requested,
			seconds(r.waitP50), short(r.queuedP50), seconds(r.waitP99), short(r.queuedP99),
			seconds(r.workP50), seconds(r.workP99), short(r.outside), short(r.watchP50), r.utilization, r.note)
	}
	if len(t.notes) > 0 {
		b.WriteString("\nBottleneck classification runs:\n\n")
		for _, n := range t.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

// print writes the table to w, if it has rows.
func (t *table) print(w io.Writer) {
	if s := t.markdown(); strings.Count(s, "\n") > 2 {
		fmt.Fprintf(w, "apiserver: the examples on the real control plane and on the fake cluster (%s, measured over %d s once the initial list was drained):\n%s",
			time.Now().UTC().Format("2006-01-02 15:04 UTC"), window, s)
	}
}

// write writes the table to the file at path.
func (t *table) write(path string) error {
	return os.WriteFile(path, []byte(t.markdown()), 0o644)
}

// short rounds d for the table.
func short(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// seconds renders a duration in seconds for the table: ms below a second,
// "n/a" without observations.
func seconds(s float64) string {
	if math.IsNaN(s) {
		return "n/a"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond * 100).String()
}
