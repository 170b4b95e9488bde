package controllerruntime

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
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
// made it lists nothing. An informer that does not expose its store (a
// cache restricted to namespaces, cache.Options.DefaultNamespaces, has one
// per namespace behind one) is followed with an event handler from the
// first List on: what its stores hold, kept by UID.
func Cache(c cache.Cache, obj client.Object) otelqueue.Cache {
	return &cachedObjects{cache: c, obj: obj}
}

type cachedObjects struct {
	cache cache.Cache
	obj   client.Object

	mu       sync.Mutex
	followed cache.Informer    // the informer the handler follows; nil before
	objects  map[types.UID]any // what followed holds, by UID
	handler  toolscache.ResourceEventHandlerRegistration
}

// List implements otelqueue.Cache.
func (c *cachedObjects) List() []any {
	if isNil(c.cache) || isNil(c.obj) {
		return nil
	}
	inf, err := c.cache.GetInformer(context.Background(), c.obj, cache.BlockUntilSynced(false))
	if err != nil || isNil(inf) {
		return nil
	}
	if si, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
		st := si.GetStore()
		if isNil(st) {
			return nil // controller-runtime's informertest fakes have none
		}
		return st.List()
	}
	return c.follow(inf)
}

// follow lists what inf holds as its event handler saw it, adding the
// handler on the first call (the informer replays what it holds to a new
// handler as adds, so the first lists may be short while it does). A cache
// restricted to namespaces returns a new informer for the same stores on
// each call: the one followed is kept until it stops (the cache removed
// it), then inf is followed.
func (c *cachedObjects) follow(inf cache.Informer) []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.followed == nil || c.followed.IsStopped() {
		if c.followed != nil {
			_ = c.followed.RemoveEventHandler(c.handler)
		}
		c.followed, c.objects, c.handler = inf, map[types.UID]any{}, nil
		h, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { c.set(inf, o, true) },
			UpdateFunc: func(_, o any) { c.set(inf, o, true) },
			DeleteFunc: func(o any) { c.set(inf, o, false) },
		})
		if err != nil {
			c.followed = nil
			return nil
		}
		c.handler = h
	}
	list := make([]any, 0, len(c.objects))
	for _, o := range c.objects {
		list = append(list, o)
	}
	return list
}

// set records o as held by inf (or gone, when !held); a handler of an
// informer no longer followed changes nothing.
func (c *cachedObjects) set(inf cache.Informer, o any, held bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.followed != inf {
		return
	}
	if held {
		c.objects[m.GetUID()] = o
	} else {
		delete(c.objects, m.GetUID())
	}
}
