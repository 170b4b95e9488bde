package examplecluster

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

func parse(args ...string) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Register(fs, Defaults{MetricsAddr: "127.0.0.1:9464", Workers: 1, Objects: 10, Churn: 5})
	return f, f.Parse(fs, args, nil)
}

func TestParseRejectsWhatWouldPanicOrMislead(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-churn", "Inf"}, "-churn is +Inf"},
		{[]string{"-churn", "2e9"}, "-churn is 2e+09"},
		{[]string{"-churn", "NaN"}, "-churn is NaN"},
		{[]string{"-churn", "-1"}, "-churn is -1"},
		{[]string{"-kube-qps", "0"}, "-kube-qps is 0"},
		{[]string{"-kube-qps", "NaN"}, "-kube-qps is NaN"},
		{[]string{"-kube-qps", "-Inf"}, "-kube-qps is -Inf"},
		{[]string{"-kube-burst", "0"}, "-kube-burst is 0"},
		{[]string{"-latency", "-1ms"}, "-latency is -1ms"},
		{[]string{"-generate=maybe"}, "use true or false"},
		{[]string{"-workload-qps", "-1"}, "-workload-qps is -1"},
		{[]string{"-workload-qps", "NaN"}, "-workload-qps is NaN"},
		{[]string{"-workload-qps", "1e6"}, "-workload-qps is 1e+06"},
		{[]string{"-workload-burst", "-1"}, "-workload-burst is -1: it must not be negative"},
		{[]string{"-workload-burst", "5"}, "-workload-burst is 5 but -workload-qps is 0"},
		{[]string{"-server-qps", "-2"}, "-server-qps is -2"},
		{[]string{"-server-qps", "Inf"}, "-server-qps is +Inf"},
		{[]string{"-kubeconfig", "/k", "-server-qps", "5"}, "a real API server's limits are its API Priority and Fairness configuration"},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	f, err := parse()
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if f.KubeQPS != DefaultKubeQPS || f.KubeBurst != DefaultKubeBurst || !f.Generate || f.WorkloadQPS != 0 || f.WorkloadBurst != 0 || f.ServerQPS != 0 {
		t.Errorf("defaults: %+v", f)
	}
	if _, err := parse("-workload-qps", "2.5", "-server-qps", "7"); err != nil {
		t.Errorf("-workload-qps 2.5 -server-qps 7: %v", err)
	}
	for qps, want := range map[float64]int{0: 1, 0.001: 1, 2.5: 3, 40: 40} {
		if got := workloadBurst(qps, 0); got != want {
			t.Errorf("the burst of -workload-qps %v -workload-burst 0 is %d, want %d", qps, got, want)
		}
	}
	if got := workloadBurst(2.5, 7); got != 7 {
		t.Errorf("-workload-burst 7 gives a burst of %d", got)
	}
}

func TestGenerateDependsOnKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"-generate=false"}, false},
		{[]string{"-kubeconfig", "/k"}, false},
		{[]string{"-kubeconfig", "/k", "-generate"}, true},
	} {
		f, err := parse(tc.args...)
		if err != nil || f.Generate != tc.want {
			t.Errorf("parse(%q): Generate = %v, %v; want %v", tc.args, f.Generate, err, tc.want)
		}
	}
}

