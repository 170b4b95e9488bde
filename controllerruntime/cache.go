package controllerruntime

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// Cache returns the objects of obj's kind in a manager's cache c
// (mgr.GetCache()), for otelqueue.Sizer's Caches: the Sizer counts the
// memory per object of the informer caches from them. It reads the
// informer of that kind, which a controller that watches the kind (For,
// Owns, Watches) has: give it those kinds; for another kind the cache
// would start an informer, as any read of it does. Until the informer is
// made, and where the cache's informer does not expose its store, it lists
// nothing.
func Cache(c cache.Cache, obj client.Object) otelqueue.Cache {
	return &cachedObjects{cache: c, obj: obj}
}

type cachedObjects struct {
	cache cache.Cache
	obj   client.Object
}

// List implements otelqueue.Cache.
func (c *cachedObjects) List() []any {
	if isNil(c.cache) || isNil(c.obj) {
		return nil
	}
	inf, err := c.cache.GetInformer(context.Background(), c.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil
	}
	si, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil
	}
	st := si.GetStore()
	if isNil(st) {
		return nil // controller-runtime's informertest fakes have none
	}
	return st.List()
}
