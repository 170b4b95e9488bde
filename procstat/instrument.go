package procstat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"

	"github.com/otelqueue/otelqueue/internal/program"
	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
)

// ErrInstrumented is the error of Instrument on a MeterProvider that has a
// live Instrumentation already (errors.Is).
var ErrInstrumented = errors.New("procstat: the MeterProvider has a live Instrumentation already")

// Instrumentation is the OpenTelemetry instrumentation of the process made
// by Instrument. Stop removes it.
type Instrumentation struct {
	program  *program.State // whose live one it is; nil when the provider is a value
	reg      metric.Registration
	stopOnce sync.Once
}

var (
	userMode   = metric.WithAttributeSet(attribute.NewSet(semconv.AttrCPUMode.String("user")))
	systemMode = metric.WithAttributeSet(attribute.NewSet(semconv.AttrCPUMode.String("system")))
)

// Instrument reports the process's CPU time, GOMAXPROCS, memory, cgroup
// CPU quota and throttling (and, with WithCachedObjects, the informer
// caches' objects) through observable instruments of a meter of the
// MeterProvider, read at collection time by one callback: see the Metric
// constants. Nothing is measured between collections.
//
// A MeterProvider has at most one live Instrumentation: two would report
// every series twice. Instrument fails with ErrInstrumented on a provider
// instrumented already, until that Instrumentation is stopped. Errors in
// creating instruments go to otel.Handle and leave the others working;
// Instrument itself fails only on an invalid option or ErrInstrumented.
func Instrument(opts ...Option) (*Instrumentation, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	inst := &Instrumentation{}
	// Providers are told apart by identity: a pointer (the SDK's). A value
	// (noop.MeterProvider{}, which records nothing) equals every other of
	// its type, and may not be comparable at all: it goes unchecked.
	// The global provider, before and after otel.SetMeterProvider, is one.
	if v := reflect.ValueOf(c.meterProvider); v.Kind() == reflect.Pointer {
		inst.program = program.Of(c.meterProvider)
		if !inst.program.Claim(inst) {
			return nil, fmt.Errorf("%w (%T): Stop it before instrumenting the provider again", ErrInstrumented, c.meterProvider)
		}
	}
	inst.reg = register(&c)
	return inst, nil
}

// Stop removes the instrumentation: its instruments are no longer
// reported, and the MeterProvider may be instrumented again. It is safe to
// call more than once, and on a nil Instrumentation; it returns the error of
// unregistering the callback, the first time.
func (i *Instrumentation) Stop() error {
	if i == nil {
		return nil
	}
	var err error
	i.stopOnce.Do(func() {
		if i.reg != nil {
			err = i.reg.Unregister()
		}
		if i.program != nil {
			i.program.Release(i)
		}
	})
	return err
}

// instruments are the observable instruments; nil for one that could not
// be made.
type instruments struct {
	cpuTime          metric.Float64ObservableCounter
	processorLimit   metric.Int64ObservableUpDownCounter
	memoryUsed       metric.Int64ObservableUpDownCounter
	memoryNeeded     metric.Int64ObservableGauge
	runDelay         metric.Float64ObservableCounter
	gcIdle           metric.Float64ObservableCounter
	cpuCount         metric.Int64ObservableGauge
	cpuLimit         metric.Float64ObservableGauge
	periods          metric.Int64ObservableCounter
	throttledPeriods metric.Int64ObservableCounter
	throttledTime    metric.Float64ObservableCounter
	cacheObjects     metric.Int64ObservableGauge
}