// TestUsage checks -h: -generate's default is said once, in words,
// -native-histograms is on, and the client limits name client-go's and
// controller-runtime's defaults.
func TestUsage(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Register(fs, Defaults{MetricsAddr: "127.0.0.1:9464", Workers: 1, Objects: 10, Churn: 5})
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	usage := b.String()
	// -generate's default depends on -kubeconfig: said in words, never as
	// flag's "(default true)". -native-histograms is a plain bool, on.
	_, generate, _ := strings.Cut(usage, "  -generate\n")
	generate, _, _ = strings.Cut(generate, "\n  -")
	if strings.Contains(generate, "(default true") || strings.Contains(generate, "(default false") {
		t.Errorf("-h gives -generate a flag-style default:\n%s", generate)
	}
	if n := strings.Count(usage, "(default true)"); n != 1 || !strings.Contains(usage, "classic buckets only (default true)") {
		t.Errorf("-h says \"(default true)\" %d times, want once, for -native-histograms:\n%s", n, usage)
	}
	for _, want := range []string{"on with the embedded cluster; off with -kubeconfig", "client-go's default is 5", "controller-runtime's GetConfig turns the client-side limit off", "client-go's default is 10",
		"-workload-qps", "0: no client-side limit", "0: max(1, ceil(-workload-qps))", "-server-qps", "429 Too Many Requests with Retry-After: 1", "watches are exempt",
		"-adaptive-workers MIN:MAX", "starts at -workers", "MaxConcurrentReconciles is MAX", "the pool's starting count",
		"-churn-schedule", "30s:400,90s:40"} {
		if !strings.Contains(usage, want) {
			t.Errorf("-h lacks %q:\n%s", want, usage)
		}
	}
}

