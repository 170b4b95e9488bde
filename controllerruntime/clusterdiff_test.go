package controllerruntime_test

// What the fake clientset does differently from a real kube-apiserver (as
// envtest runs it: no controller-manager, so no namespace controller, no
// garbage collector, no kube-root-ca.crt publisher), each behaviour stated
// for both: the tests that run on both account for these, and a change of
// either side shows up here first.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// TestFakeClusterObjectIdentity: the fake stores the UID it is given, and
// sets no UID, resourceVersion or creationTimestamp.
func TestFakeClusterObjectIdentity(t *testing.T) { testObjectIdentity(t, fakeCluster(t)) }

// TestAPIServerObjectIdentity: the API server replaces the UID it is given
// by its own, and sets resourceVersion and creationTimestamp.
func TestAPIServerObjectIdentity(t *testing.T) { testObjectIdentity(t, apiServerCluster(t)) }

func testObjectIdentity(t *testing.T, c *cluster) {
	ctx := context.Background()
	cms := c.cs.CoreV1().ConfigMaps(c.namespace)
	asked, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "asked", UID: "uid-asked"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unasked, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unasked"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range []*corev1.ConfigMap{asked, unasked} {
		stored, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if stored.UID != cm.UID || stored.ResourceVersion != cm.ResourceVersion {
			t.Errorf("%s: created with UID %q, resourceVersion %q; stored with %q, %q", cm.Name, cm.UID, cm.ResourceVersion, stored.UID, stored.ResourceVersion)
		}
	}
	if c.real {
		if asked.UID == "uid-asked" || asked.UID == "" || unasked.UID == "" || asked.UID == unasked.UID {
			t.Errorf("API server: UIDs %q (asked uid-asked) and %q, want two of its own", asked.UID, unasked.UID)
		}
		for _, cm := range []*corev1.ConfigMap{asked, unasked} {
			if cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() {
				t.Errorf("API server: %s has resourceVersion %q, creationTimestamp %v; want both set",
					cm.Name, cm.ResourceVersion, cm.CreationTimestamp)
			}
		}
		if asked.ResourceVersion == unasked.ResourceVersion {
			t.Errorf("API server: both objects have resourceVersion %q", asked.ResourceVersion)
		}
		return
	}
	if asked.UID != "uid-asked" || unasked.UID != "" {
		t.Errorf("fake: UIDs %q (asked uid-asked) and %q (none asked), want them as given", asked.UID, unasked.UID)
	}
	for _, cm := range []*corev1.ConfigMap{asked, unasked} {
		if cm.ResourceVersion != "" || !cm.CreationTimestamp.IsZero() {
			t.Errorf("fake: %s has resourceVersion %q, creationTimestamp %v; want neither set",
				cm.Name, cm.ResourceVersion, cm.CreationTimestamp)
		}
	}
}

// TestFakeClusterResourceVersion: the fake keeps the resourceVersion an
// update gives it, made up or empty, and sends a watch event for an update
// that changes nothing.
func TestFakeClusterResourceVersion(t *testing.T) { testResourceVersion(t, fakeCluster(t)) }

// TestAPIServerResourceVersion: the API server rejects an update whose
// resourceVersion is not the stored one (409 Conflict), sets a new one on
// every change, and neither writes nor sends a watch event for an update
// that changes nothing.
func TestAPIServerResourceVersion(t *testing.T) { testResourceVersion(t, apiServerCluster(t)) }

