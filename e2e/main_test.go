package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// stack is the real stack shared by every test of the package.
var stack *Stack

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "e2e: -short: skipping the end-to-end tests (they start Jaeger, a collector and Prometheus)")
		return 0
	}
	defer removeAppBinary()

	// Cold builds of Jaeger and the collector take minutes; on a fresh
	// machine run go test with -timeout 45m (the Makefile does). Starting
	// gets the test timeout minus what the tests need, so that a build cut
	// short ends with a clear message rather than a goroutine dump.
	ctx, cancel := context.WithTimeout(context.Background(), StartBudget(testsBudget))
	defer cancel()
	s, err := Start(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot start the stack: %v\n", err)
		return 1
	}
	stack = s

	failed := true
	defer func() {
		// Runs on a normal return; a panic inside a test kills the process
		// instead, and Pdeathsig then kills the servers.
		if failed {
			s.DumpLogs(os.Stderr, 40)
			s.StopKeep()
		} else {
			s.Stop()
		}
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: goroutine leak: %v\n", err)
				code = 1
			}
		}
	}()

	code = m.Run()
	failed = code != 0
	return code
}

// testsBudget is what the tests themselves need once the stack runs: the
// whole package took 192 s before TestBottleneck (47 s) on 2026-12-02,
// with room for a busier machine.
const testsBudget = 6 * time.Minute
