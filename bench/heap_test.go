package bench

import (
	"runtime"
	"strconv"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// A realistic heap: a controller keeps an informer cache of tens to hundreds
// of MB live, so the garbage collector runs far less often than in a
// benchmark whose heap is a few MB (the Go runtime's minimum heap goal is
// 4 MB), but each cycle then marks the whole cache.

// heapVariants are the instrumented schedulers BenchmarkHeap runs, from
// metrics only to every attempt sampled. The steps are those of
// lifecycleVariants: one Add -> Get -> Done per op in one goroutine.
var heapVariants = []lifecycleVariant{
	{name: "scheduler-otel", start: startSchedulerOTel(nil, false), check: checkOTelHistograms},
	{name: "scheduler-otel-traced-unsampled", start: startSchedulerOTel(sdktrace.NeverSample(), false), check: checkUnsampledRoots},
	// One attempt in ten sampled by trace ID, as a controller that samples
	// its own roots at 10% (TraceIDRatioBased; the roots have no parent).
	{name: "scheduler-otel-traced-10pct", start: startSchedulerOTel(sdktrace.TraceIDRatioBased(0.1), false), check: checkTenthSampled},
	{name: "scheduler-otel-traced-sampled", start: startSchedulerOTel(sdktrace.AlwaysSample(), true), check: checkSampledSpans},
}

// heapSizes are the retained heaps BenchmarkHeap runs the variants on: none
// beyond what the benchmark itself keeps, and a 100 MB informer cache.
var heapSizes = []struct {
	name  string
	bytes uint64
}{
	{"small", 0},
	{"100MB", 100 << 20},
}

// BenchmarkHeap runs each heapVariant on each heap of heapSizes. Besides
// ns/op and cpu-ns/op (the CPU time of the process per reconcile, garbage
// collector included) it reports heap-MB, the live heap when the timed loop
// starts, and GCs/Mop, the collections per million ops.
func BenchmarkHeap(b *testing.B) {
	keys := benchKeys(lifecycleKeys)
	for _, h := range heapSizes {
		var cache *informerCache
		if h.bytes > 0 {
			cache = newInformerCache(h.bytes)
		}
		for _, v := range heapVariants {
			b.Run("variant="+v.name+"/heap="+h.name, func(b *testing.B) {
				step, stop := v.start(b, queueName)
				defer stop()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				timeSteps(b, step, keys)
				b.StopTimer()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(before.HeapAlloc)/(1<<20), "heap-MB")
				b.ReportMetric(float64(after.NumGC-before.NumGC)*1e6/float64(b.N), "GCs/Mop")
			})
		}
		runtime.KeepAlive(cache)
	}
}

// informerCache is a stand-in for an informer's store: objects with the
// shape of Kubernetes objects (strings, label and annotation maps, slices of
// structs holding more strings), indexed by namespace/name in a map, all
// reachable through pointers so the collector has to mark every one.
type informerCache struct {
	objects map[string]*cachedObject
	// bytes is the live heap the cache holds, measured after a collection.
	bytes uint64
}

type cachedObject struct {
	Namespace, Name, UID, ResourceVersion string
	Labels, Annotations                   map[string]string
	OwnerReferences                       []*ownerReference
	Containers                            []container
}

type ownerReference struct{ Kind, Name, UID string }

type container struct {
	Name, Image string
	Args        []string
	Env         []envVar
}

type envVar struct{ Name, Value string }

// newInformerCache builds a cache holding at least target bytes of live
// heap: it measures what a first batch of objects holds and adds objects
// until the live heap (liveHeap, pending_test.go) has grown by target.
func newInformerCache(target uint64) *informerCache {
	c := &informerCache{objects: map[string]*cachedObject{}}
	base := liveHeap()
	const sample = 2048
	c.fill(sample)
	for {
		grown := liveHeap() - base
		if grown >= target {
			c.bytes = grown
			return c
		}
		perObject := max(grown/uint64(len(c.objects)), 1)
		c.fill(int((target-grown)/perObject) + sample)
	}
}

// fill adds n objects to the cache.
func (c *informerCache) fill(n int) {
	for range n {
		i := len(c.objects)
		id := strconv.Itoa(i)
		ns := "namespace-" + strconv.Itoa(i%97)
		o := &cachedObject{
			Namespace:       ns,
			Name:            "object-" + id,
			UID:             "5f0c9a3e-1b2d-4c5e-8f90-" + id,
			ResourceVersion: strconv.Itoa(1000000 + i),
			Labels: map[string]string{
				"app.kubernetes.io/name":     "app-" + strconv.Itoa(i%31),
				"app.kubernetes.io/instance": "instance-" + id,
				"pod-template-hash":          strconv.FormatInt(int64(i)*7919, 16),
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"object-` + id + `"}}`,
				"example.com/revision":                             strconv.Itoa(i % 13),
			},
			OwnerReferences: []*ownerReference{{Kind: "ReplicaSet", Name: "owner-" + strconv.Itoa(i/3), UID: "owner-uid-" + strconv.Itoa(i/3)}},
			Containers: []container{
				{
					Name:  "main",
					Image: "registry.example.com/app:v" + strconv.Itoa(i%5),
					Args:  []string{"--id=" + id, "--namespace=" + ns, "--verbose"},
					Env: []envVar{
						{"POD_NAME", "object-" + id}, {"POD_NAMESPACE", ns},
						{"REPLICA", strconv.Itoa(i % 3)}, {"MODE", "production"},
					},
				},
				{
					Name:  "sidecar",
					Image: "registry.example.com/proxy:v1",
					Args:  []string{"--upstream=127.0.0.1:8080", "--id=" + id},
					Env:   []envVar{{"PROXY_ID", id}},
				},
			},
		}
		c.objects[ns+"/"+o.Name] = o
	}
}

// checkTenthSampled verifies that about one attempt in ten was sampled,
// each with its three spans ended, and that the histograms counted every
// op. The bounds are more than seven standard deviations from 10% for the
// wiring test's op count, so a fair sampler does not miss them.
func checkTenthSampled(t *testing.T, name string, ops int) {
	t.Helper()
	if got := decisions[name].linkedRoots.Load(); got < int64(ops) {
		t.Errorf("%s: %d linked root spans started after %d ops, want one per op", name, got, ops)
	}
	ended := spanCount[name].ended.Load()
	if ended%3 != 0 || ended < int64(3*ops/20) || ended > int64(3*ops/5) {
		t.Errorf("%s: %d spans ended after %d ops, want 3 for each of about %d sampled attempts", name, ended, ops, ops/10)
	}
	checkOTelHistograms(t, name, ops)
}

// TestHeapWiring builds an informer cache of 16 MB and checks that it
// holds that much live heap, then runs each heap variant for a few thousand
// steps: Get must hand back the key just added and the variant's check must
// pass.
func TestHeapWiring(t *testing.T) {
	const target = 16 << 20
	cache := newInformerCache(target)
	if cache.bytes < target || cache.bytes > 2*target {
		t.Errorf("the cache holds %d bytes of live heap, want %d to %d", cache.bytes, target, 2*target)
	}
	if held := liveHeap(); held < target {
		t.Errorf("live heap %d bytes with the cache, want at least %d", held, target)
	}
	runtime.KeepAlive(cache)

	for _, v := range heapVariants {
		t.Run(v.name, func(t *testing.T) {
			checkSteps(t, v, "wiring-heap-"+v.name, 4000)
		})
	}
}
