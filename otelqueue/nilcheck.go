package otelqueue

import (
	"fmt"
	"reflect"
)

// isNil reports whether v is nil or holds a nil pointer, map, slice, func,
// channel or interface: a typed nil passed where an interface was expected,
// whose methods would panic.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// typedNil is the error for a typed nil v given to option.
func typedNil(option string, v any) error {
	return fmt.Errorf("otelqueue: %s got a nil %T: pass a working one, or an untyped nil (or no option) for the global default", option, v)
}
