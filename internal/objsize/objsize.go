// Package objsize estimates how much heap a Go value holds: the value
// itself and everything it reaches through pointers, slices, strings, maps
// and interfaces, each counted once. The Sizer of package otelqueue uses it
// to count an informer cache's memory per object from the objects
// themselves, rather than from the process's memory, which holds whatever
// else the process does.
//
// It is an estimate: each allocation is counted at the size class Go's
// allocator rounds it up to (small strings without pointers share blocks
// in the runtime's tiny allocator, and are counted alone), and a map at
// its groups as Go's swiss tables lay them out (mapGroups), not at its
// exact layout. Pointers to memory the value does not own (a
// *time.Location) are followed and counted all the same. Measured against
// the heap that ten thousand ConfigMaps actually take, it is within
// 15% (TestAgainstTheHeap).
package objsize

import (
	"reflect"
	"unsafe"
)

// maxDepth bounds the recursion: a value deeper than that (a long linked
// list) is counted to this depth only.
const maxDepth = 64

// Of returns the heap v holds: the size of the value v points to (or holds,
// when it is no pointer) and of everything reachable from it, each
// allocation once.
func Of(v any) uintptr {
	if v == nil {
		return 0
	}
	s := sizer{seen: map[uintptr]bool{}, pointers: map[reflect.Type]bool{}}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		return s.pointer(rv, 0)
	}
	return rv.Type().Size() + s.inner(rv, 0)
}

type sizer struct {
	// seen are the addresses of the allocations counted: a pointee, a
	// slice's backing array or a string's bytes, by their first byte.
	seen map[uintptr]bool
	// pointers caches hasPointers by type.
	pointers map[reflect.Type]bool
}

// pointer returns the size of what p points to and of what that reaches,
// 0 when nil or counted already.
func (s *sizer) pointer(p reflect.Value, depth int) uintptr {
	if p.IsNil() || depth > maxDepth {
		return 0
	}
	addr := p.Pointer()
	if s.seen[addr] {
		return 0
	}
	s.seen[addr] = true
	e := p.Elem()
	return class(e.Type().Size()) + s.inner(e, depth+1)
}

// inner returns what v reaches beyond its own size.
func (s *sizer) inner(v reflect.Value, depth int) uintptr {
	if depth > maxDepth {
		return 0
	}
	switch v.Kind() {
	case reflect.Pointer:
		return s.pointer(v, depth)
	case reflect.String:
		n := v.Len()
		if n == 0 {
			return 0
		}
		addr := uintptr(unsafe.Pointer(unsafe.StringData(v.String())))
		if s.seen[addr] {
			return 0
		}
		s.seen[addr] = true
		return class(uintptr(n))
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return 0
		}
		var total uintptr
		addr := v.Pointer()
		if !s.seen[addr] {
			s.seen[addr] = true
			total += class(uintptr(v.Cap()) * v.Type().Elem().Size())
		}
		if s.hasPointers(v.Type().Elem()) {
			for i := range v.Len() {
				total += s.inner(v.Index(i), depth+1)
			}
		}
		return total
	case reflect.Array:
		var total uintptr
		if s.hasPointers(v.Type().Elem()) {
			for i := range v.Len() {
				total += s.inner(v.Index(i), depth+1)
			}
		}
		return total
	case reflect.Struct:
		var total uintptr
		for i := range v.NumField() {
			if f := v.Field(i); s.hasPointers(f.Type()) {
				total += s.inner(f, depth+1)
			}
		}
		return total
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		if e.Kind() == reflect.Pointer {
			return s.pointer(e, depth+1)
		}
		// A value in an interface is boxed: its own allocation (small
		// scalars excepted, which the runtime does not allocate for).
		boxed := uintptr(0)
		if e.Type().Size() > unsafe.Sizeof(uintptr(0)) || s.hasPointers(e.Type()) {
			boxed = class(e.Type().Size())
		}
		return boxed + s.inner(e, depth+1)
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		addr := v.Pointer()
		if s.seen[addr] {
			return 0
		}
		s.seen[addr] = true
		k, e := v.Type().Key(), v.Type().Elem()
		total := class(48) + mapGroups(v.Len(), k.Size()+e.Size())
		if s.hasPointers(k) || s.hasPointers(e) {
			it := v.MapRange()
			for it.Next() {
				total += s.inner(it.Key(), depth+1) + s.inner(it.Value(), depth+1)
			}
		}
		return total
	}
	// Scalars, funcs and channels: nothing counted beyond their own size.
	return 0
}

// hasPointers says whether a value of type t can reach other memory.
func (s *sizer) hasPointers(t reflect.Type) bool {
	if has, ok := s.pointers[t]; ok {
		return has
	}
	has := false
	switch t.Kind() {
	case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Interface:
		has = true
	case reflect.Array:
		has = t.Len() > 0 && s.hasPointers(t.Elem())
	case reflect.Struct:
		s.pointers[t] = false // a struct that reaches itself does so through a pointer
		for i := range t.NumField() {
			if s.hasPointers(t.Field(i).Type) {
				has = true
				break
			}
		}
	}
	s.pointers[t] = has
	return has
}

// mapGroups is the memory of a map's groups as Go's swiss tables lay
// them out: groups of 8 slots and a word of control bytes; a map of up to
// 8 entries has one group, a larger one tables of groups at most 7/8 full,
// their slot counts powers of two.
func mapGroups(n int, slot uintptr) uintptr {
	group := 8 + 8*slot
	if n <= 8 {
		return class(group)
	}
	slots := uintptr(8)
	for slots*7/8 < uintptr(n) {
		slots *= 2
	}
	const table = 48 // a table's header, and its place in the directory
	return class(table) + class(slots/8*group)
}

// sizeClasses are the upper bounds of the Go allocator's small size
// classes (runtime/sizeclasses.go, Go 1.26).
var sizeClasses = [...]uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
	2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880,
	12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// class returns the size the allocator gives an allocation of n bytes: its
// size class, or whole 8 KiB pages above the largest.
func class(n uintptr) uintptr {
	if n == 0 {
		return 0
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return (n + 8191) / 8192 * 8192
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return sizeClasses[lo]
}
