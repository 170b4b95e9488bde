package otelqueue

import (
	"fmt"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
)

// isNil reports whether v is nil or a typed nil (nilcheck.IsNil).
func isNil(v any) bool { return nilcheck.IsNil(v) }

// typedNil is the error for a typed nil v given to option.
func typedNil(option string, v any) error {
	return fmt.Errorf("otelqueue: %s got a nil %T: pass a working one, or an untyped nil (or no option) for the global default", option, v)
}
