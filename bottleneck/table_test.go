package bottleneck_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// TestHoldsSaysItsThreshold: each rule's Holds text states the rule's own
// threshold (a share as a percentage, the API server's latency in ms), so
// that a threshold moved in the table moves the words people read (the
// inspector's verdicts, the docs) with it.
func TestHoldsSaysItsThreshold(t *testing.T) {
	for _, r := range bottleneck.Rules() {
		var want string
		switch r.Signal {
		case "workers_needed":
			continue // more workers than configured: the threshold is 1, no figure to state
		case "apiserver_latency":
			want = strconv.FormatFloat(1000*r.Threshold, 'f', -1, 64) + " ms"
		default:
			want = strconv.FormatFloat(100*r.Threshold, 'f', -1, 64) + "%"
		}
		if !strings.Contains(r.Holds, want) {
			t.Errorf("rule %s (%s %s %v): Holds %q does not say %s", r.Class, r.Signal, r.Comparison(), r.Threshold, r.Holds, want)
		}
	}
}
