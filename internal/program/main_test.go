package program

import (
	"testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
