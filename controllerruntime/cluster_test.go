package controllerruntime_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/otelqueue/otelqueue/controllerruntime/fakecluster"
)

// cluster is where a test writes its objects and runs its manager: client-go's
// fake clientset (fakeCluster) or a real kube-apiserver (apiServerCluster).
// A test that runs on both takes a *cluster and is called by a TestXxx with
// the fake and a TestAPIServerXxx with the real one; where the two behave
// differently, it says what each does (c.real), and clusterdiff_test.go pins
// the difference.
type cluster struct {
	// real is true for a kube-apiserver, false for the fake clientset.
	real bool
	// cs writes and reads the cluster's objects. On the fake cluster it is
	// the only way in: the manager's own client would dial config.
	cs kubernetes.Interface
	// config is what manager.New gets: the API server's, or one that is
	// never dialled for the fake.
	config *rest.Config
	// namespace holds the test's objects: "default" on the fake, which
	// is the test's alone; on the API server, shared by every test of the
	// process, one created for the test and deleted when it ends.
	namespace string
	// managerOptions makes a manager's options run on the cluster.
	managerOptions func(manager.Options) manager.Options
}

// fakeCluster returns a cluster on a new fake clientset, whose managers
// have their cache served by it (fakecluster.ManagerOptions).
func fakeCluster(t testing.TB) *cluster {
	t.Helper()
	cs := fake.NewClientset()
	return &cluster{
		cs:        cs,
		config:    &rest.Config{Host: "http://127.0.0.1:1"},
		namespace: "default",
		managerOptions: func(opts manager.Options) manager.Options {
			return fakecluster.ManagerOptions(cs, opts)
		},
	}
}

// apiServerCluster returns a cluster on the test process's API server (see
// apiServerConfig: it skips the test without KUBEBUILDER_ASSETS), with a
// namespace of the test's own, deleted when the test ends. Its managers
// have controller-runtime's defaults (a RESTMapper from discovery, the
// client-go scheme) and a cache that lists and watches the test's
// namespace only: the server holds objects of its own (in kube-system) and
// those of the other tests, whose namespaces never go away (no namespace
// controller runs: TestAPIServerNamespaces). The cache is restricted by a
// field selector rather than cache.Options.DefaultNamespaces, so that its
// informers cover every namespace and expose their store, as the fake
// cluster's do: ObjectLinkSource reads the same way on both.
func apiServerCluster(t testing.TB) *cluster {
	t.Helper()
	cfg := apiServerConfig(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubernetes.NewForConfig: %v", err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "otelqueue-test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the test's namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the test's namespace %s: %v", ns.Name, err)
		}
	})
	inNamespace := fields.OneTermEqualSelector("metadata.namespace", ns.Name)
	return &cluster{
		real:      true,
		cs:        cs,
		config:    cfg,
		namespace: ns.Name,
		managerOptions: func(opts manager.Options) manager.Options {
			opts.Cache.DefaultFieldSelector = inNamespace
			return opts
		},
	}
}

// newManager returns a manager on c with opts (its metrics and health
// servers off), failing the test if it cannot be built.
func (c *cluster) newManager(t testing.TB, opts manager.Options) manager.Manager {
	t.Helper()
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	mgr, err := manager.New(c.config, c.managerOptions(opts))
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	return mgr
}

// key is the queue key of the object called name in the test's namespace.
func (c *cluster) key(name string) string {
	return types.NamespacedName{Namespace: c.namespace, Name: name}.String()
}

// controllerName returns name on the fake cluster and name with an
// "apiserver-" prefix on the real one: controller-runtime's metrics are
// global, so the two tests that share a body must not count in the same
// series.
func (c *cluster) controllerName(name string) string {
	if c.real {
		return "apiserver-" + name
	}
	return name
}
