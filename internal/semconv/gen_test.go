package semconv

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv/registry"
	"github.com/otelqueue/otelqueue/internal/testutil"
)

var update = flag.Bool("update", false, "write names.go and the tables of docs/semantic-conventions.md")

// docPath is the page whose tables are generated from the registry.
var docPath = filepath.Join("..", "..", "docs", "semantic-conventions.md")

// TestGenerated fails when names.go or a table of the doc is not its
// rendering from semconv/registry.yaml: a name changed in the registry
// fails here until they are regenerated (-update).
func TestGenerated(t *testing.T) {
	r, err := registry.Load(registry.Path)
	if err != nil {
		t.Fatal(err)
	}
	src, err := format.Source(goSource(r))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	newDoc, err := replaceTables(doc, docTables(r))
	if err != nil {
		t.Fatal(err)
	}
	const regenerate = "go test ./internal/semconv -update"
	testutil.Generated(t, "names.go", src, *update, regenerate)
	testutil.Generated(t, docPath, newDoc, *update, regenerate)
}

// goSource renders names.go: a constant for every name with a Go name.
func goSource(r *registry.Registry) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated from semconv/registry.yaml by go test ./internal/semconv -update. DO NOT EDIT.\n\npackage semconv\n\n")
	b.WriteString("import \"go.opentelemetry.io/otel/attribute\"\n\n")
	b.WriteString("// The instrumentation scopes of otelqueue's packages.\nconst (\n")
	for _, s := range r.Scopes {
		fmt.Fprintf(&b, "\t%s = %q\n", s.Go, s.Name)
	}
	b.WriteString(")\n\n// Attribute keys.\nconst (\n")
	for _, g := range r.Groups {
		if g.Type != "attribute_group" {
			continue
		}
		for _, a := range g.Attributes {
			if a.Go == "" {
				continue // an OpenTelemetry convention: go.opentelemetry.io/otel/semconv has it
			}
			if strings.HasPrefix(g.ID, "registry.log") {
				// log/slog and logr take string keys
				fmt.Fprintf(&b, "\t%s\n\t%s = %q\n", comment(a.Go, a.Brief), a.Go, a.ID)
				continue
			}
			fmt.Fprintf(&b, "\t%s\n\t%s = attribute.Key(%q)\n", comment(a.Go, a.Brief), a.Go, a.ID)
		}
	}
	for _, typ := range []struct{ typ, title string }{{"metric", "Metric"}, {"span", "Span"}, {"event", "Span event"}} {
		fmt.Fprintf(&b, ")\n\n// %s names.\nconst (\n", typ.title)
		for _, g := range r.Of(typ.typ) {
			if g.Go == "" {
				continue
			}
			text := g.Brief
			if g.Type == "metric" {
				text += " " + g.Prometheus + "."
			}
			fmt.Fprintf(&b, "\t%s\n\t%s = %q\n", comment(g.Go, text), g.Go, g.EmittedName())
		}
	}
	b.WriteString(")\n")
	return b.Bytes()
}

// comment renders a doc comment: the name, then the text, wrapped.
func comment(name, text string) string {
	words := strings.Fields(name + ": " + text)
	var lines []string
	line := "//"
	for _, w := range words {
		if len(line)+1+len(w) > 76 && line != "//" {
			lines = append(lines, line)
			line = "//"
		}
		line += " " + w
	}
	lines = append(lines, line)
	return strings.Join(lines, "\n\t")
}

// docTables renders the generated tables of the doc, by their marker name.
func docTables(r *registry.Registry) map[string]string {
	attrs := r.Attributes()
	refs := func(as []registry.Attribute) string {
		var s []string
		for _, a := range as {
			k := "`" + a.Ref + "`"
			if a.RequirementLevel != "" {
				k += " (" + strings.ReplaceAll(a.RequirementLevel, "_", " ") + ")"
			}
			s = append(s, k)
		}
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ", ")
	}
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	tables := map[string]string{}

	var b strings.Builder
	b.WriteString("| metric | instrument | value | unit | attributes | stability | Prometheus | meaning |\n|---|---|---|---|---|---|---|---|\n")
	var defaultBuckets []string
	for _, g := range r.Of("metric") {
		unit := "`" + g.Unit + "`"
		if g.Unit == "" {
			unit = "(none)"
		}
		meaning := g.Brief
		if g.Note != "" {
			meaning += " " + g.Note
		}
		if list, ok := g.Buckets.([]any); ok {
			meaning += fmt.Sprintf(" Buckets: %v.", list)
		} else if g.Buckets != nil {
			defaultBuckets = append(defaultBuckets, "`"+g.MetricName+"`")
		}
		fmt.Fprintf(&b, "| `%s` (%s) | %s | %s | %s | %s | %s | `%s` | %s |\n", g.MetricName, g.Package, g.Instrument, g.ValueType, unit,
			refs(g.Attributes), g.Stability, g.Prometheus, cell(meaning))
	}
	fmt.Fprintf(&b, "\nThe buckets of %s are otelqueue's `DefaultBuckets()` (100 µs to 1000 s), or those of `WithExplicitBuckets`.\n", strings.Join(defaultBuckets, ", "))
	tables["metrics"] = b.String()

	b.Reset()
	b.WriteString("| attribute | type | stability | values | meaning |\n|---|---|---|---|---|\n")
	ids := make([]string, 0, len(attrs))
	for id := range attrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := attrs[id]
		values := "any"
		if len(a.Values) > 0 {
			values = "`" + strings.Join(a.Values, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", a.ID, a.Type, a.Stability, values, cell(a.Brief))
	}
	tables["attributes"] = b.String()

	b.Reset()
	b.WriteString("| span or event | kind | package | attributes | events | meaning |\n|---|---|---|---|---|---|\n")
	for _, g := range r.Groups {
		switch g.Type {
		case "span":
			var events []string
			for _, e := range g.Events {
				for _, eg := range r.Of("event") {
					if eg.ID == e {
						events = append(events, "`"+eg.Name+"`")
					}
				}
			}
			ev := strings.Join(events, ", ")
			if ev == "" {
				ev = "none"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", g.SpanName, strings.ToUpper(g.SpanKind), g.Package, refs(g.Attributes), ev, cell(g.Brief))
		case "event":
			fmt.Fprintf(&b, "| event `%s` | | %s | %s | | %s |\n", g.Name, g.Package, refs(g.Attributes), cell(g.Brief))
		}
	}
	tables["spans"] = b.String()
	return tables
}

var marker = regexp.MustCompile(`(?s)(<!-- generated from semconv/registry\.yaml: (\w+) -->\n).*?(<!-- end of generated table -->)`)

// replaceTables puts each table between its markers in doc.
func replaceTables(doc []byte, tables map[string]string) ([]byte, error) {
	seen := map[string]bool{}
	out := marker.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := marker.FindSubmatch(m)
		name := string(sub[2])
		seen[name] = true
		return []byte(string(sub[1]) + "\n" + tables[name] + "\n" + string(sub[3]))
	})
	for name := range tables {
		if !seen[name] {
			return nil, fmt.Errorf("%s has no <!-- generated from semconv/registry.yaml: %s --> ... <!-- end of generated table --> markers", docPath, name)
		}
	}
	return out, nil
}
