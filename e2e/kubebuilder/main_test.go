package kubebuilder

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "kubebuilder: -short: skipping the adoption test (it builds a kubebuilder operator twice and starts kube-apiserver and etcd)")
		return 0
	}
	// envtest logs through controller-runtime's logger, which complains
	// with a stack trace when it was never set.
	logf.SetLogger(logr.Discard())
	code := m.Run()
	if code == 0 {
		// The control plane and the managers are stopped by the test's
		// cleanups, before this.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "kubebuilder: goroutine leak: %v\n", err)
			code = 1
		}
	}
	return code
}
