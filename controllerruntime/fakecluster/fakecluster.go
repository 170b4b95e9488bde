// Package fakecluster runs a controller-runtime manager's cache on
// client-go's fake clientset instead of an API server, so that controllers
// built with For(), Owns() and Watches() (whose sources are the manager's
// informers) run in tests, benchmarks and the example's embedded cluster.
//
// The cache's informers come from a client-go SharedInformerFactory over
// the clientset: real informers, listing and watching the fake's object
// tracker. Only typed objects of client-go's scheme are served (not
// unstructured or metadata-only ones), with no resync, and each type by one
// informer of every namespace: a cache restricted to namespaces
// (cache.Options.DefaultNamespaces) works with one namespace, whose objects
// are then all the clientset should hold.
// The manager's own client still sends its writes to the rest.Config's host:
// write through the clientset instead.
package fakecluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// staticMapper returns a static RESTMapper for the types of client-go's scheme,
// which needs no discovery (so no API server): one meta.DefaultRESTMapper
// with the scopes of apimachinery's testrestmapper, whose lookups are
// cheaper than that mapper's search through one mapper per group.
func staticMapper() meta.RESTMapper {
	scheme := clientgoscheme.Scheme
	scopes := testrestmapper.TestOnlyStaticRESTMapper(scheme)
	m := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
	for gvk := range scheme.AllKnownTypes() {
		mapping, err := scopes.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil || strings.HasSuffix(gvk.Kind, "List") {
			continue // options and list types
		}
		m.Add(gvk, mapping.Scope)
	}
	return m
}

// ManagerOptions returns opts with a static REST mapper for the types of
// client-go's scheme (no discovery) and its cache's informers served by cs;
// the result's Cache alone serves cache.New the same way. Pass the result to
// manager.New with a rest.Config that is never dialled, such as
// &rest.Config{Host: "http://127.0.0.1:1"}.
func ManagerOptions(cs kubernetes.Interface, opts manager.Options) manager.Options {
	opts.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return staticMapper(), nil }
	opts.Cache = cacheOptions(cs, opts.Cache)
	return opts
}

// cacheOptions returns opts whose informers list and watch cs. It sets
// the scheme (client-go's) and the mapper (staticMapper) when opts has none.
func cacheOptions(cs kubernetes.Interface, opts cache.Options) cache.Options {
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	if opts.Mapper == nil {
		opts.Mapper = staticMapper()
	}
	scheme, mapper := opts.Scheme, opts.Mapper
	factory := informers.NewSharedInformerFactory(cs, 0)
	opts.NewInformer = func(_ toolscache.ListerWatcher, obj runtime.Object, _ time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		inf, err := informerFor(factory, scheme, mapper, obj)
		if err != nil {
			// An informer that reports why it cannot list: the manager
			// logs it, and its cache never syncs.
			return toolscache.NewSharedIndexInformer(failing(err), obj, 0, indexers)
		}
		return inf
	}
	return opts
}

func informerFor(factory informers.SharedInformerFactory, scheme *runtime.Scheme, mapper meta.RESTMapper, obj runtime.Object) (toolscache.SharedIndexInformer, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, fmt.Errorf("fakecluster: %T: %w", obj, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("fakecluster: %v: %w", gvk, err)
	}
	gi, err := factory.ForResource(mapping.Resource)
	if err != nil {
		return nil, fmt.Errorf("fakecluster: %v is not served by client-go's informers: %w", mapping.Resource, err)
	}
	return gi.Informer(), nil
}

// failing is a ListerWatcher whose calls all fail with err.
func failing(err error) toolscache.ListerWatcher {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, err },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, err
		},
	}
}
