package bottleneck_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/sizing"
	"github.com/otelqueue/otelqueue/internal/testutil"
)

var update = flag.Bool("update", false, "write the table of docs/tuning.md")

// tuningPath is the page whose table of the classes is generated from the
// table of this package.
var tuningPath = filepath.Join("..", "docs", "tuning.md")

var classesMarker = regexp.MustCompile(`(?s)(<!-- generated from bottleneck\.Rules: classes -->\n).*?(<!-- end of generated table -->)`)

// TestTuningTable fails when docs/tuning.md's table of the classes is not
// its rendering from Rules: a threshold or a text moved in the table moves
// the page with it (go test ./bottleneck -run TestTuningTable -update).
func TestTuningTable(t *testing.T) {
	doc, err := os.ReadFile(tuningPath)
	if err != nil {
		t.Fatal(err)
	}
	if !classesMarker.Match(doc) {
		t.Fatalf("%s has no <!-- generated from bottleneck.Rules: classes --> ... <!-- end of generated table --> markers", tuningPath)
	}
	want := classesMarker.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := classesMarker.FindSubmatch(m)
		return []byte(string(sub[1]) + "\n" + classesTable() + "\n" + string(sub[2]))
	})
	testutil.Generated(t, tuningPath, want, *update, "go test ./bottleneck -run TestTuningTable -update")
}

// classesTable renders Rules as the page's table, in their order of
// precedence, and none last.
func classesTable() string {
	var b strings.Builder
	b.WriteString("| class | holds when (signal, threshold) | what to change |\n|---|---|---|\n")
	for _, r := range bottleneck.Rules() {
		fmt.Fprintf(&b, "| `%s` | %s (`%s %s %s`) | %s |\n", r.Class, r.Holds, r.Signal, r.Comparison(),
			strconv.FormatFloat(r.Threshold, 'f', -1, 64), strings.ReplaceAll(r.Change, "|", `\|`))
	}
	fmt.Fprintf(&b, "| `%s` | no rule above holds | nothing: the workers keep up; the recommendation is Little's law's count |\n", bottleneck.None)
	return b.String()
}

// scalingPath is the page whose table of the fleet's classes is generated
// from internal/sizing.Fleet.
var scalingPath = filepath.Join("..", "docs", "scaling.md")

var fleetMarker = regexp.MustCompile(`(?s)(<!-- generated from internal/sizing\.Fleet: fleet classes -->\n).*?(<!-- end of generated table -->)`)

// TestFleetTable fails when docs/scaling.md's table of the fleet's classes
// is not its rendering from sizing.Fleet (go test ./bottleneck -run
// TestFleetTable -update).
func TestFleetTable(t *testing.T) {
	doc, err := os.ReadFile(scalingPath)
	if err != nil {
		t.Fatal(err)
	}
	if !fleetMarker.Match(doc) {
		t.Fatalf("%s has no <!-- generated from internal/sizing.Fleet: fleet classes --> ... <!-- end of generated table --> markers", scalingPath)
	}
	var b strings.Builder
	b.WriteString("| class (`fleet=`) | alert | holds when (figure, threshold) | what to change |\n|---|---|---|---|\n")
	for _, r := range sizing.Fleet {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s (`%s %s %s`) | %s |\n", r.Class, r.Alert, r.Holds, r.Figure, r.Comparison,
			strconv.FormatFloat(r.Threshold, 'f', -1, 64), r.Change)
	}
	want := fleetMarker.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := fleetMarker.FindSubmatch(m)
		return []byte(string(sub[1]) + "\n" + b.String() + "\n" + string(sub[2]))
	})
	testutil.Generated(t, scalingPath, want, *update, "go test ./bottleneck -run TestFleetTable -update")
}
