// Package semconv holds the names otelqueue's packages emit, as Go
// constants generated from semconv/registry.yaml, their one source
// (go test ./internal/semconv -update regenerates this package's names.go
// and the tables of docs/semantic-conventions.md).
package semconv
