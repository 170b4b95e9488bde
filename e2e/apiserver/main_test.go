package apiserver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/otelqueue/otelqueue/e2e"
)

// Shared by the tests of the package: the control plane every test uses,
// the examples' binaries, and the directory holding their files.
var (
	shared   *plane
	examples []example
	tmpDir   string
	report   = &table{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "apiserver: -short: skipping the control-plane tests (they start kube-apiserver and etcd)")
		return 0
	}
	// envtest logs through controller-runtime's logger, which complains
	// with a stack trace when it was never set.
	logf.SetLogger(logr.Discard())

	// A cold build of kube-apiserver takes minutes: building gets the test
	// timeout minus what the tests need.
	ctx, cancel := context.WithTimeout(context.Background(), e2e.StartBudget(testsBudget))
	defer cancel()
	var err error
	if tmpDir, err = os.MkdirTemp("", "otelqueue-apiserver-"); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		return 1
	}
	defer func() {
		if code != 0 || os.Getenv("OTELQUEUE_E2E_KEEP") == "1" {
			fmt.Fprintf(os.Stderr, "apiserver: kept %s (kubeconfigs, control-plane and example logs)\n", tmpDir)
			return
		}
		os.RemoveAll(tmpDir)
	}()

	moduleDir, err := e2e.ModuleDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		return 1
	}
	assets, err := e2e.ControlPlaneAssets(ctx, e2e.BinDir(moduleDir), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiserver: cannot get the control plane's binaries:", err)
		return 1
	}
	if examples, err = buildExamples(ctx, filepath.Dir(moduleDir)); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		return 1
	}
	start := time.Now()
	if shared, err = startPlane("shared", assets, nil); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "apiserver: control plane %s up at %s in %s\n", shared.version, shared.admin.Host, time.Since(start).Round(time.Millisecond))
	planeAssets = assets

	code = m.Run()
	if err := stopPlanes(); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver: stopping the control planes:", err)
		code = 1
	}
	report.print(os.Stderr)
	if path := os.Getenv("OTELQUEUE_E2E_REPORT"); path != "" {
		if err := report.write(path); err != nil {
			fmt.Fprintln(os.Stderr, "apiserver:", err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "apiserver: goroutine leak: %v\n", err)
			code = 1
		}
	}
	return code
}

// planeAssets is the directory of kube-apiserver and etcd, for the tests
// that start a control plane of their own.
var planeAssets string

// testsBudget is what the tests need once the control plane runs: 8
// minutes, 7 more for the adaptive pool's runs (adaptive_test.go: a 90 s
// run on the embedded cluster, four 60 s runs on the API servers and a
// second control plane), 4 more for TestControlPlaneFaults (a control
// plane of its own and four examples through four faults, 3.2 minutes in
// runs here), and 2 more for TestReplicas (two pairs of replicas, 1.1 to
// 1.8 minutes here).
const testsBudget = 21 * time.Minute

// example is one of the two example controllers, built from this checkout.
type example struct {
	name string // as the table shows it
	bin  string
}

// buildExamples builds example/app and example/controllerruntime (the
// examples' module) into tmpDir.
func buildExamples(ctx context.Context, repo string) ([]example, error) {
	var out []example
	for _, b := range []struct{ name, dir, pkg string }{
		{"app", filepath.Join(repo, "example"), "./app"},
		{"controller-runtime", filepath.Join(repo, "example"), "./controllerruntime"},
	} {
		bin := filepath.Join(tmpDir, "example-"+b.name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, b.pkg)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s in %s: %v\n%s", b.pkg, b.dir, err, out)
		}
		out = append(out, example{name: b.name, bin: bin})
	}
	return out, nil
}
