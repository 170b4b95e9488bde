// Package examplecluster is what otelqueue's two example controllers
// (example/app and example/controllerruntime) share besides telemetry: their
// common flags and how they are checked, the cluster they talk to (an
// embedded API server on loopback, or a real one through -kubeconfig)
// through client-go's REST client with a token bucket limiter for the
// controller and another for the workload, the synthetic workload that
// writes ConfigMaps at a rate and says when it falls behind, and the
// arithmetic of the summary line (utilization, the worker count a saturated
// queue needs).
package examplecluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/otelqueue/otelqueue/shard"
)

// Limits of the workload's rates: beyond them the numbers mean nothing on
// one process and the pacing arithmetic loses its precision.
const (
	// MaxChurn is the largest -churn accepted, in updates per second.
	MaxChurn = 10000
	// MaxKubeQPS is the largest -kube-qps, -workload-qps and -server-qps
	// accepted.
	MaxKubeQPS = 100000
)

// Default client limits of the examples: enough for the default workload
// (its writes and the reconciles' writes) to run at the rate it asks for on
// a real API server. client-go's own defaults (5 requests/s, burst 10) land
// a small fraction of it.
const (
	DefaultKubeQPS   = 100
	DefaultKubeBurst = 200
)

// Flags are the flags both examples have.
type Flags struct {
	Kubeconfig  string
	Namespace   string
	Duration    time.Duration
	MetricsAddr string
	// NativeHistograms is -native-histograms: native buckets beside the
	// classic ones (exampletelemetry.Config.NativeHistograms).
	NativeHistograms bool
	Workers          int
	SummaryEvery     time.Duration
	// Generate says whether the workload runs: by default with the fake
	// cluster, and with -kubeconfig only when asked for.
	Generate bool
	Objects  int
	Churn    float64 // updates per second
	Latency  time.Duration
	// ReconcileCPU is the CPU time each reconcile with work to do burns
	// (BurnCPU), before its Latency.
	ReconcileCPU time.Duration
	// KubeQPS and KubeBurst are the controller's client-side token bucket
	// (rest.Config's QPS and Burst), on the embedded cluster too.
	KubeQPS   float64
	KubeBurst int
	// WorkloadQPS and WorkloadBurst are the workload's own client-side token
	// bucket: WorkloadQPS 0 is none, WorkloadBurst 0 is
	// max(1, ceil(WorkloadQPS)).
	WorkloadQPS   float64
	WorkloadBurst int
	// ServerQPS is the embedded API server's simulated API Priority and
	// Fairness limit, in requests per second of each client (0: none; see
	// ServerOptions.QPS). A real cluster has its own.
	ServerQPS float64
	// Adaptive is -adaptive-workers MIN:MAX, the bounds of an adaptive
	// worker pool (otelqueue.AdaptiveWorkers) that starts at Workers; its
	// zero value (the flag empty) is a fixed count of Workers.
	Adaptive AdaptiveRange
	// ChurnSchedule is -churn-schedule: the changes of Churn during the
	// run (Workload.Schedule).
	ChurnSchedule ChurnSchedule
	// Shards, ShardIndex and ShardBy are -shards, -shard and -shard-by:
	// this replica reconciles the objects of shard ShardIndex of Shards
	// (Shard, nil for one shard: every object). ShardFilter is
	// -shard-filter: "server" refuses to start when the API server ignores
	// the selector, "client" filters on the client then.
	Shards      int
	ShardIndex  int
	ShardBy     string
	ShardFilter string
	Shard       *shard.Shard

	generate optionalBool
}

// parseShard checks the shard flags and sets Shard.
func (f *Flags) parseShard() error {
	switch {
	case f.Shards < 1:
		return fmt.Errorf("-shards is %d: it must be at least 1", f.Shards)
	case f.ShardIndex < 0 || f.ShardIndex >= f.Shards:
		return fmt.Errorf("-shard is %d: with -shards %d it must be from 0 to %d", f.ShardIndex, f.Shards, f.Shards-1)
	case f.ShardBy != "uid" && f.ShardBy != "namespace":
		return fmt.Errorf("-shard-by is %q: it must be uid or namespace", f.ShardBy)
	case f.ShardFilter != "server" && f.ShardFilter != "client":
		return fmt.Errorf("-shard-filter is %q: it must be server or client", f.ShardFilter)
	case f.Shards == 1:
		return nil
	}
	s, err := shard.New(f.ShardIndex, f.Shards, f.ShardBy)
	if err != nil {
		return fmt.Errorf("-shard %d -shards %d -shard-by %s: %w", f.ShardIndex, f.Shards, f.ShardBy, err)
	}
	f.Shard = s
	return nil
}

