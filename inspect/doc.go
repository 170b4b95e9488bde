// Package inspect is what can be read of an instrumented queue at one
// moment, for people and for scripts: the page of an otelqueue.Inspector
// (Page, in HTML or JSON through Write), and the state of an adaptive
// worker pool (Pool, from otelqueue.Instrumentation.AdaptiveStats).
package inspect
