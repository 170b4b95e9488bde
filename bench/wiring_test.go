package bench

import (
	"reflect"
	"testing"
	"time"
)

// These tests run with plain `go test` (and `make test`, with -race) and
// prove that every benchmark variant is what its name says; they run no
// benchmark.

// TestLifecycleWiring runs each lifecycle variant for a few steps: Get must
// hand back the key just added, and the variant's own check (its metrics
// moved, say) must pass.
func TestLifecycleWiring(t *testing.T) {
	for _, v := range lifecycleVariants {
		t.Run(v.name, func(t *testing.T) {
			checkSteps(t, v, "wiring-"+v.name, 200)
		})
	}
}

// checkSteps starts v's queue named name and runs ops steps: Get must hand
// back the key just added, and v's own check must pass.
func checkSteps(t *testing.T, v lifecycleVariant, name string, ops int) {
	t.Helper()
	keys := benchKeys(lifecycleKeys)
	step, stop := v.start(t, name)
	defer stop()
	for i := range ops {
		want := keys[i%lifecycleKeys]
		if got := step(want); got != want {
			t.Fatalf("step %d: Get handed out %q, want %q", i, got, want)
		}
	}
	if v.check != nil {
		v.check(t, name, ops)
	}
}

// TestCRMetricsProvider checks that clientgo-crprom's per-queue provider is
// controller-runtime's own.
func TestCRMetricsProvider(t *testing.T) {
	const want = "sigs.k8s.io/controller-runtime/pkg/internal/metrics"
	if got := reflect.TypeOf(crMetricsProvider()).PkgPath(); got != want {
		t.Fatalf("clientgo-crprom's MetricsProvider comes from %q, want %q", got, want)
	}
}

// TestBareHasNoMetrics checks that an unnamed client-go queue stays bare even
// though controller-runtime installed its provider globally.
func TestBareHasNoMetrics(t *testing.T) {
	step, stop := startQueue(newClientGoBare)(t, "")
	defer stop()
	for _, k := range benchKeys(10) {
		step(k)
	}
	got, err := crMetricCount("workqueue_adds_total", "")
	if err != nil {
		t.Fatal(err)
	}
	if got != 0 {
		t.Fatalf("an unnamed client-go queue counted %v adds in controller-runtime's registry; want none", got)
	}
}

// TestDelayedWiring runs BenchmarkDelayed's body for a few thousand ops per
// variant: every Get must return a key, no AddAfter may coalesce (the final
// drain must find exactly the delayedLag keys still delayed), and the queue
// must end empty.
func TestDelayedWiring(t *testing.T) {
	const ops = 3 * delayedKeySet
	keys := benchKeys(delayedKeySet)
	for _, v := range delayedVariants {
		t.Run(v.name, func(t *testing.T) {
			q := v.newQueue("")
			defer q.ShutDown()
			primeDelayed(q, keys)
			got := 0
			for i := range ops {
				j := i + delayedLag
				q.AddAfter(keys[j%delayedKeySet], delayedDelay(j))
				k, shutdown := q.Get()
				if shutdown {
					t.Fatalf("op %d: Get reported shutdown", i)
				}
				q.Done(k)
				got++
			}
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				drainDelayed(q, delayedLag)
			}()
			select {
			case <-drained:
			case <-time.After(10 * time.Second):
				t.Fatalf("the drain did not find %d keys: an AddAfter coalesced", delayedLag)
			}
			if n := q.Len(); n != 0 {
				t.Fatalf("%d keys left after the drain, want 0", n)
			}
		})
	}
}

// TestPendingWiring runs BenchmarkPending's bodies with 1000 pending keys:
// the fill must retain memory, the scheduler's ops must keep exactly n keys
// delayed, and client-go's sentinel must come out first.
func TestPendingWiring(t *testing.T) {
	const n = 1000
	t.Run("scheduler", func(t *testing.T) {
		p := newPendingScheduler(n)
		defer p.s.ShutDown()
		if perKey := p.fill(); perKey <= 0 {
			t.Errorf("B/pendingkey = %v, want > 0", perKey)
		}
		for i := range 2 * len(p.extra) {
			p.op(i)
		}
		if st := p.s.Stats(); st.Delayed != n || st.Depth != 0 || st.InFlight != 0 {
			t.Fatalf("after the ops: %+v, want %d delayed and nothing else", st, n)
		}
	})
	t.Run("clientgo", func(t *testing.T) {
		p := newPendingClientGo(n)
		defer p.q.ShutDown()
		if perKey := p.fill(); perKey <= 0 {
			t.Errorf("B/pendingkey = %v, want > 0", perKey)
		}
		if l := p.q.Len(); l != 0 {
			t.Fatalf("%d keys ready, want 0: all are an hour away", l)
		}
	})
}
