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

var update = flag.Bool("update", false, "write the generated tables of docs/tuning.md and docs/scaling.md")

// tuningPath is the page whose table of the classes is generated from the
// table of this package.
var tuningPath = filepath.Join("..", "docs", "tuning.md")

// TestTuningTable fails when docs/tuning.md's table of the classes is not
// its rendering from Rules: a threshold or a text moved in the table moves
// the page with it (go test ./bottleneck -run TestTuningTable -update).
func TestTuningTable(t *testing.T) {
	checkGeneratedTable(t, tuningPath, "bottleneck.Rules: classes", classesTable(), "TestTuningTable")
}

// checkGeneratedTable fails when the table between the markers
// "<!-- generated from SOURCE -->" and "<!-- end of generated table -->"
// of the page at path is not table; with -update it writes it (go test
// ./bottleneck -run TEST -update).
func checkGeneratedTable(t *testing.T, path, source, table, test string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`(?s)(<!-- generated from ` + regexp.QuoteMeta(source) + ` -->\n).*?(<!-- end of generated table -->)`)
	if !marker.Match(doc) {
		t.Fatalf("%s has no <!-- generated from %s --> ... <!-- end of generated table --> markers", path, source)
	}
	want := marker.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := marker.FindSubmatch(m)
		return []byte(string(sub[1]) + "\n" + table + "\n" + string(sub[2]))
	})
	testutil.Generated(t, path, want, *update, "go test ./bottleneck -run "+test+" -update")
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

// TestFleetTable fails when docs/scaling.md's table of the fleet's classes
// is not its rendering from sizing.Fleet (go test ./bottleneck -run
// TestFleetTable -update).
func TestFleetTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| class (`fleet=`) | alert | holds when (figure, threshold) | what to change |\n|---|---|---|---|\n")
	for _, r := range sizing.Fleet {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s (`%s %s %s`) | %s |\n", r.Class, r.Alert, r.Holds, r.Figure, r.Comparison,
			strconv.FormatFloat(r.Threshold, 'f', -1, 64), r.Change)
	}
	checkGeneratedTable(t, scalingPath, "internal/sizing.Fleet: fleet classes", b.String(), "TestFleetTable")
}