func testResourceVersion(t *testing.T, c *cluster) {
	ctx := context.Background()
	cms := c.cs.CoreV1().ConfigMaps(c.namespace)
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "versions"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// An update that changes nothing.
	same, err := cms.Update(ctx, created.DeepCopy(), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update with no change: %v", err)
	}
	if same.ResourceVersion != created.ResourceVersion {
		t.Errorf("update with no change: resourceVersion %q, was %q; want it kept", same.ResourceVersion, created.ResourceVersion)
	}
	// A change, with the resourceVersion read.
	changed := same.DeepCopy()
	changed.Data = map[string]string{"step": "changed"}
	changed, err = cms.Update(ctx, changed, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	// A change, with a made-up resourceVersion.
	madeUp := changed.DeepCopy()
	madeUp.Data = map[string]string{"step": "made-up"}
	madeUp.ResourceVersion = "424242"
	madeUpResult, madeUpErr := cms.Update(ctx, madeUp, metav1.UpdateOptions{})
	// The end of the events to look at.
	if err := cms.Delete(ctx, "versions", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	events := watchUntilDeleted(t, w)

	if c.real {
		if changed.ResourceVersion == same.ResourceVersion {
			t.Errorf("API server: update kept resourceVersion %q, want a new one", changed.ResourceVersion)
		}
		if !apierrors.IsConflict(madeUpErr) {
			t.Errorf("API server: update with a made-up resourceVersion: %v, want 409 Conflict", madeUpErr)
		}
		if want := "ADDED{} MODIFIED{changed} DELETED{changed}"; events != want {
			t.Errorf("API server: watch events %s, want %s (none for the update with no change)", events, want)
		}
		return
	}
	if changed.ResourceVersion != same.ResourceVersion {
		t.Errorf("fake: update changed resourceVersion %q to %q, want it kept", same.ResourceVersion, changed.ResourceVersion)
	}
	if madeUpErr != nil || madeUpResult.ResourceVersion != "424242" {
		t.Errorf("fake: update with a made-up resourceVersion: %v, resourceVersion %q; want it accepted and stored", madeUpErr, madeUpResult.ResourceVersion)
	}
	if want := "ADDED{} MODIFIED{} MODIFIED{changed} MODIFIED{made-up} DELETED{made-up}"; events != want {
		t.Errorf("fake: watch events %s, want %s (one for the update with no change)", events, want)
	}
}

// watchUntilDeleted returns the events of w up to the first DELETED, as
// TYPE{step} (the ConfigMap's "step" value), space separated.
func watchUntilDeleted(t *testing.T, w watch.Interface) string {
	t.Helper()
	var out []string
	for {
		ev := testutil.Receive(t, w.ResultChan(), "a watch event")
		if ev.Object == nil { // the channel was closed
			t.Fatalf("the watch ended after %q", out)
		}
		cm, isCM := ev.Object.(*corev1.ConfigMap)
		if !isCM {
			t.Fatalf("watch event %s of a %T: %v", ev.Type, ev.Object, ev.Object)
		}
		out = append(out, string(ev.Type)+"{"+cm.Data["step"]+"}")
		if ev.Type == watch.Deleted {
			return strings.Join(out, " ")
		}
	}
}

// TestFakeClusterNamespaces: the fake holds no object at first, not even a
// namespace; it takes objects in namespaces that do not exist, ignores
// generateName, applies no defaults, and deletes a namespace at once.
func TestFakeClusterNamespaces(t *testing.T) { testNamespaces(t, fakeCluster(t)) }

// TestAPIServerNamespaces: the API server holds objects of its own (in
// kube-system), but none in a new namespace (no kube-root-ca.crt); it
// rejects objects in namespaces that do not exist, generates names, sets a
// new namespace Active with the kubernetes finalizer, and, with no namespace
// controller in envtest, keeps a deleted namespace Terminating for ever,
// rejecting new objects in it.
func TestAPIServerNamespaces(t *testing.T) { testNamespaces(t, apiServerCluster(t)) }

func testNamespaces(t *testing.T, c *cluster) {
	ctx := context.Background()
	nss := c.cs.CoreV1().Namespaces()
	system, err := c.cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := c.cs.CoreV1().ConfigMaps(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, defaultErr := nss.Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
	nowhere := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lost"}}
	_, nowhereErr := c.cs.CoreV1().ConfigMaps(c.namespace+"-nowhere").Create(ctx, nowhere, metav1.CreateOptions{})
	generated, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "otelqueue-generated-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doomed, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace + "-doomed"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, doomed.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	afterDelete, getErr := nss.Get(ctx, doomed.Name, metav1.GetOptions{})
	inDoomed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}
	_, inDoomedErr := c.cs.CoreV1().ConfigMaps(doomed.Name).Create(ctx, inDoomed, metav1.CreateOptions{})

	if len(mine.Items) != 0 {
		t.Errorf("the test's namespace %s holds %d ConfigMaps before the test wrote any, want 0", c.namespace, len(mine.Items))
	}
	if c.real {
		t.Cleanup(func() { _ = nss.Delete(context.Background(), generated.Name, metav1.DeleteOptions{}) })
		if len(system.Items) == 0 {
			t.Error("API server: no ConfigMap in kube-system, want its own (extension-apiserver-authentication)")
		}
		if defaultErr != nil {
			t.Errorf("API server: namespace default: %v", defaultErr)
		}
		if !apierrors.IsNotFound(nowhereErr) {
			t.Errorf("API server: create in a namespace that does not exist: %v, want 404 NotFound", nowhereErr)
		}
		if !strings.HasPrefix(generated.Name, "otelqueue-generated-") || len(generated.Name) == len("otelqueue-generated-") {
			t.Errorf("API server: generateName gave the name %q", generated.Name)
		}
		if doomed.Status.Phase != corev1.NamespaceActive || len(doomed.Spec.Finalizers) != 1 || doomed.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
			t.Errorf("API server: new namespace has phase %q, finalizers %v; want Active, [kubernetes]", doomed.Status.Phase, doomed.Spec.Finalizers)
		}
		if getErr != nil || afterDelete.DeletionTimestamp == nil || afterDelete.Status.Phase != corev1.NamespaceTerminating {
			t.Errorf("API server: deleted namespace: %v; want it still there, Terminating", getErr)
		}
		if !apierrors.IsForbidden(inDoomedErr) {
			t.Errorf("API server: create in a Terminating namespace: %v, want 403 Forbidden", inDoomedErr)
		}
		return
	}
	if len(system.Items) != 0 {
		t.Errorf("fake: %d ConfigMaps in kube-system, want 0", len(system.Items))
	}
	if !apierrors.IsNotFound(defaultErr) {
		t.Errorf("fake: namespace default: %v, want 404 NotFound (no namespace exists)", defaultErr)
	}
	if nowhereErr != nil {
		t.Errorf("fake: create in a namespace that does not exist: %v, want it accepted", nowhereErr)
	}
	if generated.Name != "" {
		t.Errorf("fake: generateName gave the name %q, want none (the fake ignores generateName)", generated.Name)
	}
	if doomed.Status.Phase != "" || len(doomed.Spec.Finalizers) != 0 {
		t.Errorf("fake: new namespace has phase %q, finalizers %v; want none (no defaults)", doomed.Status.Phase, doomed.Spec.Finalizers)
	}
	if !apierrors.IsNotFound(getErr) {
		t.Errorf("fake: deleted namespace: %v, want 404 NotFound at once", getErr)
	}
	if inDoomedErr != nil {
		t.Errorf("fake: create in a deleted namespace: %v, want it accepted", inDoomedErr)
	}
}

// TestFakeClusterValidation: the fake takes objects the API server rejects.
func TestFakeClusterValidation(t *testing.T) { testValidation(t, fakeCluster(t)) }

// TestAPIServerValidation: the API server rejects an owner reference
// without a UID or apiVersion and a name that is not a DNS subdomain, with
// 422 Invalid; like the fake, it takes an owner reference to an object that
// does not exist (TestAPIServerObjectLinkSourceOwns uses the UID the server
// gave the owner all the same).
func TestAPIServerValidation(t *testing.T) { testValidation(t, apiServerCluster(t)) }

func testValidation(t *testing.T, c *cluster) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		obj  *corev1.Secret
	}{
		{"owner reference without UID", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: "owner",
		}}}}},
		{"owner reference without apiVersion", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owned-too", OwnerReferences: []metav1.OwnerReference{{
			Kind: "ConfigMap", Name: "owner", UID: types.UID("uid-owner"),
		}}}}},
		{"name that is no DNS subdomain", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}},
	} {
		_, err := c.cs.CoreV1().Secrets(c.namespace).Create(ctx, tc.obj, metav1.CreateOptions{})
		if c.real && !apierrors.IsInvalid(err) {
			t.Errorf("API server: %s: %v, want 422 Invalid", tc.name, err)
		}
		if !c.real && err != nil {
			t.Errorf("fake: %s: %v, want it accepted", tc.name, err)
		}
	}
	// Neither checks that the owner exists, nor, with no garbage collector,
	// ever deletes an object whose owner does not: a UID that is not the
	// owner's goes unnoticed on both.
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orphan", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "nobody", UID: types.UID("uid-nobody"),
	}}}}
	if _, err := c.cs.CoreV1().Secrets(c.namespace).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Errorf("owner reference to an object that does not exist: %v, want it accepted", err)
	}
}

