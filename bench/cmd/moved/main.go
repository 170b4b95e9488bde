// Command moved reads benchstat's CSV comparison of two runs (benchstat
// -format csv base.txt head.txt, as bench/compare.sh makes it) and says, for
// every benchmark both runs have, by how much its median time and its
// allocations moved, and whether the move is significant (benchstat's
// p-value below 0.05). It is the gate of make bench-compare: with -fail it
// exits with status 1 when a gated benchmark (-gate, a regexp: otelqueue's
// own variants by default, not the baselines, whose moves are the machine's
// or a dependency's) got slower by more than -max with significance, or
// allocates more.
//
// Usage:
//
//	benchstat -format csv base.txt head.txt | go run ./cmd/moved [-fail] [-max 2] [-gate REGEXP]
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// procs is the GOMAXPROCS suffix of a benchmark's name.
var procs = regexp.MustCompile(`-[0-9]+$`)

// alpha is the significance level: benchstat's own default.
const alpha = 0.05

func main() {
	fail := flag.Bool("fail", false, "exit with status 1 when a gated benchmark moved up")
	maxUp := flag.Float64("max", 2, "the largest significant slow-down of a gated benchmark's median, in per cent, that passes")
	gate := flag.String("gate", `variant=(scheduler-|clientgo-otelprovider)`, "the benchmarks gated (a regexp on their names)")
	flag.Parse()
	re, err := regexp.Compile(*gate)
	if err != nil {
		fmt.Fprintf(os.Stderr, "moved: -gate %q: %v\n", *gate, err)
		os.Exit(2)
	}
	moves, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "moved: %v\n", err)
		os.Exit(2)
	}
	if len(moves) == 0 {
		fmt.Fprintln(os.Stderr, "moved: no benchmark is in both runs: is the input benchstat -format csv of two files?")
		os.Exit(2)
	}
	failed := report(os.Stdout, moves, re, *maxUp)
	if failed > 0 && *fail {
		os.Exit(1)
	}
}

// move is one benchmark's change in one unit between the two runs.
type move struct {
	name, unit  string
	base, head  float64 // medians
	p           float64 // benchstat's p-value; 1 when it gave none
	significant bool
}

// pct is the change of the median in per cent of the base's.
func (m move) pct() float64 {
	if m.base == 0 {
		if m.head == 0 {
			return 0
		}
		return 100
	}
	return (m.head - m.base) / m.base * 100
}

// parse reads benchstat's CSV: for each unit a header row (",sec/op,CI,
// sec/op,CI,vs base,P") and then a row per benchmark; the text lines before
// each table (goos:, pkg:...) and the geomean rows are skipped.
func parse(r io.Reader) ([]move, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	var moves []move
	unit := ""
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return moves, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case len(rec) >= 7 && rec[0] == "" && rec[5] == "vs base":
			unit = rec[1]
			continue
		case len(rec) < 7 || unit == "" || rec[0] == "" || rec[0] == "geomean" || rec[1] == "" || rec[3] == "":
			continue // a text line, a file-name row, a geomean, a benchmark one run lacks
		}
		base, err1 := strconv.ParseFloat(rec[1], 64)
		head, err2 := strconv.ParseFloat(rec[3], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: medians %q and %q are no numbers", rec[0], rec[1], rec[3])
		}
		m := move{name: rec[0], unit: unit, base: base, head: head, p: 1}
		if f := strings.Fields(rec[6]); len(f) > 0 && strings.HasPrefix(f[0], "p=") {
			if p, err := strconv.ParseFloat(strings.TrimPrefix(f[0], "p="), 64); err == nil {
				m.p = p
			}
		}
		m.significant = m.p < alpha && rec[5] != "~"
		moves = append(moves, m)
	}
}

// report prints a line per benchmark and unit (time and allocations; bytes
// follow allocations) and returns how many gated ones failed.
func report(w io.Writer, moves []move, gate *regexp.Regexp, maxUp float64) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tunit\tbase\thead\tmoved\tp\tverdict")
	failed := 0
	for _, m := range moves {
		if m.unit != "sec/op" && m.unit != "allocs/op" {
			continue
		}
		verdict := "~"
		switch {
		case m.significant && m.pct() < 0:
			verdict = "faster"
			if m.unit == "allocs/op" {
				verdict = "fewer"
			}
		case m.significant:
			verdict = "slower"
			if m.unit == "allocs/op" {
				verdict = "more"
			}
		}
		if gate.MatchString(m.name) {
			if (m.unit == "sec/op" && verdict == "slower" && m.pct() > maxUp) || (m.unit == "allocs/op" && m.head > m.base) {
				verdict += " FAIL"
				failed++
			}
		} else if verdict != "~" {
			verdict += " (a baseline)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.1f%%\t%.3f\t%s\n", procs.ReplaceAllString(m.name, ""), m.unit, format(m.base, m.unit), format(m.head, m.unit), m.pct(), m.p, verdict)
	}
	tw.Flush()
	if failed > 0 {
		fmt.Fprintf(w, "%d gated benchmark(s) got slower by more than %.1f%% or allocate more than the base\n", failed, maxUp)
	} else {
		fmt.Fprintf(w, "no gated benchmark got slower by more than %.1f%% or allocates more than the base\n", maxUp)
	}
	return failed
}

// format prints a median in its unit: nanoseconds for sec/op.
func format(v float64, unit string) string {
	if unit == "sec/op" {
		return strconv.FormatFloat(v*1e9, 'f', 1, 64) + " ns"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
