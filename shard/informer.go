package shard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Contains reports whether the shard owns obj: a metav1.Object, or the
// tombstone (toolscache.DeletedFinalStateUnknown) of one. It is a
// FilteringResourceEventHandler's FilterFunc. Anything else is owned by
// every shard (it has no UID or namespace to hash), as is every object of
// a nil Shard.
func (s *Shard) Contains(obj any) bool {
	if s == nil {
		return true
	}
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return true
	}
	return s.owns(string(m.GetUID()), m.GetNamespace())
}

// TweakListOptions sets the shard's selector on o: the list and watch ask
// the server for the shard's objects only. It is client-go's
// informers.WithTweakListOptions argument. A nil Shard leaves o as it is.
func (s *Shard) TweakListOptions(o *metav1.ListOptions) {
	if s == nil || o == nil {
		return
	}
	o.ShardSelector = s.selector
}

// ServerFilters lists with the shard's selector and a limit of one (list:
// a client's List of any resource, such as ConfigMaps) and reports whether
// the server filtered by it: the list's ShardInfo echoes the shard's
// ranges. A server without the ShardedListAndWatch gate (or older than
// Kubernetes 1.36) ignores the selector and sends every object: it answers
// false, and a replica must then filter on the client (Contains, or
// NewInformer, which always do) or refuse to start. Informers cannot tell:
// their watch-list stream carries no ShardInfo.
func (s *Shard) ServerFilters(ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) (bool, error) {
	if s == nil {
		return false, errors.New("shard: ServerFilters on a nil Shard: there is no selector to check")
	}
	if list == nil {
		return false, errors.New("shard: ServerFilters with a nil list function: pass one that lists a resource, such as ConfigMaps")
	}
	o := metav1.ListOptions{Limit: 1}
	s.TweakListOptions(&o)
	obj, err := list(ctx, o)
	if err != nil {
		return false, fmt.Errorf("shard: listing with selector %q: %w", s.selector, err)
	}
	l, ok := obj.(interface{ GetShardInfo() *metav1.ShardInfo })
	if !ok {
		return false, fmt.Errorf("shard: the list function returned %T, which has no ListMeta to read ShardInfo from: list a typed resource", obj)
	}
	info := l.GetShardInfo()
	if info == nil {
		return false, nil
	}
	// The server re-formats the selector it echoes: compare ranges.
	echoed, err := Parse(info.Selector)
	if err != nil {
		return false, fmt.Errorf("shard: the server echoed a selector this package cannot read: %w", err)
	}
	if !s.same(echoed) {
		return false, fmt.Errorf("shard: asked for %q, the server answered for %q", s.selector, info.Selector)
	}
	return true, nil
}

// same reports whether s and o select the same ranges of the same field.
func (s *Shard) same(o *Shard) bool {
	if s.field != o.field || len(s.ranges) != len(o.ranges) {
		return false
	}
	for i := range s.ranges {
		if s.ranges[i] != o.ranges[i] {
			return false
		}
	}
	return true
}

// NewInformer is toolscache.NewSharedIndexInformer over lw with the shard's
// selector on its list and watch, and the shard's objects only let through
// on the client (so it holds on a server that ignores the selector). It is
// controller-runtime's cache.Options.NewInformer:
//
//	opts.Cache.NewInformer = s.NewInformer
//
// A nil Shard is NewSharedIndexInformer itself.
func (s *Shard) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if s != nil && lw != nil {
		lw = &listerWatcher{s: s, lw: toolscache.ToListerWatcherWithContext(lw), inner: lw}
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// listerWatcher sets the selector on lw's requests and filters what they
// return.
type listerWatcher struct {
	s     *Shard
	lw    toolscache.ListerWatcherWithContext
	inner toolscache.ListerWatcher
}

func (l *listerWatcher) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *listerWatcher) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

func (l *listerWatcher) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.s.TweakListOptions(&o)
	obj, err := l.lw.ListWithContext(ctx, o)
	if err != nil {
		return obj, err
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return obj, err
	}
	kept := items[:0]
	for _, it := range items {
		if l.s.Contains(it) {
			kept = append(kept, it)
		}
	}
	if len(kept) == len(items) {
		return obj, nil
	}
	return obj, meta.SetList(obj, kept)
}

func (l *listerWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	l.s.TweakListOptions(&o)
	w, err := l.lw.WatchWithContext(ctx, o)
	if err != nil || w == nil {
		return w, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		switch e.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			return e, l.s.Contains(e.Object)
		}
		return e, true // bookmarks and errors
	}), nil
}

// IsWatchListSemanticsUnSupported passes on what the wrapped ListerWatcher
// says of client-go's watch-list stream.
func (l *listerWatcher) IsWatchListSemanticsUnSupported() bool {
	u, ok := l.inner.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}
