package procstat_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/procstat"
)

// quotaReader reads a fake v2 cgroup with a half-core quota.
func quotaReader() *procstat.Reader {
	return procstat.NewFSReader(tree{
		"/" + cgroupFile:              "0::/app\n",
		"/" + mountinfoFile:           v2Mount,
		"/sys/fs/cgroup/app/cpu.max":  "50000 100000\n",
		"/sys/fs/cgroup/app/cpu.stat": v2Stat(120, 90, 4_500_000),
	}.fs(), cgroupFile, mountinfoFile)
}

// noQuotaReader reads a fake v2 cgroup without a quota.
func noQuotaReader() *procstat.Reader {
	return procstat.NewFSReader(tree{
		"/" + cgroupFile:              "0::/app\n",
		"/" + mountinfoFile:           v2Mount,
		"/sys/fs/cgroup/app/cpu.max":  "max 100000\n",
		"/sys/fs/cgroup/app/cpu.stat": v2Stat(0, 0, 0),
	}.fs(), cgroupFile, mountinfoFile)
}

// newProvider returns an SDK MeterProvider read by a ManualReader, shut
// down when the test ends.
func newProvider(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, reader
}

func instrument(t *testing.T, opts ...procstat.Option) *procstat.Instrumentation {
	t.Helper()
	inst, err := procstat.Instrument(opts...)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	return inst
}

// names returns the sorted names of procstat's metrics in rm, checking the
// scope's version.
func names(t *testing.T, rm metricdata.ResourceMetrics) []string {
	t.Helper()
	if _, version, ok := testutil.ScopeMetrics(rm, semconv.ScopeProcstat); ok && version != semconv.Version {
		t.Errorf("scope version = %q, want %q", version, semconv.Version)
	}
	return slices.Sorted(slices.Values(testutil.MetricNames(rm, semconv.ScopeProcstat)))
}

func assertNames(t *testing.T, rm metricdata.ResourceMetrics, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := names(t, rm); !slices.Equal(got, want) {
		t.Errorf("metrics = %q\nwant %q", got, want)
	}
}

// intSum and floatSum are the expected cumulative sums of one series.
func intSum(name, unit string, monotonic bool, v int64) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Unit: unit, Data: metricdata.Sum[int64]{
		Temporality: metricdata.CumulativeTemporality, IsMonotonic: monotonic,
		DataPoints: []metricdata.DataPoint[int64]{{Value: v}},
	}}
}

func floatSum(name, unit string, points ...metricdata.DataPoint[float64]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Unit: unit, Data: metricdata.Sum[float64]{
		Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: points,
	}}
}

// assertMetric compares want with the metric of its name in rm; the
// description is prose: only its presence is checked.
func assertMetric(t *testing.T, rm metricdata.ResourceMetrics, want metricdata.Metrics, opts ...metricdatatest.Option) {
	t.Helper()
	got := testutil.FindMetric(t, rm, semconv.ScopeProcstat, want.Name)
	if got.Description == "" {
		t.Errorf("metric %q has no description", want.Name)
	}
	want.Description = got.Description
	metricdatatest.AssertEqual(t, want, got, append(opts, metricdatatest.IgnoreTimestamp())...)
}