// Defaults are the per-example defaults and usage texts of the shared flags.
type Defaults struct {
	MetricsAddr  string
	Workers      int
	WorkersUsage string
	Objects      int
	ObjectsUsage string
	Churn        float64
	Latency      time.Duration
	LatencyUsage string
}

// Register defines the shared flags on fs.
func (f *Flags) Register(fs *flag.FlagSet, d Defaults) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "path to a kubeconfig: run against that cluster instead of the embedded one (an API server for ConfigMaps on loopback, over HTTP, backed by client-go's fake object tracker)")
	fs.StringVar(&f.Namespace, "namespace", "otelqueue-demo", "namespace whose ConfigMaps the controller watches")
	fs.DurationVar(&f.Duration, "duration", 0, "stop cleanly after this long (0: run until SIGINT or SIGTERM)")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", d.MetricsAddr, "address serving Prometheus metrics at /metrics (empty: off)")
	fs.BoolVar(&f.NativeHistograms, "native-histograms", true, "serve the queue-wait and work-duration histograms with native (sparse, schema 3) buckets beside the classic ones, as controller-runtime does: both in one histogram at /metrics (a Prometheus that scrapes native histograms asks for the protobuf format, which carries both; the text formats show the classic buckets), and a second stream, workqueue.queue.duration.native and workqueue.work.duration.native, over OTLP (otelqueuesdk.NativeHistograms; docs/metrics.md#native-histograms). -native-histograms=false: classic buckets only")
	fs.IntVar(&f.Workers, "workers", d.Workers, d.WorkersUsage+"; with -adaptive-workers, the pool's starting count, within its MIN:MAX")
	fs.DurationVar(&f.SummaryEvery, "summary-interval", 5*time.Second, "how often to print the queue summary line (0: never)")
	fs.Var(&f.generate, "generate", "run the synthetic workload (default: on with the embedded cluster; off with -kubeconfig, where it writes ConfigMaps in -namespace, so it must be asked for)")
	fs.IntVar(&f.Objects, "objects", d.Objects, d.ObjectsUsage)
	fs.Float64Var(&f.Churn, "churn", d.Churn, fmt.Sprintf("ConfigMap updates per second (at most %d); -churn-schedule changes it during the run", MaxChurn))
	fs.Var(&f.ChurnSchedule, "churn-schedule", fmt.Sprintf("changes of -churn during the run, as `TIME:RATE,...`: e.g. 30s:400,90s:40 writes 400 updates per second from 30 s after the workload started, and 40 from 90 s (times increasing, rates at most %d; empty: -churn throughout; needs the workload)", MaxChurn))
	fs.Var(&f.Adaptive, "adaptive-workers", "`MIN:MAX`, e.g. 1:32: an adaptive worker pool (otelqueue.AdaptiveWorkers) between MIN and MAX workers that starts at -workers, grows with the demand, and shrinks when the workers idle or when a downstream limit (the client's -kube-qps, the API server's 429s, reconciles slower the more run at once) holds the reconciles back; it logs an \"adaptive workers\" line for every decision, and the summary line shows its count. with controller-runtime, MAX goroutines run (its MaxConcurrentReconciles is MAX), of which the pool lets its count take keys; the client-go example starts them as the count grows (empty: a fixed -workers)")
	fs.DurationVar(&f.Latency, "latency", d.Latency, d.LatencyUsage)
	fs.DurationVar(&f.ReconcileCPU, "reconcile-cpu", 0, fmt.Sprintf("CPU time each reconcile with work to do spends before its -latency: real work (hashing), measured on its thread's CPU clock, so that it costs that much CPU however long it takes, as a CPU-heavy reconcile (a diff, a template, a large object) does. With a CPU limit below what the load needs, the summary line's bottleneck is cpu (0: none; at most %v)", MaxReconcileCPU))
	fs.Float64Var(&f.KubeQPS, "kube-qps", DefaultKubeQPS, "the controller's client requests per second to the API server, embedded or real (rest.Config.QPS; client-go's default is 5; controller-runtime's GetConfig turns the client-side limit off and leaves it to the server's API Priority and Fairness); the workload has a client of its own, see -workload-qps")
	fs.IntVar(&f.KubeBurst, "kube-burst", DefaultKubeBurst, "the controller's client requests allowed at once above -kube-qps (rest.Config.Burst; client-go's default is 10)")
	fs.Float64Var(&f.WorkloadQPS, "workload-qps", 0, fmt.Sprintf("the workload's client requests per second, a limit of its own apart from the controller's -kube-qps (0: no client-side limit; at most %d)", MaxKubeQPS))
	fs.IntVar(&f.WorkloadBurst, "workload-burst", 0, "the workload's client requests allowed at once above -workload-qps (0: max(1, ceil(-workload-qps)))")
	fs.IntVar(&f.Shards, "shards", 1, "the number of replicas that share the objects, each reconciling its shard on the API server's sharded list and watch (Kubernetes 1.36+, feature gate ShardedListAndWatch; docs/scaling.md)")
	fs.IntVar(&f.ShardIndex, "shard", 0, "this replica's shard, 0 to -shards - 1")
	fs.StringVar(&f.ShardBy, "shard-by", "uid", "what the shards split by: uid (objects spread evenly) or namespace (a namespace's objects in one shard)")
	fs.StringVar(&f.ShardFilter, "shard-filter", "server", "with -shards above 1, when the API server ignores the shard selector (its gate off, or older than 1.36): server (refuse to start) or client (filter on the client: every replica still lists and watches every object)")
	fs.Float64Var(&f.ServerQPS, "server-qps", 0, "embedded cluster only: requests per second its API server accepts from the controller, burst max(1, ceil(-server-qps)); beyond that it answers 429 Too Many Requests with Retry-After: 1, which client-go sleeps and retries up to 10 times. A simulation of the controller's API Priority and Fairness share: the workload stands for the cluster's other clients, with shares of their own, and watches are exempt (0: off; refused with -kubeconfig, where the real API server's own configuration applies)")
}

