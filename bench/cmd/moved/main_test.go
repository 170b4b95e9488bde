package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// csvIn is benchstat -format csv output of two runs, shortened: a slower
// gated variant, a slower baseline, a gated variant within the noise, one
// that allocates more, and one only the head has.
const csvIn = `goos: linux
goarch: amd64
pkg: github.com/otelqueue/otelqueue/bench
,base.txt,,head.txt,,,
,sec/op,CI,sec/op,CI,vs base,P
Lifecycle/variant=scheduler-bare-2,1.2e-07,2%,1.26e-07,2%,+5.00%,p=0.001 n=8
Lifecycle/variant=scheduler-timed-2,2.1e-07,5%,2.12e-07,5%,~,p=0.382 n=8
Lifecycle/variant=sdkfloor-metrics-2,3.0e-07,4%,3.3e-07,2%,+10.00%,p=0.001 n=8
Lifecycle/variant=scheduler-otel-2,6.0e-07,3%,6.06e-07,3%,+1.00%,p=0.020 n=8
Lifecycle/variant=scheduler-otel-slis-2,,,9.8e-07,3%
geomean,2.6e-07,,2.7e-07,,+3.00%,

,base.txt,,head.txt,,,
,allocs/op,CI,allocs/op,CI,vs base,P
Lifecycle/variant=scheduler-bare-2,0,0%,0,0%,~,p=1.000 n=8
Lifecycle/variant=scheduler-otel-2,0,0%,1,0%,+Inf%,p=0.000 n=8
`

func TestMoved(t *testing.T) {
	moves, err := parse(strings.NewReader(csvIn))
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 6 {
		t.Fatalf("parsed %d moves, want 6 (4 times, 2 allocations; not the geomean, nor the head-only variant): %+v", len(moves), moves)
	}
	var out bytes.Buffer
	gate := regexp.MustCompile(`variant=scheduler-`)
	failed := report(&out, moves, gate, 2)
	t.Log("\n" + out.String())
	if failed != 2 {
		t.Errorf("%d failed, want 2: scheduler-bare 5%% slower, scheduler-otel allocating more", failed)
	}
	// The report's lines with their columns' spacing reduced to one space.
	var lines []string
	for l := range strings.Lines(out.String()) {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"Lifecycle/variant=scheduler-bare sec/op 120.0 ns 126.0 ns +5.0% 0.001 slower FAIL",
		"Lifecycle/variant=scheduler-timed sec/op 210.0 ns 212.0 ns +1.0% 0.382 ~",                     // p=0.382: no move
		"Lifecycle/variant=sdkfloor-metrics sec/op 300.0 ns 330.0 ns +10.0% 0.001 slower (a baseline)", // reported, not gated
		"Lifecycle/variant=scheduler-otel sec/op 600.0 ns 606.0 ns +1.0% 0.020 slower\n",               // within -max
		"Lifecycle/variant=scheduler-otel allocs/op 0 1 +100.0% 0.000 more FAIL",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if failed := report(&bytes.Buffer{}, moves, gate, 10); failed != 1 {
		t.Errorf("with -max 10, %d failed, want 1 (the allocation)", failed)
	}
}

func TestMovedRejectsGarbage(t *testing.T) {
	_, err := parse(strings.NewReader(",sec/op,CI,sec/op,CI,vs base,P\nX-2,abc,1%,def,1%,~,p=1 n=8\n"))
	if err == nil || !strings.Contains(err.Error(), "no numbers") {
		t.Errorf("parse of non-numbers: %v, want an error naming them", err)
	}
}
