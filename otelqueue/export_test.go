package otelqueue

// Bindings returns the number of schedulers with a binding, for the test
// that checks the bindings do not keep schedulers alive.
func Bindings() int {
	n := 0
	bindings.Range(func(any, any) bool { n++; return true })
	return n
}
