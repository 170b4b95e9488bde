package controllerruntime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// TestCache: the objects of a kind the controller watches, in the
// manager's cache, as a Sizer counts them; a Sizer given it counts them and
// sizes one; a nil cache or object lists nothing.
func TestCache(t *testing.T) {
	c := fakeCluster(t)
	var mgr manager.Manager
	startForController(t, c, "cache-configmaps", func(b *builder.Builder, m manager.Manager) *builder.Builder {
		mgr = m
		return b.For(&corev1.ConfigMap{})
	})
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: fmt.Sprint("cm-", i)}, Data: map[string]string{"k": "v"}}
		if _, err := c.cs.CoreV1().ConfigMaps(c.namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objects := controllerruntime.Cache(mgr.GetCache(), &corev1.ConfigMap{})
	testutil.WaitFor(t, "3 ConfigMaps in the cache", func() bool { return len(objects.List()) == 3 })
	if _, ok := objects.List()[0].(*corev1.ConfigMap); !ok {
		t.Errorf("listed a %T, want *corev1.ConfigMap", objects.List()[0])
	}
	sizer := &otelqueue.Sizer{Caches: []otelqueue.Cache{objects}}
	q := scheduler.New(scheduler.Config[string]{Name: "sized"})
	defer q.ShutDown()
	inst, err := otelqueue.Instrument(q, otelqueue.WithSizer(sizer))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	time.Sleep(1100 * time.Millisecond) // a span of a second
	if m := sizer.Recommend().Memory; m.Objects != 3 || m.PerObject == 0 {
		t.Errorf("the Sizer counts %d objects of %d bytes, want the 3 ConfigMaps", m.Objects, m.PerObject)
	}
	if got := controllerruntime.Cache(nil, &corev1.ConfigMap{}).List(); got != nil {
		t.Errorf("a nil cache lists %v", got)
	}
	if got := controllerruntime.Cache(mgr.GetCache(), nil).List(); got != nil {
		t.Errorf("a nil object lists %v", got)
	}
}

// TestAPIServerCacheNamespaced: a cache restricted to namespaces
// (cache.Options.DefaultNamespaces) has an informer per namespace behind
// one that exposes no store; Cache lists what those hold all the same:
// the objects of its namespaces, not of another, and not one deleted.
func TestAPIServerCacheNamespaced(t *testing.T) {
	c := apiServerCluster(t)
	ctx := context.Background()
	namespaces := []string{c.namespace}
	for range 2 {
		ns, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "otelqueue-test-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}) })
		namespaces = append(namespaces, ns.Name)
	}
	// Cached: the first two namespaces; the third is not.
	mgr, err := manager.New(c.config, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{namespaces[0]: {}, namespaces[1]: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	objects := controllerruntime.Cache(mgr.GetCache(), &corev1.ConfigMap{})
	if got := objects.List(); len(got) != 0 {
		t.Fatalf("before the manager started: %d objects", len(got))
	}
	mctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(mctx) }()
	defer stop() // on an early failure; the goroutine then ends with the manager
	for i, ns := range namespaces {
		for j := range 3 - i { // 3, 2 and 1 objects
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("cm-", j)}}
			if _, err := c.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	inCache := func(n int) func() bool {
		return func() bool {
			list := objects.List()
			for _, o := range list {
				if cm, ok := o.(*corev1.ConfigMap); !ok || cm.Namespace == namespaces[2] {
					t.Fatalf("listed %T %v, not a ConfigMap of the cached namespaces", o, o)
				}
			}
			return len(list) == n
		}
	}
	testutil.WaitFor(t, "the 5 ConfigMaps of the 2 cached namespaces", inCache(5))
	if err := c.cs.CoreV1().ConfigMaps(namespaces[1]).Delete(ctx, "cm-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "4 ConfigMaps once one is deleted", inCache(4))

	// Listed concurrently, then after the manager stopped: no panic, no
	// object it did not hold.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { objects.List() })
	}
	wg.Wait()
	stop()
	if err := testutil.Receive(t, stopped, "the manager to stop"); err != nil {
		t.Errorf("manager.Start: %v", err)
	}
	if got := objects.List(); len(got) > 4 {
		t.Errorf("after the manager stopped: %d objects listed, it held 4", len(got))
	}
}