func TestInstrument(t *testing.T) {
	testutil.NoOTelErrors(t)
	mp, reader := newProvider(t)
	instrument(t, procstat.WithMeterProvider(mp), procstat.WithReader(quotaReader()),
		procstat.WithCachedObjects(func() int64 { return 4200 }))
	rm := testutil.Collect(t, reader)
	assertNames(t, rm,
		semconv.MetricProcessCPUTime, semconv.MetricGoProcessorLimit, semconv.MetricGoMemoryUsed, semconv.MetricMemoryNeeded, semconv.MetricCPUGCIdle, semconv.MetricCPUCount,
		semconv.MetricCPULimit, semconv.MetricCPUPeriods, semconv.MetricCPUThrottledPeriods,
		semconv.MetricCPUThrottledTime, semconv.MetricCacheObjects)

	cpuTime := floatSum(semconv.MetricProcessCPUTime, "s",
		metricdata.DataPoint[float64]{Attributes: attribute.NewSet(attribute.String("cpu.mode", "user"))},
		metricdata.DataPoint[float64]{Attributes: attribute.NewSet(attribute.String("cpu.mode", "system"))})
	assertMetric(t, rm, cpuTime, metricdatatest.IgnoreValue())
	assertMetric(t, rm, intSum(semconv.MetricGoProcessorLimit, "{thread}", false, int64(runtime.GOMAXPROCS(0))))
	assertMetric(t, rm, intSum(semconv.MetricGoMemoryUsed, "By", false, 0), metricdatatest.IgnoreValue())
	assertMetric(t, rm, metricdata.Metrics{Name: semconv.MetricCPULimit, Unit: "{cpu}", Data: metricdata.Gauge[float64]{
		DataPoints: []metricdata.DataPoint[float64]{{Value: 0.5}},
	}})
	assertMetric(t, rm, intSum(semconv.MetricCPUPeriods, "{period}", true, 120))
	assertMetric(t, rm, intSum(semconv.MetricCPUThrottledPeriods, "{period}", true, 90))
	assertMetric(t, rm, floatSum(semconv.MetricCPUThrottledTime, "s", metricdata.DataPoint[float64]{Value: 4.5}))
	assertMetric(t, rm, metricdata.Metrics{Name: semconv.MetricCacheObjects, Unit: "{object}", Data: metricdata.Gauge[int64]{
		DataPoints: []metricdata.DataPoint[int64]{{Value: 4200}},
	}})

	// The values are read at collection: the CPU time grows, and the
	// memory is the Sample's.
	busy(1, 20*time.Millisecond)
	s := new(procstat.Reader).Read()
	rm = testutil.Collect(t, reader)
	m := testutil.FindMetric(t, rm, semconv.ScopeProcstat, semconv.MetricProcessCPUTime)
	var cpu float64
	for _, p := range m.Data.(metricdata.Sum[float64]).DataPoints {
		cpu += p.Value
	}
	if want := (s.User + s.System).Seconds(); cpu < want {
		t.Errorf("process.cpu.time adds up to %vs, less than the %vs read before", cpu, want)
	}
	m = testutil.FindMetric(t, rm, semconv.ScopeProcstat, semconv.MetricGoMemoryUsed)
	used := m.Data.(metricdata.Sum[int64]).DataPoints[0].Value
	if used <= 0 {
		t.Errorf("go.memory.used = %d", used)
	}
	// The memory needed is at least what is used (both read in one
	// callback, from one Sample).
	m = testutil.FindMetric(t, rm, semconv.ScopeProcstat, semconv.MetricMemoryNeeded)
	if v := m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value; v < used {
		t.Errorf("otelqueue.memory.needed = %d, under go.memory.used %d", v, used)
	}
}

func TestInstrumentWithoutQuota(t *testing.T) {
	testutil.NoOTelErrors(t)
	for name, r := range map[string]*procstat.Reader{
		"no quota":       noQuotaReader(),
		"no cgroup":      procstat.NewFSReader(tree{}.fs(), cgroupFile, mountinfoFile),
		"unknown cgroup": procstat.NewFSReader(tree{"/" + cgroupFile: "0::/app\n", "/" + mountinfoFile: v2Mount, "/sys/fs/cgroup/app/cpu.max": "x"}.fs(), cgroupFile, mountinfoFile),
	} {
		t.Run(name, func(t *testing.T) {
			mp, reader := newProvider(t)
			instrument(t, procstat.WithMeterProvider(mp), procstat.WithReader(r))
			assertNames(t, testutil.Collect(t, reader),
				semconv.MetricProcessCPUTime, semconv.MetricGoProcessorLimit, semconv.MetricGoMemoryUsed, semconv.MetricMemoryNeeded, semconv.MetricCPUGCIdle, semconv.MetricCPUCount)
		})
	}
}

