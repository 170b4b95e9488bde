package controllerruntime

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/traceparent"
)

// ObjectLinkSource returns an otelqueue.LinkSource that links each attempt
// to the writer of the object its request names, so that a controller built
// with For() (whose handler enqueues with no trace context) still gets
// attempts linked to the change that caused them:
//
//	otq := controllerruntime.New(otelqueue.WithLinkSource(
//		controllerruntime.ObjectLinkSource(mgr.GetCache(), &corev1.ConfigMap{})))
//	err := builder.ControllerManagedBy(mgr).
//		For(&corev1.ConfigMap{}).
//		WithOptions(controller.Options{NewQueue: otq.NewQueue}).
//		Complete(otq.Reconciler(r))
//
// For every attempt it looks the request's namespace and name up in c (the
// manager's cache: the informer's in-memory store, never an API call) as an
// object of obj's type (the type given to For()), and returns the span
// context of its otelqueue.github.io/traceparent annotation, read by an
// traceparent.Reader built with opts: by default untrusted (a link
// whose sampled flag is cleared), and a malformed annotation is ignored and
// counted in workqueue.traceparent.invalid. An object that is not in the
// cache (deleted), has no annotation or a malformed one gives no link and no
// error. Before the cache's informer for obj's type has synced, and after it
// stopped, there is no link and the lookup does not wait.
//
// The link points to the last write of the object the request names. For
// requests enqueued by Owns() (an owned object changed) that is the owner's
// last writer, not the writer of the owned object: wrap
// handler.EnqueueRequestForOwner in WithTraceContext in a Watches() to link
// to the latter too.
//
// obj's type should be one the manager already watches (the For() type):
// otherwise the first lookup starts an informer for it, which lists and
// watches that type. Objects are read, never copied nor changed: from the
// informer's store, or with the cache's Get (client.UnsafeDisableDeepCopy)
// when its informer does not expose its store (a cache restricted to
// namespaces, cache.Options.DefaultNamespaces), which costs more. A nil c or obj is
// reported to otel.Handle and gives a source that never links.
func ObjectLinkSource(c cache.Cache, obj client.Object, opts ...traceparent.ReaderOption) otelqueue.LinkSource[reconcile.Request] {
	return TypedObjectLinkSource(c, obj, func(r reconcile.Request) types.NamespacedName { return r.NamespacedName }, opts...)
}

// TypedObjectLinkSource is ObjectLinkSource for typed controllers: name
// gives the namespace and name of the object a request is about.
func TypedObjectLinkSource[request comparable](c cache.Cache, obj client.Object, name func(request) types.NamespacedName, opts ...traceparent.ReaderOption) otelqueue.LinkSource[request] {
	if isNil(c) || isNil(obj) || name == nil {
		otel.Handle(errors.New("otelqueue/controllerruntime: ObjectLinkSource needs the manager's cache (mgr.GetCache()), an object of the For() type and, when typed, a name function; the attempts will not be linked to their writers"))
		return otelqueue.LinkSourceFunc[request](func(context.Context, request) (trace.SpanContext, error) {
			return trace.SpanContext{}, nil
		})
	}
	return &objectLinkSource[request]{cache: c, obj: obj, name: name, reader: traceparent.NewReader(opts...)}
}

type objectLinkSource[request comparable] struct {
	cache  cache.Cache
	obj    client.Object // the type to look up, never filled
	name   func(request) types.NamespacedName
	reader *traceparent.Reader

	informer atomic.Pointer[informerRef] // the last informer found for obj's type
}

type informerRef struct{ cache.Informer }

// storeInformer is an informer that exposes its store: client-go's
// SharedIndexInformer, which controller-runtime's informer cache returns.
type storeInformer interface {
	GetStore() toolscache.Store
}

// SpanContext implements otelqueue.LinkSource.
func (s *objectLinkSource[request]) SpanContext(ctx context.Context, req request) (trace.SpanContext, error) {
	inf, err := s.syncedInformer(ctx)
	if inf == nil || err != nil {
		return trace.SpanContext{}, err
	}
	nn := s.name(req)
	if si, ok := inf.Informer.(storeInformer); ok && !isNil(si.GetStore()) {
		key := nn.Name
		if nn.Namespace != "" {
			key = nn.Namespace + "/" + nn.Name
		}
		item, exists, err := si.GetStore().GetByKey(key)
		if err != nil || !exists {
			return trace.SpanContext{}, err
		}
		obj, ok := item.(traceparent.Annotated)
		if !ok {
			return trace.SpanContext{}, nil // a tombstone, or a type with no metadata
		}
		return s.reader.SpanContext(obj), nil
	}
	out, ok := s.obj.DeepCopyObject().(client.Object)
	if !ok {
		return trace.SpanContext{}, nil
	}
	// Read-only: the annotation is all that is read.
	if err := s.cache.Get(ctx, nn, out, client.UnsafeDisableDeepCopy); err != nil {
		var notStarted *cache.ErrCacheNotStarted
		if apierrors.IsNotFound(err) || errors.As(err, &notStarted) {
			return trace.SpanContext{}, nil
		}
		return trace.SpanContext{}, err
	}
	return s.reader.SpanContext(out), nil
}

// syncedInformer returns the informer of obj's type when it has synced and
// is not stopped, nil otherwise; it never waits for it to sync.
func (s *objectLinkSource[request]) syncedInformer(ctx context.Context) (*informerRef, error) {
	inf := s.informer.Load()
	if inf == nil || inf.IsStopped() {
		// First use, or the informer was stopped (the manager stopped, or
		// it was removed and may have been replaced).
		i, err := s.cache.GetInformer(ctx, s.obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		inf = &informerRef{i}
		s.informer.Store(inf)
	}
	if inf.IsStopped() || !inf.HasSynced() {
		return nil, nil
	}
	return inf, nil
}
