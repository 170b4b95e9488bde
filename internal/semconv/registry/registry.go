// Package registry reads semconv/registry.yaml, the one source of the names
// otelqueue emits, for the tests that generate from it and check the
// telemetry against it (internal/semconv).
package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Path is semconv/registry.yaml from internal/semconv, the directory of
// the tests that read it.
var Path = filepath.Join("..", "..", "semconv", "registry.yaml")

// Registry is semconv/registry.yaml.
type Registry struct {
	Scopes []struct {
		Name string `json:"name"`
		Go   string `json:"go"`
	} `json:"scopes"`
	Groups []Group `json:"groups"`
}

// Group is one group of the registry: an attribute group, a metric, a
// span or an event.
type Group struct {
	ID         string      `json:"id"`
	Type       string      `json:"type"`
	Brief      string      `json:"brief"`
	Note       string      `json:"note"`
	Go         string      `json:"go"`
	Package    string      `json:"package"`
	Stability  string      `json:"stability"`
	Attributes []Attribute `json:"attributes"`

	MetricName string `json:"metric_name"`
	Instrument string `json:"instrument"` // counter, updowncounter, gauge, histogram
	ValueType  string `json:"value_type"` // int, double
	Unit       string `json:"unit"`
	Prometheus string `json:"prometheus"`
	// Buckets is "default" (otelqueue's DefaultBuckets, or those of
	// WithExplicitBuckets) or a list of boundaries.
	Buckets any `json:"buckets"`

	SpanName string   `json:"span_name"`
	SpanKind string   `json:"span_kind"`
	Events   []string `json:"events"`

	Name string `json:"name"` // an event's
}

// Attribute is an attribute of a group: defined (ID) in an attribute
// group, referenced (Ref) by a metric, span or event.
type Attribute struct {
	ID               string   `json:"id"`
	Ref              string   `json:"ref"`
	Type             string   `json:"type"`
	Stability        string   `json:"stability"`
	Go               string   `json:"go"`
	Brief            string   `json:"brief"`
	Values           []string `json:"values"`
	Examples         []string `json:"examples"`
	RequirementLevel string   `json:"requirement_level"`
}

// Load reads and checks the registry at path: no field the shape lacks,
// every ref resolves, every Go name and every emitted name is unique, every
// kind, value type and stability is one the shape allows.
func Load(path string) (*Registry, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Registry
	if err := yaml.UnmarshalStrict(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Refs returns the attributes the group references.
func (g Group) Refs() map[string]bool {
	m := map[string]bool{}
	for _, a := range g.Attributes {
		m[a.Ref] = true
	}
	return m
}

func (r *Registry) check() error {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	goNames := map[string]string{}
	goName := func(name, of string) {
		if name == "" {
			return
		}
		if prev, ok := goNames[name]; ok {
			fail("Go name %s of %s is also %s's", name, of, prev)
		}
		goNames[name] = of
	}
	for _, s := range r.Scopes {
		goName(s.Go, s.Name)
	}
	attrs := r.Attributes()
	for _, a := range attrs {
		goName(a.Go, a.ID)
		if !slices.Contains([]string{"string", "int", "double", "boolean", "string[]"}, a.Type) {
			fail("attribute %s: type %q", a.ID, a.Type)
		}
		if !slices.Contains([]string{"stable", "development"}, a.Stability) {
			fail("attribute %s: stability %q", a.ID, a.Stability)
		}
	}
	events := map[string]bool{}
	names := map[string]string{}
	for _, g := range r.Groups {
		if g.Type == "event" {
			events[g.ID] = true
		}
	}
	for _, g := range r.Groups {
		if g.Type == "attribute_group" {
			continue
		}
		goName(g.Go, g.ID)
		if !slices.Contains([]string{"stable", "development"}, g.Stability) {
			fail("%s: stability %q", g.ID, g.Stability)
		}
		if !slices.Contains([]string{"otelqueue", "kubeclient", "procstat", "traceparent", "shard"}, g.Package) {
			fail("%s: package %q", g.ID, g.Package)
		}
		for _, a := range g.Attributes {
			if _, ok := attrs[a.Ref]; !ok {
				fail("%s: attribute %q is in no attribute group", g.ID, a.Ref)
			}
		}
		name := g.EmittedName()
		if prev, ok := names[g.Type+" "+name]; ok {
			fail("%s %q is both %s and %s", g.Type, name, prev, g.ID)
		}
		names[g.Type+" "+name] = g.ID
		switch g.Type {
		case "metric":
			if !slices.Contains([]string{"counter", "updowncounter", "gauge", "histogram"}, g.Instrument) {
				fail("%s: instrument %q", g.ID, g.Instrument)
			}
			if g.ValueType != "int" && g.ValueType != "double" {
				fail("%s: value_type %q", g.ID, g.ValueType)
			}
			if (g.Instrument == "histogram") != (g.Buckets != nil) {
				fail("%s: a histogram, and only one, has buckets", g.ID)
			}
			if g.Prometheus == "" {
				fail("%s: no prometheus name", g.ID)
			}
		case "span":
			if !slices.Contains([]string{"internal", "client", "server", "producer", "consumer"}, g.SpanKind) {
				fail("%s: span_kind %q", g.ID, g.SpanKind)
			}
			for _, e := range g.Events {
				if !events[e] {
					fail("%s: event %q is in no event group", g.ID, e)
				}
			}
		case "event":
		default:
			fail("%s: type %q", g.ID, g.Type)
		}
		if name == "" {
			fail("%s: no name", g.ID)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// Attributes returns every attribute the attribute groups define, by id.
func (r *Registry) Attributes() map[string]Attribute {
	m := map[string]Attribute{}
	for _, g := range r.Groups {
		if g.Type == "attribute_group" {
			for _, a := range g.Attributes {
				m[a.ID] = a
			}
		}
	}
	return m
}

// EmittedName is the group's name in the telemetry: a metric's, a span's
// (with {placeholders} for what varies), an event's.
func (g Group) EmittedName() string {
	switch g.Type {
	case "metric":
		return g.MetricName
	case "span":
		return g.SpanName
	case "event":
		return g.Name
	}
	return ""
}

// Of returns the groups of one type.
func (r *Registry) Of(typ string) []Group {
	var gs []Group
	for _, g := range r.Groups {
		if g.Type == typ {
			gs = append(gs, g)
		}
	}
	return gs
}