func TestInstrumentMisuse(t *testing.T) {
	testutil.NoOTelErrors(t)
	mp, reader := newProvider(t)

	first := instrument(t, nil, procstat.WithMeterProvider(mp)) // a nil Option is ignored
	if _, err := procstat.Instrument(procstat.WithMeterProvider(mp)); !errors.Is(err, procstat.ErrInstrumented) {
		t.Errorf("Instrument on an instrumented provider: %v, want ErrInstrumented", err)
	}
	other, _ := newProvider(t)
	instrument(t, procstat.WithMeterProvider(other)) // another provider is fine

	if err := first.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := first.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if got := names(t, testutil.Collect(t, reader)); len(got) != 0 {
		t.Errorf("after Stop, metrics %q are reported", got)
	}
	second := instrument(t, procstat.WithMeterProvider(mp))
	assertNames(t, testutil.Collect(t, reader), realNames()...)
	if err := second.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	// The first one's late Stop does not remove the second one's claim.
	third := instrument(t, procstat.WithMeterProvider(mp))
	_ = first.Stop()
	if _, err := procstat.Instrument(procstat.WithMeterProvider(mp)); !errors.Is(err, procstat.ErrInstrumented) {
		t.Errorf("Instrument after a stale Stop: %v, want ErrInstrumented", err)
	}
	_ = third.Stop()

	var nilInst *procstat.Instrumentation
	if err := nilInst.Stop(); err != nil {
		t.Errorf("Stop of a nil Instrumentation: %v", err)
	}

	// Two no-op providers are two providers, though their values are equal.
	noop1 := instrument(t, procstat.WithMeterProvider(metricnoop.NewMeterProvider()))
	noop2 := instrument(t, procstat.WithMeterProvider(metricnoop.NewMeterProvider()))
	_, _ = noop1.Stop(), noop2.Stop()

	var nilReader *procstat.Reader
	if s := nilReader.Read(); !s.CPUKnown && runtime.GOOS == "linux" || s.GOMAXPROCS < 1 {
		t.Errorf("a nil Reader read %+v", s)
	}

	for name, opt := range map[string]procstat.Option{
		"WithCachedObjects": procstat.WithCachedObjects(nil),
		"WithMeterProvider": procstat.WithMeterProvider((*sdkmetric.MeterProvider)(nil)),
	} {
		inst, err := procstat.Instrument(procstat.WithMeterProvider(mp), opt)
		if err == nil || !strings.Contains(err.Error(), name) || inst != nil {
			t.Errorf("Instrument with a nil value for %s: %v, %v; want an error that names the option", name, inst, err)
		}
	}
	if got := names(t, testutil.Collect(t, reader)); len(got) != 0 {
		t.Errorf("refused Instruments report %q", got)
	}
}

// TestInstrumentGlobal checks the default provider: the global one at the
// time of Instrument, guarded against a second Instrumentation as any.
func TestInstrumentGlobal(t *testing.T) {
	testutil.NoOTelErrors(t)
	mp, reader := newProvider(t)
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(prev) })

	inst := instrument(t)
	if _, err := procstat.Instrument(procstat.WithMeterProvider(nil)); !errors.Is(err, procstat.ErrInstrumented) {
		t.Errorf("second Instrument on the global provider: %v, want ErrInstrumented", err)
	}
	assertNames(t, testutil.Collect(t, reader), realNames()...)
	_ = inst.Stop()
}

