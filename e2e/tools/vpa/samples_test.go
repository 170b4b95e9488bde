package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command with a space and a parenthesis: fields count from the last ')'.
	stat := "4242 (my (app) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 567 0 0 20 0 12 0 100 1000000 2000 18446744073709551615\n"
	got, err := parseStatTicks(stat)
	if err != nil || got != 1234+567 {
		t.Fatalf("parseStatTicks = %d, %v; want %d", got, err, 1234+567)
	}
	if _, err := parseStatTicks("4242 (app) S 1 2"); err == nil {
		t.Error("a short stat line parsed")
	}
	status := "Name:\tapp\nVmPeak:\t  900000 kB\nVmRSS:\t   51200 kB\nRssAnon:\t 40000 kB\nRssFile:\t   11200 kB\nRssShmem:\t       0 kB\n"
	m, err := parseStatus(status)
	if err != nil || m != (memory{51200 * 1024, 40000 * 1024, 11200 * 1024}) {
		t.Fatalf("parseStatus = %+v, %v", m, err)
	}
	if _, err := parseStatus("Name:\tapp\nState:\tZ (zombie)\n"); err == nil {
		t.Error("a status without VmRSS parsed")
	}
}

// TestReadProc reads this test's own process: the CPU time it shows over
// a busy second is the process's own (getrusage), whatever else the machine
// runs.
func TestReadProc(t *testing.T) {
	var ra, rb syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ra)
	a, err := readProc("/proc", os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
	}
	b, err := readProc("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &rb)
	s := sampleOf(a, b)
	cpu := func(r syscall.Rusage) float64 { return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e9 }
	want := cpu(rb) - cpu(ra)
	got := s.CPU * s.Window.Seconds()
	if s.RSS == 0 || want < 0.05 || got < want-0.05 || got > want+0.05 {
		t.Errorf("a busy second: %.3f s of CPU from /proc (%+v), %.3f s from getrusage", got, s, want)
	}
}

func TestSampleOf(t *testing.T) {
	a := reading{at: t0, ticks: 1000, mem: memory{1 << 20, 1 << 19, 1 << 19}}
	b := reading{at: t0.Add(15 * time.Second), ticks: 1000 + 450, mem: memory{3 << 20, 2 << 20, 1 << 20}}
	s := sampleOf(a, b)
	if s.CPU != 0.3 || s.Window != 15*time.Second || s.RSS != 3<<20 || s.RSSAnon != 2<<20 || s.RSSFile != 1<<20 || s.At != b.at {
		t.Errorf("sampleOf = %+v, want 0.3 cores over 15s and the later RSS", s)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	m := Meta{Start: t0, Resolution: 15 * time.Second, Command: "/tmp/app -churn 20", Cgroup: "cgroup v1 /x (0.3 cores)"}
	var samples []Sample
	for i := 1; i <= 20; i++ {
		samples = append(samples, Sample{At: t0.Add(time.Duration(i) * 15 * time.Second), Window: 15 * time.Second, Ticks: uint64(i * 45), CPU: float64(i%4) / 10, RSS: uint64(40+i) << 20, RSSAnon: uint64(i) << 20, RSSFile: 40 << 20})
	}
	var buf bytes.Buffer
	w, err := newCSVWriter(&buf, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if err := w.write(s); err != nil {
			t.Fatal(err)
		}
	}
	gm, got, err := readCSV(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !gm.Start.Equal(m.Start) || gm.Resolution != m.Resolution || gm.Command != m.Command || gm.Cgroup != m.Cgroup {
		t.Errorf("meta %+v, want %+v", gm, m)
	}
	if len(got) != len(samples) {
		t.Fatalf("%d samples read, want %d", len(got), len(samples))
	}
	for i := range got {
		if !got[i].At.Equal(samples[i].At) || got[i].CPU != samples[i].CPU || got[i].RSS != samples[i].RSS || got[i].RSSAnon != samples[i].RSSAnon || got[i].RSSFile != samples[i].RSSFile || got[i].Ticks != samples[i].Ticks || got[i].Window != samples[i].Window {
			t.Errorf("sample %d: %+v, want %+v", i, got[i], samples[i])
		}
	}
	// The comparison from the file is the comparison of the run.
	if a, b := simulate(samples, t0, time.Minute, 15*time.Second), simulate(got, gm.Start, time.Minute, gm.Resolution); a != b {
		t.Errorf("replayed %+v, want %+v", b, a)
	}
	if _, _, err := readCSV(strings.NewReader("at,elapsed_s\n")); err == nil {
		t.Error("a CSV without its comment lines was read")
	}
}

func TestCheckDemoArgs(t *testing.T) {
	for _, a := range [][]string{{"-duration", "5m"}, {"--metrics-addr=:1"}, {"-churn", "5", "-duration=1m"}} {
		if checkDemoArgs(a) == nil {
			t.Errorf("%q accepted", a)
		}
	}
	if err := checkDemoArgs([]string{"-churn", "20", "-churn-schedule", "5m:40"}); err != nil {
		t.Error(err)
	}
}