func TestWorkers(t *testing.T) {
	for n, want := range map[int]string{1: "1 worker", 2: "2 workers", 0: "0 workers"} {
		if got := Workers(n); got != want {
			t.Errorf("Workers(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseAdaptiveWorkers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the error's text; "" for none
		on   bool
		min  int
		max  int
	}{
		{args: nil},
		{args: []string{"-adaptive-workers", ""}},
		{args: []string{"-adaptive-workers", "1:32"}, on: true, min: 1, max: 32},
		{args: []string{"-adaptive-workers", "2:2", "-workers", "2"}, on: true, min: 2, max: 2},
		{args: []string{"-adaptive-workers", "4:8", "-workers", "8"}, on: true, min: 4, max: 8},
		{args: []string{"-adaptive-workers", "32"}, want: "use MIN:MAX, two whole numbers of workers, e.g. 1:32"},
		{args: []string{"-adaptive-workers", "1:x"}, want: "use MIN:MAX"},
		{args: []string{"-adaptive-workers", "1.5:4"}, want: "use MIN:MAX"},
		{args: []string{"-adaptive-workers", "0:4"}, want: "-adaptive-workers 0:4: MIN is 0, it must be at least 1"},
		{args: []string{"-adaptive-workers", "-1:4"}, want: "MIN is -1, it must be at least 1"},
		{args: []string{"-adaptive-workers", "8:4", "-workers", "4"}, want: "-adaptive-workers 8:4: MAX 4 is below MIN 8"},
		{args: []string{"-adaptive-workers", "4:32", "-workers", "2"}, want: "-workers is 2, outside -adaptive-workers 4:32: with an adaptive pool, -workers is its starting count"},
		{args: []string{"-adaptive-workers", "1:8", "-workers", "9"}, want: "-workers is 9, outside -adaptive-workers 1:8"},
	} {
		f, err := parse(tc.args...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("parse(%q): %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		case tc.want == "" && (f.Adaptive.On() != tc.on || f.Adaptive.Min != tc.min || f.Adaptive.Max != tc.max):
			t.Errorf("parse(%q): Adaptive = %+v (on %v), want on %v, %d:%d", tc.args, f.Adaptive, f.Adaptive.On(), tc.on, tc.min, tc.max)
		}
	}
	f, err := parse("-adaptive-workers", "1:32", "-workers", "4")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.WorkersText(), "4 workers to start, adaptive from 1 to 32"; got != want {
		t.Errorf("WorkersText() = %q, want %q", got, want)
	}
	if got := f.Adaptive.String(); got != "1:32" {
		t.Errorf("-adaptive-workers 1:32 prints as %q", got)
	}
	if f, _ := parse("-workers", "3"); f.WorkersText() != "3 workers" || f.Adaptive.String() != "" {
		t.Errorf("without -adaptive-workers: %q, %q", f.WorkersText(), f.Adaptive.String())
	}
}

func TestParseChurnSchedule(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-churn-schedule", "30s"}, `"30s": use TIME:RATE,... with a duration and updates per second, e.g. 30s:400,90s:40`},
		{[]string{"-churn-schedule", "30:400"}, `"30:400": use TIME:RATE`},
		{[]string{"-churn-schedule", "30s:many"}, `"30s:many": use TIME:RATE`},
		{[]string{"-churn-schedule", "30s:400,"}, `"": use TIME:RATE`},
		{[]string{"-churn-schedule", "0s:400"}, "-churn-schedule 0s:400: time 0s is not after the start (the rate at the start is -churn's)"},
		{[]string{"-churn-schedule", "-5s:400"}, "time -5s is not after the start"},
		{[]string{"-churn-schedule", "30s:400,30s:40"}, "-churn-schedule 30s:400,30s:40: time 30s is not after 30s: the times must increase"},
		{[]string{"-churn-schedule", "1m:400,30s:40"}, "time 30s is not after 1m0s: the times must increase"},
		{[]string{"-churn-schedule", "30s:20000"}, "-churn-schedule's rate at 30s is 20000: it must be 0 or more updates per second, at most 10000"},
		{[]string{"-churn-schedule", "30s:-1"}, "-churn-schedule's rate at 30s is -1"},
		{[]string{"-churn-schedule", "30s:NaN"}, "-churn-schedule's rate at 30s is NaN"},
		{[]string{"-churn-schedule", "30s:400,90s:40", "-duration", "60s"}, "time 1m30s is not before -duration 1m0s: that change would never happen"},
		{[]string{"-churn-schedule", "30s:400", "-generate=false"}, "-churn-schedule 30s:400 changes the workload's rate, and no workload runs"},
		{[]string{"-churn-schedule", "30s:400", "-kubeconfig", "/k"}, "and no workload runs (with -kubeconfig it runs only with -generate)"},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	f, err := parse("-churn-schedule", "30s:400,1m30s:40,2m:0", "-duration", "3m")
	if err != nil {
		t.Fatal(err)
	}
	want := ChurnSchedule{{30 * time.Second, 400}, {90 * time.Second, 40}, {2 * time.Minute, 0}}
	if !slices.Equal(f.ChurnSchedule, want) {
		t.Errorf("schedule %v, want %v", f.ChurnSchedule, want)
	}
	if got := f.ChurnSchedule.String(); got != "30s:400,1m30s:40,2m0s:0" {
		t.Errorf("the schedule prints as %q", got)
	}
	if f, err := parse("-churn-schedule", "30s:400", "-kubeconfig", "/k", "-generate"); err != nil || len(f.ChurnSchedule) != 1 {
		t.Errorf("with -kubeconfig and -generate: %v, %v", f.ChurnSchedule, err)
	}
	if f, err := parse("-churn-schedule", ""); err != nil || f.ChurnSchedule != nil {
		t.Errorf("an empty -churn-schedule: %v, %v", f.ChurnSchedule, err)
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-shards", "0"}, "-shards is 0: it must be at least 1"},
		{[]string{"-shards", "3", "-shard", "3"}, "-shard is 3: with -shards 3 it must be from 0 to 2"},
		{[]string{"-shards", "3", "-shard", "-1"}, "-shard is -1"},
		{[]string{"-shard", "1"}, "-shard is 1: with -shards 1 it must be from 0 to 0"},
		{[]string{"-shards", "2", "-shard-by", "name"}, `-shard-by is "name": it must be uid or namespace`},
		{[]string{"-shards", "2", "-shard-filter", "none"}, `-shard-filter is "none": it must be server or client`},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	f, err := parse()
	if err != nil || f.Shard != nil {
		t.Errorf("one shard: %v, %v; want no selector", f.Shard, err)
	}
	f, err = parse("-shards", "3", "-shard", "2", "-shard-by", "namespace")
	if err != nil {
		t.Fatal(err)
	}
	if o, n := f.Shard.Ordinal(); o != 2 || n != 3 || f.Shard.By() != "namespace" {
		t.Errorf("-shards 3 -shard 2 -shard-by namespace: %v", f.Shard)
	}
}