// TestInstrumentConcurrently makes and stops Instrumentations of one
// provider from many goroutines while it is collected: at most one is live
// at a time, and no collection reports a series twice.
func TestInstrumentConcurrently(t *testing.T) {
	testutil.NoOTelErrors(t)
	mp, reader := newProvider(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	live := 0
	for range 8 {
		wg.Go(func() {
			for range 20 {
				inst, err := procstat.Instrument(procstat.WithMeterProvider(mp), procstat.WithReader(quotaReader()))
				if err != nil {
					continue
				}
				mu.Lock()
				live++
				if live > 1 {
					t.Error("two live Instrumentations of one provider")
				}
				mu.Unlock()
				var rm metricdata.ResourceMetrics
				if err := reader.Collect(context.Background(), &rm); err != nil {
					t.Error(err)
				}
				metrics, _, _ := testutil.ScopeMetrics(rm, semconv.ScopeProcstat)
				for _, m := range metrics {
					if m.Name != semconv.MetricProcessCPUTime && dataPoints(m) != 1 {
						t.Errorf("%s has %d points", m.Name, dataPoints(m))
					}
				}
				mu.Lock()
				live--
				mu.Unlock()
				_ = inst.Stop()
			}
		})
	}
	wg.Wait()
}

func dataPoints(m metricdata.Metrics) int {
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return len(d.DataPoints)
	case metricdata.Sum[float64]:
		return len(d.DataPoints)
	case metricdata.Gauge[int64]:
		return len(d.DataPoints)
	case metricdata.Gauge[float64]:
		return len(d.DataPoints)
	}
	return -1
}

// failingProvider's meters fail to make the instrument called fail.
type failingProvider struct {
	metric.MeterProvider
	fail string
}

func (p failingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return failingMeter{Meter: p.MeterProvider.Meter(name, opts...), fail: p.fail}
}

type failingMeter struct {
	metric.Meter
	fail string
}

var errInstrument = errors.New("no instrument for you")

func (m failingMeter) Int64ObservableUpDownCounter(name string, opts ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	if name == m.fail {
		return nil, errInstrument
	}
	return m.Meter.Int64ObservableUpDownCounter(name, opts...)
}

func (m failingMeter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	if name == m.fail {
		return nil, errInstrument
	}
	return m.Meter.Float64ObservableGauge(name, opts...)
}

// TestInstrumentCreationError checks that an instrument the meter cannot
// make is reported to otel.Handle and the others still work (an SDK
// refuses a callback registration that holds a foreign instrument, such as
// a no-op stand-in: that would lose them all).
func TestInstrumentCreationError(t *testing.T) {
	for _, fail := range []string{semconv.MetricGoProcessorLimit, semconv.MetricCPULimit} {
		t.Run(fail, func(t *testing.T) {
			testutil.NoOTelErrors(t)
			mp, reader := newProvider(t)
			instrument(t, procstat.WithMeterProvider(failingProvider{MeterProvider: mp, fail: fail}), procstat.WithReader(quotaReader()))
			if errs := testutil.TakeOTelErrors(); len(errs) != 1 || !errors.Is(errs[0], errInstrument) {
				t.Errorf("otel.Handle got %v, want the instrument's error", errs)
			}
			want := []string{
				semconv.MetricProcessCPUTime, semconv.MetricGoProcessorLimit, semconv.MetricGoMemoryUsed, semconv.MetricMemoryNeeded, semconv.MetricCPUGCIdle, semconv.MetricCPUCount,
				semconv.MetricCPULimit, semconv.MetricCPUPeriods, semconv.MetricCPUThrottledPeriods, semconv.MetricCPUThrottledTime,
			}
			assertNames(t, testutil.Collect(t, reader), slices.DeleteFunc(want, func(n string) bool { return n == fail })...)
		})
	}
}

// realNames are the metrics of the process read as it is, without a quota
// (the test machine's): the run delay where Linux's schedstat has it.
func realNames() []string {
	names := []string{semconv.MetricProcessCPUTime, semconv.MetricGoProcessorLimit, semconv.MetricGoMemoryUsed,
		semconv.MetricMemoryNeeded, semconv.MetricCPUGCIdle, semconv.MetricCPUCount}
	if new(procstat.Reader).Read().RunDelayKnown {
		names = append(names, semconv.MetricCPURunDelay)
	}
	return names
}