// TestFakeClusterInformerSync: an informer over the fake fills its cache
// with a list, then watches (the fake says it does not support watch-list).
func TestFakeClusterInformerSync(t *testing.T) { testInformerSync(t, fakeCluster(t)) }

// TestAPIServerInformerSync: an informer over the API server fills its
// cache with a single watch-list request (a watch with sendInitialEvents,
// client-go's WatchListClient, on by default), and never lists.
func TestAPIServerInformerSync(t *testing.T) { testInformerSync(t, apiServerCluster(t)) }

func testInformerSync(t *testing.T, c *cluster) {
	var (
		mu       sync.Mutex
		requests []string // "list", "watch" or "watch-list", in order
	)
	record := func(kind string) {
		mu.Lock()
		requests = append(requests, kind)
		mu.Unlock()
	}
	cs := c.cs
	if c.real {
		cfg := rest.CopyConfig(c.config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				q := r.URL.Query()
				switch {
				case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
					record("watch-list")
				case q.Get("watch") == "true":
					record("watch")
				default:
					record("list")
				}
				return rt.RoundTrip(r)
			})
		})
		var err error
		if cs, err = kubernetes.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
	} else {
		fcs := c.cs.(*fake.Clientset)
		fcs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			record("list")
			return false, nil, nil
		})
		fcs.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
			record("watch")
			return false, nil, nil
		})
	}
	if _, err := cs.CoreV1().ConfigMaps(c.namespace).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "present"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	requests = nil // the create's
	mu.Unlock()

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(c.namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	defer factory.Shutdown()
	defer close(stop)
	want := []string{"list", "watch"}
	if c.real {
		want = []string{"watch-list"}
	}
	testutil.WaitFor(t, "the informer to sync and watch", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return informer.HasSynced() && len(requests) >= len(want)
	})
	if keys := informer.GetStore().ListKeys(); len(keys) != 1 || keys[0] != c.key("present") {
		t.Errorf("the informer holds %q, want %s", keys, c.key("present"))
	}
	mu.Lock()
	got := slices.Clone(requests)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("the informer's requests: %q, want %q", got, want)
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
