// Command ratios reads the output of `go test -bench` (several -count runs,
// from files or standard input), takes the median of every benchmark's every
// metric, and prints three tables: the medians, the ratios of each variant to
// the baselines measured in the same run, and the targets (targets.go), each
// PASS, MISS or SKIP (a benchmark it needs is absent) with its margin.
//
// Ratios are only meaningful between benchmarks of one run, on one machine:
// compare nothing across files from different runs.
//
// Usage:
//
//	go run ./cmd/ratios [-fail] [file ...]
//
// With -fail it exits with status 1 when a target is missed.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() {
	fail := flag.Bool("fail", false, "exit with status 1 when a target is missed")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: ratios [-fail] [file ...]\n\nReads `go test -bench` output (standard input without files).\n")
		flag.PrintDefaults()
	}
	flag.Parse()

	rs := newResults()
	if flag.NArg() == 0 {
		if err := rs.parse(os.Stdin); err != nil {
			fatal(err)
		}
	}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fatal(err)
		}
		err = rs.parse(f)
		f.Close()
		if err != nil {
			fatal(fmt.Errorf("%s: %w", name, err))
		}
	}
	if len(rs.benches) == 0 {
		fatal(errors.New("no benchmark results in the input"))
	}

	w := os.Stdout
	rs.printMedians(w)
	fmt.Fprintln(w)
	rs.printRatios(w)
	fmt.Fprintln(w)
	missed := rs.printTargets(w, targets)
	if *fail && missed > 0 {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "ratios:", err)
	os.Exit(2)
}

// bench holds every value measured for one benchmark, per unit.
type bench struct {
	name   string
	values map[string][]float64
}

// median returns the median of the benchmark's values in unit and how many
// there are.
func (b *bench) median(unit string) (med float64, n int, ok bool) {
	vs := b.values[unit]
	if len(vs) == 0 {
		return 0, 0, false
	}
	return median(vs), len(vs), true
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// spread returns half the range of vs relative to med, as benchstat's ± is
// a relative spread (this one is cruder: no confidence interval).
func spread(vs []float64, med float64) float64 {
	if med == 0 || len(vs) < 2 {
		return 0
	}
	return (slices.Max(vs) - slices.Min(vs)) / 2 / math.Abs(med)
}

// results are the benchmarks of the input in the order they first appear,
// and the units in the order they first appear.
type results struct {
	benches []*bench
	byName  map[string]*bench
	units   []string
}

func newResults() *results { return &results{byName: map[string]*bench{}} }

// procsSuffix is the -GOMAXPROCS suffix `go test` adds to benchmark names
// (when GOMAXPROCS > 1).
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parse reads benchmark result lines: "BenchmarkName-P  N  v unit  v unit
// ...". Other lines (goos:, PASS, logs) are skipped.
func (rs *results) parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		name := procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		b := rs.byName[name]
		if b == nil {
			b = &bench{name: name, values: map[string][]float64{}}
			rs.byName[name] = b
			rs.benches = append(rs.benches, b)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%s: value %q: %w", f[0], f[i], err)
			}
			unit := f[i+1]
			if !slices.Contains(rs.units, unit) {
				rs.units = append(rs.units, unit)
			}
			b.values[unit] = append(b.values[unit], v)
		}
	}
	return sc.Err()
}

// splitVariant splits a benchmark name into its group (the name without its
// "variant=" element) and its variant.
func splitVariant(name string) (group, variant string) {
	parts := strings.Split(name, "/")
	keep := parts[:0:0]
	for _, p := range parts {
		if v, ok := strings.CutPrefix(p, "variant="); ok {
			variant = v
			continue
		}
		keep = append(keep, p)
	}
	return strings.Join(keep, "/"), variant
}

// withVariant returns the name of group's benchmark for variant.
func withVariant(group, variant string) string {
	first, rest, _ := strings.Cut(group, "/")
	if rest == "" {
		return first + "/variant=" + variant
	}
	return first + "/variant=" + variant + "/" + rest
}

// short returns name without the "variant=" key, for display.
func short(name string) string { return strings.ReplaceAll(name, "variant=", "") }

func (rs *results) printMedians(out io.Writer) {
	fmt.Fprintln(out, "Medians per benchmark (n = runs; ± = half the range, relative)")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "benchmark\tn\t")
	for _, u := range rs.units {
		fmt.Fprintf(w, "%s\t", u)
	}
	fmt.Fprintln(w)
	for _, b := range rs.benches {
		n := 0
		for _, u := range rs.units {
			n = max(n, len(b.values[u]))
		}
		fmt.Fprintf(w, "%s\t%d\t", short(b.name), n)
		for _, u := range rs.units {
			med, _, ok := b.median(u)
			if !ok {
				fmt.Fprint(w, "-\t")
				continue
			}
			if s := spread(b.values[u], med); s >= 0.005 {
				fmt.Fprintf(w, "%s ±%.0f%%\t", num(med), 100*s)
			} else {
				fmt.Fprintf(w, "%s\t", num(med))
			}
		}
		fmt.Fprintln(w)
	}
	w.Flush()
}