// Parse parses args into fs (whose flags include f's, see Register), checks
// the shared flags and then calls check, if not nil, with a function that
// records an error, for the example's own flags. With -h it prints the
// usage to stdout and returns flag.ErrHelp.
func (f *Flags) Parse(fs *flag.FlagSet, args []string, check func(bad func(format string, a ...any))) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Fprintf(os.Stdout, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
			return err
		}
		return fmt.Errorf("%v (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: every setting is a flag (run with -h)", fs.Arg(0))
	}
	f.Generate = f.Kubeconfig == ""
	if f.generate.set {
		f.Generate = f.generate.value
	}

	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if f.Workers < 1 {
		bad("-workers is %d: it must be at least 1", f.Workers)
	}
	if f.Duration < 0 {
		bad("-duration is %v: use a positive duration, or 0 to run until interrupted", f.Duration)
	}
	if f.SummaryEvery < 0 {
		bad("-summary-interval is %v: use a positive duration, or 0 for no summary", f.SummaryEvery)
	}
	if f.Objects < 1 {
		bad("-objects is %d: it must be at least 1", f.Objects)
	}
	if err := CheckRate("-churn", f.Churn, false, MaxChurn, "updates per second"); err != nil {
		errs = append(errs, err)
	}
	if f.Latency < 0 {
		bad("-latency is %v: it must not be negative", f.Latency)
	}
	if f.ReconcileCPU < 0 || f.ReconcileCPU > MaxReconcileCPU {
		bad("-reconcile-cpu is %v: it must be from 0 (none) to %v", f.ReconcileCPU, MaxReconcileCPU)
	}
	if err := CheckRate("-kube-qps", f.KubeQPS, true, MaxKubeQPS, "requests per second"); err != nil {
		errs = append(errs, err)
	}
	if f.KubeBurst < 1 {
		bad("-kube-burst is %d: it must be at least 1 (a token bucket of size 0 lets no request through)", f.KubeBurst)
	}
	if err := CheckRate("-workload-qps", f.WorkloadQPS, false, MaxKubeQPS, "requests per second"); err != nil {
		errs = append(errs, err)
	}
	switch {
	case f.WorkloadBurst < 0:
		bad("-workload-burst is %d: it must not be negative (0 means max(1, ceil(-workload-qps)))", f.WorkloadBurst)
	case f.WorkloadBurst > 0 && f.WorkloadQPS == 0:
		bad("-workload-burst is %d but -workload-qps is 0, no client-side limit: set -workload-qps too", f.WorkloadBurst)
	}
	if err := CheckRate("-server-qps", f.ServerQPS, false, MaxKubeQPS, "requests per second"); err != nil {
		errs = append(errs, err)
	} else if err := checkServerQPS(*f); err != nil {
		errs = append(errs, err)
	}
	if a := f.Adaptive; a.On() {
		switch {
		case a.Min < 1:
			bad("-adaptive-workers %v: MIN is %d, it must be at least 1", a, a.Min)
		case a.Max < a.Min:
			bad("-adaptive-workers %v: MAX %d is below MIN %d", a, a.Max, a.Min)
		case f.Workers >= 1 && (f.Workers < a.Min || f.Workers > a.Max):
			bad("-workers is %d, outside -adaptive-workers %v: with an adaptive pool, -workers is its starting count, from MIN to MAX", f.Workers, a)
		}
	}
	if err := f.parseShard(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, f.ChurnSchedule.check(f.Duration)...)
	if len(f.ChurnSchedule) > 0 && !f.Generate {
		bad("-churn-schedule %v changes the workload's rate, and no workload runs (with -kubeconfig it runs only with -generate)", f.ChurnSchedule)
	}
	if f.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(f.MetricsAddr); err != nil {
			bad("-metrics-addr %q: %v (use host:port, e.g. 127.0.0.1:9464)", f.MetricsAddr, err)
		}
	}
	if check != nil {
		check(bad)
	}
	return errors.Join(errs...)
}

