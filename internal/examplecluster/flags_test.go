package examplecluster

import (
	"bytes"
	"flag"
	"strings"
	"testing"
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

// TestUsage checks -h: -generate's default is said once, in words, and the
// client limits name client-go's and controller-runtime's defaults.
func TestUsage(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Register(fs, Defaults{MetricsAddr: "127.0.0.1:9464", Workers: 1, Objects: 10, Churn: 5})
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	usage := b.String()
	if n := strings.Count(usage, "(default true"); n > 0 {
		t.Errorf("-h says \"(default true\" %d times:\n%s", n, usage)
	}
	for _, want := range []string{"on with the embedded cluster; off with -kubeconfig", "client-go's default is 5", "controller-runtime's GetConfig turns the client-side limit off", "client-go's default is 10",
		"-workload-qps", "0: no client-side limit", "0: max(1, ceil(-workload-qps))", "-server-qps", "429 Too Many Requests with Retry-After: 1", "watches are exempt"} {
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
