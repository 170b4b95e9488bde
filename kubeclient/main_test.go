package kubeclient_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.RecordOTelErrors()
	// Before any test instruments a client (TestClientTimeIsPerQueue).
	q, stop, err := cycleQueue()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	allocsBeforeInstrument = cycleAllocs(q)
	stop()
	testutil.Main(m)
}
