package shard_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/otelqueue/otelqueue/shard"
)

// Replica 1 of 3 of a client-go controller: the informers ask for its
// shard, a start-up list checks that the server filters (here the fake
// clientset, which like a server without the gate does not), and the
// handler lets only the shard's objects through.
func Example() {
	ctx := context.Background()
	cs := fake.NewClientset()
	s, err := shard.New(1, 3, "uid")
	if err != nil {
		panic(err)
	}
	filters, err := s.ServerFilters(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().ConfigMaps("").List(ctx, o)
	})
	if err != nil {
		panic(err)
	}
	if !filters {
		// Refuse to start, or filter on the client, as the user chose.
		fmt.Println("the server ignores the selector: filtering on the client")
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(s.TweakListOptions))
	_, _ = factory.Core().V1().ConfigMaps().Informer().AddEventHandler(toolscache.FilteringResourceEventHandler{
		FilterFunc: s.Contains,
		Handler:    toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { /* enqueue */ }},
	})
	fmt.Println(s)
	// Output:
	// the server ignores the selector: filtering on the client
	// shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')
}

// A controller-runtime manager's cache on shard 0 of 2: its informers list
// and watch with the selector, and let through the shard's objects only.
func ExampleShard_NewInformer() {
	s, err := shard.New(0, 2, "namespace")
	if err != nil {
		panic(err)
	}
	// mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: cache.Options{NewInformer: s.NewInformer}})
	inf := s.NewInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	fmt.Println(inf != nil, s.By(), s.Share())
	// Output: true namespace 0.5
}

// Explicit ranges: while two shards become three, replica 0 can own its
// old range and its new one.
func ExampleParse() {
	s, err := shard.Parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || " +
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')")
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Share())
	_, err = shard.Parse("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
	fmt.Println(err)
	// Output:
	// 0.5
	// shard: "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')": start: "0x0" must be 0x and 16 hex digits (or 0x10000000000000000 for 2^64)
}
