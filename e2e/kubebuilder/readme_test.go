package kubebuilder

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's controller-runtime quick start, read as steps to run: its
// ```sh blocks are commands, its ```diff blocks edits of the scaffold, in
// the order the section gives them.

// sectionTitle heads the README section the test follows.
const sectionTitle = "## Quick start: controller-runtime"

// checkoutMarker starts the README paragraph whose ```sh block points a
// module at a checkout of otelqueue ("/path/to/otelqueue").
const checkoutMarker = "**A checkout rather than a release**"

// step is one fenced block of the section.
type step struct {
	kind string // "sh" or "diff"
	text string
	line int // of its opening fence in the README, for messages
}

// versionRow is a row of the section's table of raised requirements:
// modules goes from from (as kubebuilder generated it) to to.
type versionRow struct {
	modules  []string
	from, to string
}

// quickStart is the section, parsed.
type quickStart struct {
	steps    []step
	versions []versionRow
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	semver     = regexp.MustCompile(`^v\d+\.\d+\.\d+\S*$`)
)

// parseQuickStart finds the section in readme and returns its fenced
// blocks and its version table. A section without a diff block, or with
// no table, is an error: the test would then check nothing of it.
func parseQuickStart(readme string) (quickStart, error) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimRight(l, " ") == sectionTitle {
			start = i
			break
		}
	}
	if start < 0 {
		return quickStart{}, fmt.Errorf("no line %q: the test follows that section", sectionTitle)
	}
	var qs quickStart
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			break
		}
		if strings.HasPrefix(l, "```") {
			lang := strings.TrimSpace(strings.TrimPrefix(l, "```"))
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
				end++
			}
			if end == len(lines) {
				return quickStart{}, fmt.Errorf("README.md:%d: a ``` block that never closes", i+1)
			}
			if lang == "sh" || lang == "diff" {
				qs.steps = append(qs.steps, step{kind: lang, text: strings.Join(lines[i+1:end], "\n") + "\n", line: i + 1})
			}
			i = end
			continue
		}
		if row, ok := parseVersionRow(l); ok {
			qs.versions = append(qs.versions, row)
		}
	}
	diffs := 0
	for _, s := range qs.steps {
		if s.kind == "diff" {
			diffs++
		}
	}
	if diffs == 0 {
		return quickStart{}, fmt.Errorf("the section %q has no ```diff block: its edits of the scaffold are what the test applies", sectionTitle)
	}
	if len(qs.versions) == 0 {
		return quickStart{}, fmt.Errorf("the section %q has no table of the requirements it raises (| `module` | scaffold's version | after | why |)", sectionTitle)
	}
	return qs, nil
}

// parseVersionRow reads "| `mod`, `mod` | v1.2.3 | v1.2.4 | why |".
func parseVersionRow(l string) (versionRow, bool) {
	if !strings.HasPrefix(strings.TrimSpace(l), "|") {
		return versionRow{}, false
	}
	cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
	if len(cells) < 3 {
		return versionRow{}, false
	}
	from, to := strings.Trim(strings.TrimSpace(cells[1]), "`"), strings.Trim(strings.TrimSpace(cells[2]), "`")
	if !semver.MatchString(from) || !semver.MatchString(to) {
		return versionRow{}, false
	}
	var row versionRow
	for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
		row.modules = append(row.modules, m[1])
	}
	row.from, row.to = from, to
	return row, len(row.modules) > 0
}

