// Package nilcheck tells a typed nil from a working value, for the options
// of otelqueue and kubeclient that take an interface.
package nilcheck

import "reflect"

// IsNil reports whether v is nil or holds a nil pointer, map, slice, func,
// channel or interface: a typed nil passed where an interface was expected,
// whose methods would panic.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