// register makes the instruments and registers their callback; errors go
// to otel.Handle. The Registration is nil when the callback could not be
// registered.
func register(c *config) metric.Registration {
	m := c.meterProvider.Meter(semconv.ScopeProcstat, metric.WithInstrumentationVersion(semconv.Version))
	var in instruments
	var observables []metric.Observable
	// made keeps an instrument for the callback; one that could not be
	// made is left out of it: an SDK refuses a whole registration that
	// holds an instrument of another implementation (a no-op stand-in).
	made := func(o metric.Observable, err error) bool {
		if err != nil {
			otel.Handle(err)
		}
		if nilcheck.IsNil(o) {
			return false
		}
		observables = append(observables, o)
		return true
	}
	var err error
	in.cpuTime, err = m.Float64ObservableCounter(semconv.MetricProcessCPUTime, metric.WithUnit("s"),
		metric.WithDescription("Total CPU seconds broken down by different CPU modes."))
	if !made(in.cpuTime, err) {
		in.cpuTime = nil
	}
	in.processorLimit, err = m.Int64ObservableUpDownCounter(semconv.MetricGoProcessorLimit, metric.WithUnit("{thread}"),
		metric.WithDescription("The number of OS threads that can execute user-level Go code simultaneously."))
	if !made(in.processorLimit, err) {
		in.processorLimit = nil
	}
	in.memoryUsed, err = m.Int64ObservableUpDownCounter(semconv.MetricGoMemoryUsed, metric.WithUnit("By"),
		metric.WithDescription("Memory used by the Go runtime."))
	if !made(in.memoryUsed, err) {
		in.memoryUsed = nil
	}
	in.memoryNeeded, err = m.Int64ObservableGauge(semconv.MetricMemoryNeeded, metric.WithUnit("By"),
		metric.WithDescription("The most memory the Go runtime will hold before its next garbage collection."))
	if !made(in.memoryNeeded, err) {
		in.memoryNeeded = nil
	}
	in.runDelay, err = m.Float64ObservableCounter(semconv.MetricCPURunDelay, metric.WithUnit("s"),
		metric.WithDescription("Total time the process's threads waited on the node's run queues for a CPU."))
	if !made(in.runDelay, err) {
		in.runDelay = nil
	}
	in.gcIdle, err = m.Float64ObservableCounter(semconv.MetricCPUGCIdle, metric.WithUnit("s"),
		metric.WithDescription("Total CPU time of the garbage collector's idle-priority marking, on processors with nothing else to run."))
	if !made(in.gcIdle, err) {
		in.gcIdle = nil
	}
	in.cpuCount, err = m.Int64ObservableGauge(semconv.MetricCPUCount, metric.WithUnit("{cpu}"),
		metric.WithDescription("The CPUs the process may run on."))
	if !made(in.cpuCount, err) {
		in.cpuCount = nil
	}
	in.cpuLimit, err = m.Float64ObservableGauge(semconv.MetricCPULimit, metric.WithUnit("{cpu}"),
		metric.WithDescription("CPU cores the cgroup's quota allows the process on average (quota/period), when a quota is set."))
	if !made(in.cpuLimit, err) {
		in.cpuLimit = nil
	}
	in.periods, err = m.Int64ObservableCounter(semconv.MetricCPUPeriods, metric.WithUnit("{period}"),
		metric.WithDescription("Enforcement periods of the cgroup's CPU quota in which the cgroup ran."))
	if !made(in.periods, err) {
		in.periods = nil
	}
	in.throttledPeriods, err = m.Int64ObservableCounter(semconv.MetricCPUThrottledPeriods, metric.WithUnit("{period}"),
		metric.WithDescription("Enforcement periods in which the cgroup used up its CPU quota and was throttled."))
	if !made(in.throttledPeriods, err) {
		in.throttledPeriods = nil
	}
	in.throttledTime, err = m.Float64ObservableCounter(semconv.MetricCPUThrottledTime, metric.WithUnit("s"),
		metric.WithDescription("Total time the cgroup's threads were throttled by its CPU quota."))
	if !made(in.throttledTime, err) {
		in.throttledTime = nil
	}
	if c.cachedObjects != nil {
		in.cacheObjects, err = m.Int64ObservableGauge(semconv.MetricCacheObjects, metric.WithUnit("{object}"),
			metric.WithDescription("Objects in the controller's informer caches."))
		if !made(in.cacheObjects, err) {
			in.cacheObjects = nil
		}
	}
	if len(observables) == 0 {
		return nil
	}
	r, objects := c.reader, c.cachedObjects
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		in.observe(o, r.read(false), objects)
		return nil
	}, observables...)
	if err != nil {
		otel.Handle(err)
	}
	return reg
}

// observe reports s, and objects when given.
func (in *instruments) observe(o metric.Observer, s Sample, objects func() int64) {
	if in.cpuTime != nil && s.CPUKnown {
		o.ObserveFloat64(in.cpuTime, s.User.Seconds(), userMode)
		o.ObserveFloat64(in.cpuTime, s.System.Seconds(), systemMode)
	}
	if in.processorLimit != nil {
		o.ObserveInt64(in.processorLimit, int64(s.GOMAXPROCS))
	}
	if in.memoryUsed != nil {
		o.ObserveInt64(in.memoryUsed, clampInt64(s.MemoryUsed))
	}
	if in.memoryNeeded != nil {
		o.ObserveInt64(in.memoryNeeded, clampInt64(s.MemoryNeeded))
	}
	if in.runDelay != nil && s.RunDelayKnown {
		o.ObserveFloat64(in.runDelay, s.RunDelay.Seconds())
	}
	if in.gcIdle != nil {
		o.ObserveFloat64(in.gcIdle, s.GCIdle.Seconds())
	}
	if in.cpuCount != nil && s.NumCPU > 0 {
		o.ObserveInt64(in.cpuCount, int64(s.NumCPU))
	}
	if cg := s.Cgroup; cg.Known && cg.Limit > 0 {
		if in.cpuLimit != nil {
			o.ObserveFloat64(in.cpuLimit, cg.Limit)
		}
		if cg.StatKnown {
			if in.periods != nil {
				o.ObserveInt64(in.periods, clampInt64(cg.Periods))
			}
			if in.throttledPeriods != nil {
				o.ObserveInt64(in.throttledPeriods, clampInt64(cg.ThrottledPeriods))
			}
			if in.throttledTime != nil {
				o.ObserveFloat64(in.throttledTime, cg.ThrottledTime.Seconds())
			}
		}
	}
	if in.cacheObjects != nil && objects != nil {
		o.ObserveInt64(in.cacheObjects, objects())
	}
}

func clampInt64(v uint64) int64 {
	return int64(min(v, math.MaxInt64))
}
