// Command vpa checks otelqueue's sizing against the Vertical Pod
// Autoscaler's: it runs the demo (example/app) with a workload, samples
// the demo's process as metrics-server would (its CPU rate over each
// window from utime+stime in /proc/PID/stat, its resident set from VmRSS in
// /proc/PID/status, every -resolution), feeds the readings the VPA
// recommender would have fetched (one every -fetch) to the recommender's own
// code (k8s.io/autoscaler/vertical-pod-autoscaler v1.8.1, its model and its
// pod resource recommender with their default configuration), and at the
// end reads otelqueue's recommendation from the demo's inspector
// (/debug/queues?format=json), and prints both side by side.
//
//	go -C e2e/tools/vpa build -o /tmp/vpa . && go -C example build -o /tmp/app ./app
//	/tmp/vpa -app /tmp/app -for 30m -out /tmp/vpa-steady -- -churn 20 -burst-every 0
//	/tmp/vpa -replay /tmp/vpa-steady          # the comparison again, from the files of a run
//
// Only the process it starts is measured, not its children (the demo's
// embedded API server, when it runs in a child process, stands for the
// cluster's). -cpu-quota runs the demo under a real CPU limit: a cgroup v1
// of the cpu controller (root only), from which the demo's children are
// moved out.
//
// A run writes into -out: samples.csv (every sample, to replay), fetches.csv
// (both recommendations at every fetch of the recommender), inspector.json
// (the inspector's last page), app.log (the demo's output) and report.txt.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// metricsServerResolution is how often metrics-server reads the kubelet,
// and so the window of the CPU rate it serves: --metric-resolution, 15s in
// metrics-server's own deployment manifest (components.yaml; the flag's
// default is 60s, and the kubelet's stats are not finer than ~15 s).
const metricsServerResolution = 15 * time.Second

type options struct {
	app        string
	duration   time.Duration
	out        string
	resolution time.Duration
	fetch      time.Duration
	quota      float64
	cgroupRoot string
	replay     string
	name       string
	args       []string
}

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("vpa: ")
	var o options
	fs := flag.NewFlagSet("vpa", flag.ContinueOnError)
	fs.StringVar(&o.app, "app", "/tmp/app", "the demo's binary (go -C example build -o /tmp/app ./app)")
	fs.DurationVar(&o.duration, "for", 30*time.Minute, "how long to run the demo")
	fs.StringVar(&o.out, "out", "", "the directory to write the run's files into (made if missing)")
	fs.DurationVar(&o.resolution, "resolution", metricsServerResolution, "the window of each sample (metrics-server's --metric-resolution)")
	fs.DurationVar(&o.fetch, "fetch", vpaFetchInterval, "how often the recommender reads a sample (its --recommender-interval)")
	fs.Float64Var(&o.quota, "cpu-quota", 0, "run the demo in a cgroup v1 with this many cores of CFS quota (root; 0: no quota)")
	fs.StringVar(&o.cgroupRoot, "cgroup-root", "/sys/fs/cgroup/cpu", "the cgroup v1 cpu controller's mount, for -cpu-quota")
	fs.StringVar(&o.replay, "replay", "", "compare again from the samples.csv and inspector.json of a run's -out directory, without running the demo")
	fs.StringVar(&o.name, "name", "", "the workload's name in the report (default: -out's base name)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: vpa [flags] -out DIR -- [the demo's flags]\n       vpa -replay DIR\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	o.args = fs.Args()
	var err error
	if o.replay != "" {
		err = replay(os.Stdout, o)
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, o)
		stop()
	}
	if err != nil {
		log.Fatal(err)
	}
}

// replay compares again from a run's files.
func replay(w io.Writer, o options) error {
	f, err := os.Open(filepath.Join(o.replay, "samples.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	meta, samples, err := readCSV(f)
	if err != nil {
		return fmt.Errorf("%s: %v", f.Name(), err)
	}
	var rec *bottleneck.Recommendation
	if b, err := os.ReadFile(filepath.Join(o.replay, "inspector.json")); err == nil {
		r, err := decodeInspector(b)
		if err != nil {
			return err
		}
		rec = &r
	} else if !os.IsNotExist(err) {
		return err
	}
	name := o.name
	if name == "" {
		name = filepath.Base(filepath.Clean(o.replay))
	}
	vpa := simulate(samples, meta.Start, o.fetch, meta.Resolution)
	return writeReport(w, name, meta, samples, o.fetch, vpa, rec)
}

// checkDemoArgs refuses the flags the tool sets itself.
func checkDemoArgs(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "duration" || name == "metrics-addr") {
			return fmt.Errorf("the demo's %s is set by the tool (-for, and a free port for its inspector)", a)
		}
	}
	return nil
}

