package controllerruntime_test

// The tests named TestAPIServer* run on a real kube-apiserver and etcd,
// started by controller-runtime's envtest from the binaries in
// $KUBEBUILDER_ASSETS: one control plane per test process, started by the
// first test that needs it and stopped by TestMain after the tests. Without
// KUBEBUILDER_ASSETS they skip, unless OTELQUEUE_REQUIRE_APISERVER=1, which
// makes them fail instead (for a CI job that must not skip them silently).
//
//	go test -run '^TestAPIServer' ./...   (with KUBEBUILDER_ASSETS set)

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// envAssets names the directory holding kube-apiserver and etcd; envtest
	// reads it by itself.
	envAssets = "KUBEBUILDER_ASSETS"
	// envRequireAPIServer, set to 1, turns the skip of a TestAPIServer test
	// without KUBEBUILDER_ASSETS into a failure.
	envRequireAPIServer = "OTELQUEUE_REQUIRE_APISERVER"
	// envStartTimeout is envtest's own variable for its start timeout.
	envStartTimeout = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"
)

// noAPIServer says why a TestAPIServer test cannot run and how to get the
// binaries it needs.
const noAPIServer = envAssets + " is unset: no kube-apiserver and etcd for this test. " +
	"Run make test-apiserver, or export " + envAssets + "=$(cd e2e && go run ./cmd/controlplane) " +
	"(from the repository's root) and run the tests again"

// startTimeout bounds the start of each control plane binary unless
// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT says otherwise. envtest's default
// (20 s) is short for a kube-apiserver starting next to a -race test binary
// on two busy cores.
const startTimeout = 2 * time.Minute

// apiServer is the control plane of the test process: started once, by
// the first test that calls apiServerConfig, and stopped by stopAPIServer.
var apiServer struct {
	once sync.Once
	env  *envtest.Environment // nil until a test needed it
	cfg  *rest.Config
	err  error         // why it did not start
	took time.Duration // how long the start took
}

// apiServerConfig returns the rest.Config of the test process's API server
// (an admin user's), starting it on first use. Without KUBEBUILDER_ASSETS the
// test skips, or fails when OTELQUEUE_REQUIRE_APISERVER=1; when the control
// plane does not start, the test fails with envtest's error (and so does
// every later test that needs it): a start failure never skips.
func apiServerConfig(t testing.TB) *rest.Config {
	t.Helper()
	if os.Getenv(envAssets) == "" {
		if os.Getenv(envRequireAPIServer) == "1" {
			t.Fatal(noAPIServer + " (" + envRequireAPIServer + "=1: this test may not skip)")
		}
		t.Skip(noAPIServer)
	}
	started := false
	apiServer.once.Do(func() {
		started = true
		startAPIServer()
	})
	if apiServer.err != nil {
		t.Fatalf("envtest: starting kube-apiserver and etcd from %s=%s: %v", envAssets, os.Getenv(envAssets), apiServer.err)
	}
	if started {
		t.Logf("envtest started kube-apiserver and etcd in %v (at %s)", apiServer.took.Round(time.Millisecond), apiServer.cfg.Host)
	}
	return rest.CopyConfig(apiServer.cfg)
}

// startAPIServer starts etcd and kube-apiserver with envtest, which finds
// them in $KUBEBUILDER_ASSETS and serves them on loopback ports.
func startAPIServer() {
	env := &envtest.Environment{}
	if os.Getenv(envStartTimeout) == "" {
		env.ControlPlaneStartTimeout = startTimeout
	}
	apiServer.env = env
	start := time.Now()
	apiServer.cfg, apiServer.err = env.Start()
	apiServer.took = time.Since(start)
}

// stopAPIServer stops the control plane if a test started it (even if only
// partly: envtest stops what did start). TestMain calls it after the tests
// and before goleak looks for goroutines left behind.
func stopAPIServer() error {
	if apiServer.env == nil {
		return nil
	}
	if err := apiServer.env.Stop(); err != nil {
		return fmt.Errorf("envtest: stopping kube-apiserver and etcd: %w", err)
	}
	if etcd := apiServer.env.ControlPlane.Etcd; apiServer.err != nil && etcd != nil && etcd.DataDir != "" {
		// After a failed start, envtest's retries reuse the data directory
		// it made for etcd as if it had been given one, and so never remove
		// it.
		if err := os.RemoveAll(etcd.DataDir); err != nil {
			return fmt.Errorf("envtest: removing etcd's data directory: %w", err)
		}
	}
	return nil
}

// runThenStop is a goleak.TestingM that runs the tests, then stops the API
// server, so that the goroutines of its clients have ended when goleak
// looks. A failure to stop fails the run.
type runThenStop struct {
	m    *testing.M
	stop func() error
}

// Run implements goleak.TestingM.
func (r runThenStop) Run() int {
	code := r.m.Run()
	if err := r.stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