// checkoutCommands returns the go mod edit -replace lines of the README's
// "A checkout rather than a release", with /path/to/otelqueue replaced by
// repo: what a user runs instead of go get before a release.
func checkoutCommands(readme, repo string) ([]string, error) {
	i := strings.Index(readme, checkoutMarker)
	if i < 0 {
		return nil, fmt.Errorf("no paragraph %q: the test runs its -replace lines in place of go get of otelqueue's modules", checkoutMarker)
	}
	rest := readme[i:]
	open := strings.Index(rest, "```sh\n")
	if open < 0 {
		return nil, fmt.Errorf("the paragraph %q has no ```sh block", checkoutMarker)
	}
	block := rest[open+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var out []string
	for l := range strings.SplitSeq(block, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "go mod edit -replace ") {
			out = append(out, strings.ReplaceAll(l, "/path/to/otelqueue", repo))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the paragraph %q has no go mod edit -replace line", checkoutMarker)
	}
	return out, nil
}

// commands returns the commands of a ```sh step, one per line, blank
// lines and comments dropped. A go get of otelqueue's own modules, which
// are not on the module proxy before a release, becomes checkout (the
// -replace lines); otelqueue's modules must then be alone on their go get
// line. Only go commands are accepted: the test runs them itself, without a
// shell.
func commands(s step, checkout []string) ([][]string, error) {
	var out [][]string
	for l := range strings.SplitSeq(s.text, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if f[0] != "go" || strings.ContainsAny(l, "|&;<>$`\\\"'") {
			return nil, fmt.Errorf("README.md:%d: %q: the test runs only plain go commands of the section", s.line, l)
		}
		if len(f) > 2 && f[1] == "get" {
			ours := 0
			for _, a := range f[2:] {
				if strings.HasPrefix(a, "github.com/otelqueue/otelqueue") {
					ours++
				}
			}
			switch {
			case ours == len(f)-2:
				for _, c := range checkout {
					out = append(out, strings.Fields(c))
				}
				continue
			case ours > 0:
				return nil, fmt.Errorf("README.md:%d: %q: put otelqueue's modules on a go get line of their own (before a release the test runs the -replace lines in their place)", s.line, l)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// diffPaths returns the files a ```diff step edits (its "+++ b/..." lines).
func diffPaths(s step) []string {
	var out []string
	for l := range strings.SplitSeq(s.text, "\n") {
		if p, ok := strings.CutPrefix(l, "+++ b/"); ok {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

// TestQuickStartParses: the README's section has what TestAdoption
// follows, and every diff names a file of the scaffold, so that a broken
// section fails here, without a control plane, with a message that says
// what is missing.
func TestQuickStartParses(t *testing.T) {
	readme, path := readReadme(t)
	qs, err := parseQuickStart(readme)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range qs.steps {
		if s.kind != "diff" {
			continue
		}
		paths := diffPaths(s)
		if len(paths) == 0 {
			t.Errorf("%s:%d: a ```diff block without a \"+++ b/<file>\" line: write it as git diff prints it", path, s.line)
		}
		for _, p := range paths {
			if _, err := os.Stat(filepath.Join("testdata", "scaffold", p)); err != nil {
				t.Errorf("%s:%d: the diff edits %s, which the kubebuilder scaffold (testdata/scaffold) does not have", path, s.line, p)
			}
		}
	}
	checkout, err := checkoutCommands(readme, "/checkout")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range qs.steps {
		if s.kind == "sh" {
			if _, err := commands(s, checkout); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestCommands: go get of otelqueue's modules becomes the -replace lines;
// other go commands run as written; anything else is refused.
func TestCommands(t *testing.T) {
	checkout := []string{"go mod edit -replace a=/x", "go mod edit -replace b=/y"}
	got, err := commands(step{kind: "sh", text: "# a comment\ngo get github.com/otelqueue/otelqueue/controllerruntime\n\ngo get example.com/m@v1.0.0 # pinned\n"}, checkout)
	if err != nil {
		t.Fatal(err)
	}
	want := "go mod edit -replace a=/x | go mod edit -replace b=/y | go get example.com/m@v1.0.0"
	var s []string
	for _, c := range got {
		s = append(s, strings.Join(c, " "))
	}
	if strings.Join(s, " | ") != want {
		t.Errorf("commands = %q, want %q", strings.Join(s, " | "), want)
	}
	for _, bad := range []string{"make test", "go get github.com/otelqueue/otelqueue/controllerruntime example.com/m", "go mod tidy && rm -rf /"} {
		if _, err := commands(step{kind: "sh", text: bad + "\n", line: 7}, checkout); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// readReadme returns the README the test follows: the checkout's, or
// $OTELQUEUE_E2E_README's.
func readReadme(t *testing.T) (text, path string) {
	t.Helper()
	path = os.Getenv("OTELQUEUE_E2E_README")
	if path == "" {
		path = filepath.Join("..", "..", "README.md")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the README whose steps the test follows: %v", err)
	}
	return string(b), path
}
