package examplecluster

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary is the embedded API server's process of
	// TestConnectChild (ServeChild's child branch, without its setting
	// the package's Connect to start children for every other test).
	if opts, ok := os.LookupEnv(serverEnv); ok {
		if err := serveChild(opts, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