func run(ctx context.Context, o options) (err error) {
	if o.out == "" {
		return errors.New("-out is needed: the directory for the run's files")
	}
	if o.resolution <= 0 || o.fetch < o.resolution {
		return fmt.Errorf("-resolution %v, -fetch %v: want 0 < resolution <= fetch", o.resolution, o.fetch)
	}
	if err := checkDemoArgs(o.args); err != nil {
		return err
	}
	if _, err := os.Stat(o.app); err != nil {
		return fmt.Errorf("the demo's binary: %v (go -C example build -o %s ./app)", err, o.app)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	name := o.name
	if name == "" {
		name = filepath.Base(filepath.Clean(o.out))
	}
	var cg *cpuCgroup
	if o.quota > 0 {
		if cg, err = makeCPUCgroup(o.cgroupRoot, "/proc/self/cgroup", o.quota); err != nil {
			return err
		}
		log.Printf("made %s", cg)
		defer func() {
			if rerr := cg.remove(); rerr != nil {
				err = errors.Join(err, rerr)
			} else {
				log.Printf("removed %s", cg.dir)
			}
		}()
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	args := append(slices.Clone(o.args), "-duration", (o.duration + 2*time.Minute).String(), "-metrics-addr", addr)
	command := o.app + " " + strings.Join(args, " ")
	logFile, err := os.Create(filepath.Join(o.out, "app.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	var cmd *exec.Cmd
	if cg != nil {
		// sh writes its own pid into the cgroup, then becomes the demo: the
		// demo runs under the quota from its first instruction, with the pid
		// that was started.
		cmd = exec.Command("sh", append([]string{"-c", `echo $$ > "$OTELQUEUE_VPA_CGROUP_PROCS" && exec "$0" "$@"`, o.app}, args...)...)
		cmd.Env = append(os.Environ(), "OTELQUEUE_VPA_CGROUP_PROCS="+cg.procs())
	} else {
		cmd = exec.Command(o.app, args...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	// exited is closed when the demo has exited, with exitErr.
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	log.Printf("started the demo, pid %d: %s", pid, command)

	// The process is read the moment it started: its first window is its
	// start.
	first, err := readProc("/proc", pid)
	if err != nil {
		return fmt.Errorf("reading the demo's process: %v", err)
	}
	start := first.at
	meta := Meta{Start: start, Resolution: o.resolution, Command: command}
	if cg != nil {
		meta.Cgroup = cg.String()
	}
	stopMoving := func() {}
	if cg != nil {
		stopMoving = moveChildrenOut(cg, pid)
	}
	defer stopMoving()

	csvFile, err := os.Create(filepath.Join(o.out, "samples.csv"))
	if err != nil {
		return err
	}
	defer csvFile.Close()
	cw, err := newCSVWriter(csvFile, meta)
	if err != nil {
		return err
	}
	fetchFile, err := os.Create(filepath.Join(o.out, "fetches.csv"))
	if err != nil {
		return err
	}
	defer fetchFile.Close()
	fw := newFetchWriter(fetchFile)

	var samples []Sample
	prev := first
	nextFetch := start.Add(o.fetch)
	var lastRec *bottleneck.Recommendation
	var lastPage []byte
	tick := time.NewTicker(o.resolution)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped after %v: %v", time.Since(start).Round(time.Second), ctx.Err())
		case <-exited:
			return fmt.Errorf("the demo exited %v after its start: %v (its output: %s)", time.Since(start).Round(time.Second), exitErr, logFile.Name())
		case <-tick.C:
		}
		cur, err := readProc("/proc", pid)
		if err != nil {
			return fmt.Errorf("reading the demo's process: %v", err)
		}
		s := sampleOf(prev, cur)
		prev = cur
		samples = append(samples, s)
		if err := cw.write(s); err != nil {
			return err
		}
		done := cur.at.Sub(start) >= o.duration-o.resolution/2
		if !cur.at.Before(nextFetch.Add(-o.resolution/2)) || done {
			for !nextFetch.After(cur.at.Add(o.resolution / 2)) {
				nextFetch = nextFetch.Add(o.fetch)
			}
			vpa := simulate(samples, start, o.fetch, o.resolution)
			page, rec, err := fetchInspector(ctx, addr)
			if err != nil {
				log.Printf("the inspector: %v", err)
			} else {
				lastRec, lastPage = &rec, page
			}
			if err := fw.write(cur.at.Sub(start), s, vpa, lastRec); err != nil {
				return err
			}
			log.Printf("%v: cpu %.3f rss %s | VPA target cpu %.3f memory %s | otelqueue %s",
				cur.at.Sub(start).Round(time.Second), s.CPU, mib(int64(s.RSS)), vpa.TargetCPU, mib(vpa.TargetMemory), shortRec(lastRec))
		}
		if done {
			break
		}
	}
	if lastPage != nil {
		if err := os.WriteFile(filepath.Join(o.out, "inspector.json"), lastPage, 0o644); err != nil {
			return err
		}
	}
	// Stop the demo as Ctrl-C would: it drains and flushes.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		log.Printf("the demo did not stop within a minute of SIGTERM: killed")
	}
	stopMoving()
	vpa := simulate(samples, start, o.fetch, o.resolution)
	var report strings.Builder
	if err := writeReport(&report, name, meta, samples, o.fetch, vpa, lastRec); err != nil {
		return err
	}
	fmt.Print(report.String())
	if err := os.WriteFile(filepath.Join(o.out, "report.txt"), []byte(report.String()), 0o644); err != nil {
		return err
	}
	if lastRec == nil {
		return errors.New("no recommendation read from the demo's inspector: the table has VPA's side only")
	}
	return nil
}

// moveChildrenOut moves the processes under pid out of cg as they appear,
// every 100 ms, until the returned function is called.
func moveChildrenOut(cg *cpuCgroup, pid int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		moved := map[int]bool{}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			for _, c := range descendants("/proc", pid) {
				if moved[c] {
					continue
				}
				moved[c] = true
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
				if err := cg.moveOut(c); err != nil {
					log.Printf("moving the demo's child %d (%s) out of the quota: %v", c, strings.TrimSpace(string(comm)), err)
					continue
				}
				log.Printf("moved the demo's child %d (%s) out of the quota's cgroup", c, strings.TrimSpace(string(comm)))
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done); wg.Wait() })
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// fetchWriter writes fetches.csv: both recommendations at every fetch of
// the recommender.
type fetchWriter struct {
	w      io.Writer
	header bool
}

func newFetchWriter(w io.Writer) *fetchWriter { return &fetchWriter{w: w} }

func (f *fetchWriter) write(elapsed time.Duration, s Sample, v VPAResult, r *bottleneck.Recommendation) error {
	if !f.header {
		f.header = true
		if _, err := fmt.Fprintln(f.w, "elapsed_s,cpu_cores,rss_bytes,vpa_target_cpu,vpa_lower_cpu,vpa_upper_cpu,vpa_target_memory,vpa_lower_memory,vpa_upper_memory,otelqueue_cpu_request,otelqueue_cpu_needed,otelqueue_cpu_lower_bound,otelqueue_memory_request,otelqueue_memory_needed"); err != nil {
			return err
		}
	}
	oq := ",,,,"
	if r != nil {
		oq = fmt.Sprintf("%.2f,%.4f,%t,%d,%d", r.CPU.Request, r.CPU.Needed, r.CPU.LowerBound, r.Memory.Request, r.Memory.Needed)
	}
	_, err := fmt.Fprintf(f.w, "%.0f,%.4f,%d,%.3f,%.3f,%.3f,%d,%d,%d,%s\n", elapsed.Seconds(), s.CPU, s.RSS,
		v.TargetCPU, v.LowerCPU, v.UpperCPU, v.TargetMemory, v.LowerMemory, v.UpperMemory, oq)
	return err
}

func shortRec(r *bottleneck.Recommendation) string {
	if r == nil {
		return "none yet"
	}
	return fmt.Sprintf("cpu %.2f (needed %.3f%s) memory %s", r.CPU.Request, r.CPU.Needed, map[bool]string{true: ", a lower bound"}[r.CPU.LowerBound], mib(int64(r.Memory.Request)))
}

func mib(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + "Mi"
}