// additiveUnits are compared by difference rather than by ratio.
var additiveUnits = []string{"B/pendingkey"}

func (rs *results) printRatios(out io.Writer) {
	fmt.Fprintln(out, "Ratios to the baselines of the same run (medians; B/pendingkey as a difference)")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "benchmark\tvs\t")
	for _, u := range rs.units {
		fmt.Fprintf(w, "%s\t", u)
	}
	fmt.Fprintln(w)
	for _, bl := range baselines {
		base := rs.byName[withVariant(bl.group, bl.variant)]
		if base == nil {
			continue
		}
		for _, b := range rs.benches {
			g, v := splitVariant(b.name)
			if g != bl.group || v == bl.variant {
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t", short(b.name), bl.variant)
			for _, u := range rs.units {
				fmt.Fprintf(w, "%s\t", compare(b, base, u))
			}
			fmt.Fprintln(w)
		}
	}
	w.Flush()
}

// compare formats b against base in unit.
func compare(b, base *bench, unit string) string {
	x, _, ok1 := b.median(unit)
	y, _, ok2 := base.median(unit)
	switch {
	case !ok1 || !ok2:
		return "-"
	case slices.Contains(additiveUnits, unit):
		return fmt.Sprintf("%+.1f", x-y)
	case y == 0 && x == 0:
		return "="
	case y == 0:
		return "+" + num(x)
	default:
		return fmt.Sprintf("%.2fx", x/y)
	}
}

// printTargets checks every target and returns how many were missed.
func (rs *results) printTargets(out io.Writer, ts []target) (missed int) {
	fmt.Fprintln(out, "Targets (medians of the same run)")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	var pass, skip int
	for _, t := range ts {
		status, detail := rs.check(t)
		switch status {
		case "PASS":
			pass++
		case "MISS":
			missed++
		default:
			skip++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", status, t.describe(), detail, rs.cpuVerdict(t), t.Why)
	}
	w.Flush()
	fmt.Fprintf(out, "%d PASS, %d MISS, %d SKIP\n", pass, missed, skip)
	return missed
}

// cpuVerdict checks a wall-time target (ns/op) again on the process CPU
// time per op (cpu-ns/op) when the input has it: on a busy machine the wall
// time of a run swings with the other processes, the CPU time much less.
// It is shown beside the verdict, never counted in it.
func (rs *results) cpuVerdict(t target) string {
	if t.Unit != "ns/op" {
		return ""
	}
	t.Unit = "cpu-ns/op"
	status, _ := rs.check(t)
	if status == "SKIP" {
		return ""
	}
	subject, _, _ := rs.byName[t.Subject].median(t.Unit)
	sum := 0.0
	for _, o := range t.Of {
		v, _, _ := rs.byName[o].median(t.Unit)
		sum += v
	}
	return fmt.Sprintf("[cpu-ns/op: %s %.2fx]", status, subject/sum)
}

// describe renders t as "subject unit <= factor × (of...) + plus".
func (t target) describe() string {
	var of []string
	for _, o := range t.Of {
		of = append(of, short(o))
	}
	rhs := strings.Join(of, " + ")
	if len(of) > 1 {
		rhs = "(" + rhs + ")"
	}
	if t.Factor != 1 || t.Plus == 0 {
		rhs = strconv.FormatFloat(t.Factor, 'f', -1, 64) + "x " + rhs
	}
	if t.Plus != 0 {
		rhs += " + " + num(t.Plus)
	}
	return fmt.Sprintf("%s %s <= %s", short(t.Subject), t.Unit, rhs)
}

// check evaluates t: its status (PASS, MISS or SKIP) and the numbers.
func (rs *results) check(t target) (status, detail string) {
	var absent []string
	med := func(name string) float64 {
		b := rs.byName[name]
		if b == nil {
			absent = append(absent, short(name))
			return 0
		}
		v, _, ok := b.median(t.Unit)
		if !ok {
			absent = append(absent, short(name)+" "+t.Unit)
		}
		return v
	}
	subject := med(t.Subject)
	sum := 0.0
	for _, o := range t.Of {
		sum += med(o)
	}
	if len(absent) > 0 {
		return "SKIP", "absent: " + strings.Join(absent, ", ")
	}
	limit := t.Factor*sum + t.Plus
	detail = fmt.Sprintf("%s vs limit %s", num(subject), num(limit))
	if sum != 0 && t.Plus == 0 {
		detail += fmt.Sprintf(" (%.2fx)", subject/sum)
	}
	if subject <= limit {
		status = "PASS"
		if limit != 0 {
			detail += fmt.Sprintf(", %.1f%% headroom", 100*(limit-subject)/limit)
		}
		return status, detail
	}
	status = "MISS"
	if limit != 0 {
		detail += fmt.Sprintf(", over by %s (%.1f%%)", num(subject-limit), 100*(subject-limit)/limit)
	} else {
		detail += ", over by " + num(subject-limit)
	}
	return status, detail
}

// num formats v with about three significant digits.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == math.Trunc(a) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
