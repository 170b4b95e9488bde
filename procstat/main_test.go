package procstat_test

import (
	"testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestMain(m *testing.M) {
	// Tests in this package do not run in parallel: they take the errors
	// that reached otel.Handle (testutil.TakeOTelErrors), or check there
	// were none (testutil.NoOTelErrors).
	testutil.RecordOTelErrors()
	testutil.Main(m)
}
