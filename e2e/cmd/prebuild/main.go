// Command prebuild builds every binary that make test runs, into the e2e
// module's binary cache (e2e/.bin, or $OTELQUEUE_E2E_BIN_DIR), in the order
// make test needs them: promtool (make rules), etcd and kube-apiserver
// (make test-apiserver), Prometheus, the collector and Jaeger (make e2e).
// It builds what is not cached and prints each binary's path.
//
// make test starts it in the background at the lowest CPU priority (nice
// 19), so that the builds take the cores the tests leave idle: the tests on
// a real control plane and the end-to-end tests mostly wait. A stage that
// needs a binary still being built waits for it on the cache's lock, and
// builds it itself if prebuild failed; prebuild's output goes to
// e2e/.results/prebuild.log.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/otelqueue/otelqueue/e2e"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: prebuild (no arguments; OTELQUEUE_E2E_BIN_DIR is read from the environment)")
		os.Exit(2)
	}
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "prebuild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	moduleDir, err := e2e.ModuleDir()
	if err != nil {
		return err
	}
	binDir := e2e.BinDir(moduleDir)
	prometheus, promtool, err := e2e.PrometheusTools(moduleDir)
	if err != nil {
		return err
	}
	apiserver, etcd, err := e2e.ControlPlaneTools(moduleDir)
	if err != nil {
		return err
	}
	jaeger, collector := e2e.Tools(moduleDir)
	// One at a time: each build uses every core it is given, and Jaeger's
	// alone peaks at about 2.3 GB.
	// kube-apiserver, the longest build, comes before Prometheus: make
	// test-apiserver, which waits for it, starts long before make e2e.
	tools := []e2e.Tool{promtool, etcd, apiserver, prometheus, collector, jaeger}
	if os.Getenv("KUBEBUILDER_ASSETS") != "" { // the control plane's binaries are given
		tools = []e2e.Tool{promtool, prometheus, collector, jaeger}
	}
	for _, t := range tools {
		path, err := t.Build(ctx, binDir, os.Stderr)
		if err != nil {
			return err
		}
		fmt.Println(path)
	}
	return nil
}
