// Command controlplane prints the path of a directory holding kube-apiserver
// and etcd, for envtest: $KUBEBUILDER_ASSETS when it is set (after checking
// that both binaries are there), otherwise binaries built from the Go module
// proxy (e2e/tools/kube-apiserver and e2e/tools/etcd; minutes when cold) and
// cached in e2e/.bin or $OTELQUEUE_E2E_BIN_DIR. Progress goes to stderr, the
// path alone to stdout, so that
//
//	export KUBEBUILDER_ASSETS=$(cd e2e && go run ./cmd/controlplane)
//
// makes every envtest suite of the repository use them. Run it from e2e/
// (make controlplane does).
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
		fmt.Fprintln(os.Stderr, "usage: controlplane (no arguments; KUBEBUILDER_ASSETS and OTELQUEUE_E2E_BIN_DIR are read from the environment)")
		os.Exit(2)
	}
	moduleDir, err := e2e.ModuleDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
	dir, err := e2e.ControlPlaneAssets(ctx, e2e.BinDir(moduleDir), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
