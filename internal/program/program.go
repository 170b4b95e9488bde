// Package program holds the state that the instrumentations made with one
// MeterProvider share: the counts of the API round trips and watch streams
// of the clients that package kubeclient instrumented with it (read by
// package otelqueue's adaptive pools, Sizers and Inspectors of queues
// instrumented with the same provider), and whether package procstat has a
// live Instrumentation on it.
//
// A program is what one MeterProvider's instrumentations make: two
// programs in one process (two controllers, two tests of one test binary),
// each with its own provider, see each other's figures nowhere. The
// instrumentations made with the global provider (no WithMeterProvider,
// or OpenTelemetry's global delegate) share one State, the default; a
// reader of the provider that is global reads it too (Sources).
//
// This is otelqueue's one process-wide registry; package otelqueue's list
// of live instrumentations, which Inspectors show by default, is in it
// too.
package program

import (
	"reflect"
	"slices"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// State is what the instrumentations of one program share. Its fields are
// safe for concurrent use.
type State struct {
	// Server counts the API round trips of the program's instrumented
	// clients.
	Server Server
	// Watches counts their watch streams.
	Watches Watches

	key      any        // in states
	mu       sync.Mutex // guards procstat
	procstat any        // the live procstat Instrumentation, nil: none
}

// Claim makes owner the program's live procstat Instrumentation, and
// reports whether it did: false when the program has one.
func (s *State) Claim(owner any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procstat != nil {
		return false
	}
	s.procstat = owner
	return true
}

// Release undoes owner's Claim; it does nothing when owner is not the
// live one.
func (s *State) Release(owner any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procstat == owner {
		s.procstat = nil
	}
}

// global is the key of the global provider's State.
type global struct{}

// states holds every program's State, and the process's list of live queue
// instrumentations (Register). A State lives as long as the process: it is
// a few counters, and holds its provider.
var states = struct {
	sync.Mutex
	m    map[any]*State
	live []any
}{m: map[any]*State{}}

// Of returns the State of the program of mp, made on first use: mp's own
// for a provider that is a pointer (the SDK's), one for every value of a
// type that is not (noop.MeterProvider{}, which records nothing, equals
// every other), and the global one's for nil and for OpenTelemetry's
// global delegate (otel.GetMeterProvider before otel.SetMeterProvider).
func Of(mp metric.MeterProvider) *State {
	k := key(mp)
	states.Lock()
	defer states.Unlock()
	return stateLocked(k)
}

func stateLocked(k any) *State {
	s := states.m[k]
	if s == nil {
		s = &State{key: k}
		states.m[k] = s
	}
	return s
}

// key is the key of mp's program.
func key(mp metric.MeterProvider) any {
	if mp == nil {
		return global{}
	}
	t := reflect.TypeOf(mp)
	if !t.Comparable() || t.Kind() == reflect.Pointer && t.Elem().PkgPath() == globalPkg {
		return global{}
	}
	if t.Kind() != reflect.Pointer {
		return t // every value of the type is one provider
	}
	return mp
}

// globalPkg is the package of OpenTelemetry's global delegate provider,
// which forwards to the provider otel.SetMeterProvider sets.
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// Sources returns the States whose counts a reader of st reads: st, and,
// when st is the program of the provider that is global now, the State of
// the instrumentations made with the global delegate before it was set
// (or, for that State, the global provider's): a program that set its
// provider global after instrumenting some of its parts is one program.
func Sources(st *State) []*State {
	g := otel.GetMeterProvider()
	gk := key(g)
	if gk == (global{}) {
		return []*State{st} // none set: the delegate is all of it
	}
	states.Lock()
	defer states.Unlock()
	var other *State
	switch st.key {
	case global{}:
		other = states.m[gk]
	case gk:
		other = states.m[global{}]
	}
	if other == nil {
		return []*State{st}
	}
	return []*State{st, other}
}

// Register adds x, a live instrumentation of a queue, to the process's
// list, and returns the function that removes it (once; later calls do
// nothing). Package otelqueue's Inspectors show the list by default.
func Register(x any) (remove func()) {
	states.Lock()
	states.live = append(states.live, x)
	states.Unlock()
	var once sync.Once
	return func() { once.Do(func() { Remove(x) }) }
}

// Remove removes every x from the list.
func Remove(xs ...any) {
	states.Lock()
	defer states.Unlock()
	states.live = slices.DeleteFunc(states.live, func(y any) bool { return slices.Contains(xs, y) })
}

// Live returns the list, in the order of Register.
func Live() []any {
	states.Lock()
	defer states.Unlock()
	return slices.Clone(states.live)
}