// checkServerQPS refuses -server-qps with -kubeconfig.
func checkServerQPS(f Flags) error {
	if f.ServerQPS != 0 && f.Kubeconfig != "" {
		return fmt.Errorf("-server-qps is %v with -kubeconfig: it throttles the embedded API server only; a real API server's limits are its API Priority and Fairness configuration (FlowSchemas and PriorityLevelConfigurations)", f.ServerQPS)
	}
	return nil
}

// workloadBurst returns the workload's burst: burst, or for 0,
// max(1, ceil(qps)).
func workloadBurst(qps float64, burst int) int {
	if burst > 0 {
		return burst
	}
	return max(1, int(math.Ceil(qps)))
}

// CheckRate says what is wrong with the value v of a float flag that must
// be a finite number from 0 (or, with positive, above 0) to max, or returns
// nil. NaN and the infinities parse as floats, and fail every comparison.
func CheckRate(name string, v float64, positive bool, max float64, unit string) error {
	lowest := "0 or more"
	if positive {
		lowest = "more than 0"
	}
	if !(v >= 0 && v <= max) || positive && v == 0 {
		return fmt.Errorf("%s is %v: it must be %s %s, at most %v", name, v, lowest, unit, max)
	}
	return nil
}

// optionalBool is a boolean flag that knows whether it was given, and whose
// zero value prints no "(default false)" in -h: the default of -generate
// depends on -kubeconfig and is said in its usage.
type optionalBool struct {
	set, value bool
}

func (b *optionalBool) IsBoolFlag() bool { return true }

func (b *optionalBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("use true or false")
	}
	b.set, b.value = true, v
	return nil
}

// AdaptiveRange is the value of -adaptive-workers, MIN:MAX; its zero value
// is the flag empty: no adaptive pool.
type AdaptiveRange struct {
	Min, Max int
	set      bool
}

// On reports whether an adaptive pool was asked for.
func (a AdaptiveRange) On() bool { return a.set }

// String is MIN:MAX, or "" when off.
func (a AdaptiveRange) String() string {
	if !a.set {
		return ""
	}
	return fmt.Sprintf("%d:%d", a.Min, a.Max)
}

// Set parses MIN:MAX; an empty value turns the pool off. The bounds are
// checked by Flags.Parse, against -workers.
func (a *AdaptiveRange) Set(s string) error {
	if s == "" {
		*a = AdaptiveRange{}
		return nil
	}
	lo, hi, ok := strings.Cut(s, ":")
	min, err1 := strconv.Atoi(strings.TrimSpace(lo))
	max, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("use MIN:MAX, two whole numbers of workers, e.g. 1:32")
	}
	*a = AdaptiveRange{Min: min, Max: max, set: true}
	return nil
}

