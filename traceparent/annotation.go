package traceparent

import (
	"fmt"
	"strings"
)

// Annotation is the annotation Inject writes, and a Reader reads, by
// default: the W3C traceparent of the change that last wrote the object.
// Its prefix is a DNS name this project controls (the GitHub organization's
// otelqueue.github.io), as Kubernetes asks of annotation prefixes; see
// KEPAnnotation for the key Kubernetes itself may standardize.
const Annotation = "otelqueue.github.io/traceparent"

// KEPAnnotation is the key Kubernetes KEP-5915 (async trace context
// propagation, provisional) proposes for the same value, and the one
// otelqueue v0.1.0 wrote. Prefixes under k8s.io are reserved for the
// Kubernetes project, so this package does not write it by default: write
// it (WithAnnotation) only where your objects' other tools read it, and
// read it beside Annotation (WithAnnotations(Annotation, KEPAnnotation)) to
// follow objects written by v0.1.0 or by tools that implement the KEP.
const KEPAnnotation = "tracing.k8s.io/traceparent"

// annotationOption is WithAnnotation.
type annotationOption struct{ key string }

func (o annotationOption) applyInject(c *injectConfig) { c.key = o.key }

// WithAnnotation makes Inject write the annotation key instead of
// Annotation. A key that is not a valid annotation key (an optional DNS
// subdomain prefix and a slash, then a name of at most 63 alphanumerics,
// '-', '_' or '.', beginning and ending with an alphanumeric) makes Inject
// write nothing, return false and report the error to otel.Handle.
func WithAnnotation(key string) InjectOption { return annotationOption{key: key} }

// WithAnnotations makes a Reader read, of keys, the first annotation an
// object has, instead of Annotation only: WithAnnotations(Annotation,
// KEPAnnotation) reads this package's key and, on objects without it, the
// KEP's. Keys that are not valid annotation keys are left out and reported
// to otel.Handle; with none left the Reader reads nothing.
func WithAnnotations(keys ...string) ReaderOption {
	keys = append([]string(nil), keys...)
	return readerOptionFunc(func(c *readerConfig) { c.keys, c.keysSet = keys, true })
}

// checkKey reports a key that is not a valid annotation key: a qualified
// name, as Kubernetes validates annotation keys.
func checkKey(key string) error {
	prefix, name, found := strings.Cut(key, "/")
	if !found {
		name, prefix = prefix, ""
	} else if prefix == "" || len(prefix) > 253 || !dnsSubdomain(prefix) {
		return fmt.Errorf("traceparent: annotation key %q: its prefix must be a DNS subdomain (lower-case alphanumerics, '-' and '.', at most 253 characters), such as otelqueue.github.io", key)
	}
	if name == "" || len(name) > 63 || !qualifiedName(name) {
		return fmt.Errorf("traceparent: annotation key %q: its name must be 1 to 63 alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric", key)
	}
	return nil
}

func alnum(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }

func qualifiedName(s string) bool {
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := range len(s) {
		if b := s[i]; !alnum(b) && b != '-' && b != '_' && b != '.' {
			return false
		}
	}
	return true
}

func dnsSubdomain(s string) bool {
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := range len(label) {
			if b := label[i]; !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-') {
				return false
			}
		}
	}
	return true
}
