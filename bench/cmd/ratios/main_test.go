package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/otelqueue/otelqueue/bench
cpu: whatever
BenchmarkLifecycle/variant=clientgo-bare-2         	 9000000	       130.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkLifecycle/variant=clientgo-bare-2         	 9000000	       120.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkLifecycle/variant=clientgo-bare-2         	 9000000	       500.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkLifecycle/variant=scheduler-bare-2        	 9000000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkLifecycle/variant=scheduler-bare-2        	 9000000	       110.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkLifecycle/variant=clientgo-crprom-2       	 3000000	       400.0 ns/op	       8 B/op	       1 allocs/op
some log line
BenchmarkPending/variant=clientgo/pending=1M-2     	 100000000	         0 B/op	       0 allocs/op	       100.0 B/pendingkey
BenchmarkPending/variant=scheduler/pending=1M-2    	 1000000	       900.0 ns/op	       0 B/op	       0 allocs/op	       190.0 B/pendingkey
BenchmarkPending/variant=scheduler/pending=1k-2    	 1000000	       400.0 ns/op	       0 B/op	       0 allocs/op	       150.0 B/pendingkey
PASS
ok  	github.com/otelqueue/otelqueue/bench	10.0s
`

func parsed(t *testing.T) *results {
	t.Helper()
	rs := newResults()
	if err := rs.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestParseAndMedian(t *testing.T) {
	rs := parsed(t)
	if len(rs.benches) != 6 {
		t.Fatalf("parsed %d benchmarks, want 6", len(rs.benches))
	}
	b := rs.byName["Lifecycle/variant=clientgo-bare"]
	if b == nil {
		t.Fatalf("no Lifecycle/variant=clientgo-bare in %v", rs.byName)
	}
	if m, n, _ := b.median("ns/op"); m != 130 || n != 3 {
		t.Errorf("median = %v of %d, want 130 of 3", m, n)
	}
	if m, _, _ := rs.byName["Lifecycle/variant=scheduler-bare"].median("ns/op"); m != 105 {
		t.Errorf("even median = %v, want 105", m)
	}
	if _, _, ok := rs.byName["Pending/variant=clientgo/pending=1M"].median("ns/op"); ok {
		t.Errorf("a suppressed ns/op has a median")
	}
	if want := []string{"ns/op", "B/op", "allocs/op", "B/pendingkey"}; strings.Join(rs.units, " ") != strings.Join(want, " ") {
		t.Errorf("units = %v, want %v", rs.units, want)
	}
}

func TestVariantNames(t *testing.T) {
	for _, name := range []string{"Lifecycle/variant=clientgo-bare", "Pending/variant=scheduler/pending=1M"} {
		g, v := splitVariant(name)
		if got := withVariant(g, v); got != name {
			t.Errorf("withVariant(splitVariant(%q)) = %q", name, got)
		}
	}
	if g, v := splitVariant("Pending/variant=scheduler/pending=1M"); g != "Pending/pending=1M" || v != "scheduler" {
		t.Errorf("splitVariant = %q, %q", g, v)
	}
}

func TestCheck(t *testing.T) {
	rs := parsed(t)
	for _, c := range []struct {
		t    target
		want string
	}{
		{target{Subject: "Lifecycle/variant=scheduler-bare", Unit: "ns/op", Factor: 1, Of: []string{"Lifecycle/variant=clientgo-bare"}}, "PASS"},
		{target{Subject: "Lifecycle/variant=scheduler-bare", Unit: "ns/op", Factor: 0.5, Of: []string{"Lifecycle/variant=clientgo-bare"}}, "MISS"},
		{target{Subject: "Lifecycle/variant=scheduler-bare", Unit: "allocs/op", Factor: 1, Of: []string{"Lifecycle/variant=clientgo-bare"}}, "PASS"},
		{target{Subject: "Lifecycle/variant=clientgo-crprom", Unit: "allocs/op", Factor: 1, Of: []string{"Lifecycle/variant=clientgo-bare"}}, "MISS"},
		{target{Subject: "Lifecycle/variant=clientgo-crprom", Unit: "ns/op", Factor: 1.2, Of: []string{"Lifecycle/variant=scheduler-bare", "Lifecycle/variant=clientgo-bare"}}, "MISS"}, // 400 > 1.2 × 235
		{target{Subject: "Lifecycle/variant=clientgo-crprom", Unit: "ns/op", Factor: 1.8, Of: []string{"Lifecycle/variant=scheduler-bare", "Lifecycle/variant=clientgo-bare"}}, "PASS"}, // 400 <= 1.8 × 235
		{target{Subject: "Pending/variant=scheduler/pending=1M", Unit: "B/pendingkey", Factor: 1, Of: []string{"Pending/variant=clientgo/pending=1M"}, Plus: 80}, "MISS"},               // 190 > 180
		{target{Subject: "Pending/variant=scheduler/pending=1M", Unit: "ns/op", Factor: 2, Of: []string{"Pending/variant=scheduler/pending=1k"}}, "MISS"},
		{target{Subject: "Lifecycle/variant=scheduler-otel", Unit: "ns/op", Factor: 1, Of: []string{"Lifecycle/variant=clientgo-crprom"}}, "SKIP"},
		{target{Subject: "Pending/variant=clientgo/pending=1M", Unit: "ns/op", Factor: 1, Of: []string{"Pending/variant=scheduler/pending=1M"}}, "SKIP"},
	} {
		if got, detail := rs.check(c.t); got != c.want {
			t.Errorf("%s: %s (%s), want %s", c.t.describe(), got, detail, c.want)
		}
	}
}

// TestTargetsAreWellFormed checks the real target table: every benchmark it
// names is a Lifecycle, Delayed, Pending, Priorities or Throughput variant,
// and every limit is positive.
func TestTargetsAreWellFormed(t *testing.T) {
	for _, tg := range targets {
		for _, name := range append([]string{tg.Subject}, tg.Of...) {
			if g, v := splitVariant(name); v == "" || !(g == "Lifecycle" || g == "Delayed" || strings.HasPrefix(g, "Pending/") || strings.HasPrefix(g, "Priorities/") || strings.HasPrefix(g, "Throughput/")) {
				t.Errorf("target %q names %q, not a variant of a known benchmark", tg.describe(), name)
			}
		}
		if tg.Factor <= 0 || len(tg.Of) == 0 {
			t.Errorf("target %q has no positive limit", tg.describe())
		}
	}
}

func TestPrint(t *testing.T) {
	rs := parsed(t)
	var buf bytes.Buffer
	rs.printMedians(&buf)
	rs.printRatios(&buf)
	missed := rs.printTargets(&buf, targets)
	out := buf.String()
	for _, want := range []string{"Lifecycle/scheduler-bare", "0.81x", "+90.0", "MISS", "SKIP"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if missed == 0 {
		t.Errorf("no target missed, want the B/pendingkey one:\n%s", out)
	}
}