// ChurnStep is a change of the workload's rate: from At after the workload
// started, it writes Churn updates per second.
type ChurnStep struct {
	At    time.Duration
	Churn float64
}

// ChurnSchedule is the value of -churn-schedule, TIME:RATE,...: the changes
// of -churn during the run.
type ChurnSchedule []ChurnStep

// String is the schedule as the flag takes it.
func (c ChurnSchedule) String() string {
	parts := make([]string, len(c))
	for i, s := range c {
		parts[i] = fmt.Sprintf("%v:%g", s.At, s.Churn)
	}
	return strings.Join(parts, ",")
}

// Set parses TIME:RATE,... (an empty value is no schedule). The times and
// rates are checked by Flags.Parse.
func (c *ChurnSchedule) Set(v string) error {
	*c = nil
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out ChurnSchedule
	for _, part := range strings.Split(v, ",") {
		at, rate, ok := strings.Cut(strings.TrimSpace(part), ":")
		d, err1 := time.ParseDuration(at)
		r, err2 := strconv.ParseFloat(rate, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%q: use TIME:RATE,... with a duration and updates per second, e.g. 30s:400,90s:40", part)
		}
		out = append(out, ChurnStep{At: d, Churn: r})
	}
	*c = out
	return nil
}

// check says what is wrong with the schedule: each time after the start,
// after the one before and, with a -duration, before it; each rate as
// -churn's.
func (c ChurnSchedule) check(duration time.Duration) []error {
	var errs []error
	var prev time.Duration
	for i, s := range c {
		switch {
		case s.At <= 0:
			errs = append(errs, fmt.Errorf("-churn-schedule %v: time %v is not after the start (the rate at the start is -churn's)", c, s.At))
		case i > 0 && s.At <= prev:
			errs = append(errs, fmt.Errorf("-churn-schedule %v: time %v is not after %v: the times must increase", c, s.At, prev))
		case duration > 0 && s.At >= duration:
			errs = append(errs, fmt.Errorf("-churn-schedule %v: time %v is not before -duration %v: that change would never happen", c, s.At, duration))
		}
		if err := CheckRate(fmt.Sprintf("-churn-schedule's rate at %v", s.At), s.Churn, false, MaxChurn, "updates per second"); err != nil {
			errs = append(errs, err)
		}
		prev = s.At
	}
	return errs
}

// WorkersText says the worker count of f in words: "4 workers", or with
// -adaptive-workers "4 workers to start, adaptive from 1 to 32".
func (f Flags) WorkersText() string {
	if !f.Adaptive.On() {
		return Workers(f.Workers)
	}
	return fmt.Sprintf("%s to start, adaptive from %d to %d", Workers(f.Workers), f.Adaptive.Min, f.Adaptive.Max)
}

// Workers says n workers in words: "1 worker", "4 workers".
func Workers(n int) string {
	if n == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", n)
}

// CheckShard makes one small list with the shard's selector and says
// whether the API server filters by it; when it does not (its
// ShardedListAndWatch gate off, or older than Kubernetes 1.36: it sends
// every object), it refuses with -shard-filter server and logs that the
// replica filters on the client with -shard-filter client. Nothing for one
// shard.
func (f Flags) CheckShard(ctx context.Context, c *Cluster) error {
	if f.Shard == nil {
		return nil
	}
	ok, err := f.Shard.ServerFilters(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.Client.CoreV1().ConfigMaps(f.Namespace).List(ctx, o)
	})
	switch {
	case err != nil:
		return fmt.Errorf("-shard %d of -shards %d: %w", f.ShardIndex, f.Shards, err)
	case ok:
		log.Printf("shard %d of %d by %s: the %s filters (%s)", f.ShardIndex, f.Shards, f.ShardBy, c.Where, f.Shard)
	case f.ShardFilter == "client":
		log.Printf("shard %d of %d by %s: the %s ignores the shard selector: filtering on the client (every replica still lists and watches every object)", f.ShardIndex, f.Shards, f.ShardBy, c.Where)
	default:
		return fmt.Errorf("-shards %d: the %s ignores the shard selector (its feature gate ShardedListAndWatch is off, or it is older than Kubernetes 1.36), so every replica would reconcile every object: turn the gate on, or run with -shard-filter client to filter on the client", f.Shards, c.Where)
	}
	return nil
}
