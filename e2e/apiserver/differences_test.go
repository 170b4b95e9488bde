package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// TestFakeClusterDifferences pins each difference found between client-go's
// fake clientset (NewSimpleClientset, what the examples' embedded cluster
// and fast unit tests run on) and a real API server: the same request on
// both, and what each answers. A change on either side fails here, so that
// what the fake-cluster tests cannot show stays written down.
func TestFakeClusterDifferences(t *testing.T) {
	ctx := context.Background()
	type clusters struct {
		fake, real kubernetes.Interface
		ns         string // exists on both
	}
	setup := func(t *testing.T) clusters {
		ns := shared.namespace(t, "otelqueue-differences")
		return clusters{fake: fake.NewSimpleClientset(), real: shared.client, ns: ns} //nolint:staticcheck // the examples' fake
	}
	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": "1"}}
	}

	// A reconcile that updates the object it read from its cache, after
	// someone else wrote it: the real API server refuses the stale
	// resourceVersion (409 Conflict, "the object has been modified", seen
	// in the controller-runtime example's log on the real control plane);
	// the fake's object tracker compares no resourceVersion and takes it.
	t.Run("stale update conflicts", func(t *testing.T) {
		c := setup(t)
		for _, side := range []struct {
			name string
			cs   kubernetes.Interface
			want func(error) bool
		}{
			{"fake", c.fake, func(err error) bool { return err == nil }},
			{"real", c.real, apierrors.IsConflict},
		} {
			cms := side.cs.CoreV1().ConfigMaps(c.ns)
			created, err := cms.Create(ctx, cm(c.ns, "stale"), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: create: %v", side.name, err)
			}
			stale := created.DeepCopy()
			if created.ResourceVersion == "" {
				// The fake sets none: give the copy one that can only be stale.
				stale.ResourceVersion = "1"
			}
			if _, err := cms.Patch(ctx, "stale", types.MergePatchType, []byte(`{"data":{"v":"2"}}`), metav1.PatchOptions{}); err != nil {
				t.Fatalf("%s: patch: %v", side.name, err)
			}
			stale.Data["v"] = "3"
			_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
			if !side.want(err) {
				t.Errorf("%s: update with the resourceVersion before a patch returned %v", side.name, err)
			}
		}
	})

	// Creating in a namespace that does not exist: the real API server's
	// NamespaceLifecycle admission refuses it (404); the fake stores it.
	t.Run("missing namespace", func(t *testing.T) {
		c := setup(t)
		const absent = "otelqueue-no-such-namespace"
		if _, err := c.fake.CoreV1().ConfigMaps(absent).Create(ctx, cm(absent, "x"), metav1.CreateOptions{}); err != nil {
			t.Errorf("fake: create in a namespace that does not exist: %v, want it stored", err)
		}
		if _, err := c.real.CoreV1().ConfigMaps(absent).Create(ctx, cm(absent, "x"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("real: create in a namespace that does not exist returned %v, want NotFound", err)
		}
	})

	// Object names: the real API server validates them (422 Invalid); the
	// fake takes any string.
	t.Run("invalid name", func(t *testing.T) {
		c := setup(t)
		const bad = "Not_A_DNS_Subdomain"
		if _, err := c.fake.CoreV1().ConfigMaps(c.ns).Create(ctx, cm(c.ns, bad), metav1.CreateOptions{}); err != nil {
			t.Errorf("fake: create %q: %v, want it stored", bad, err)
		}
		if _, err := c.real.CoreV1().ConfigMaps(c.ns).Create(ctx, cm(c.ns, bad), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("real: create %q returned %v, want Invalid", bad, err)
		}
	})

	// What the server fills in: the real one a UID, a resourceVersion and a
	// creation time; the fake none of them (the examples' embedded cluster
	// stamps resourceVersions itself, internal/examplecluster).
	t.Run("server-set metadata", func(t *testing.T) {
		c := setup(t)
		f, err := c.fake.CoreV1().ConfigMaps(c.ns).Create(ctx, cm(c.ns, "meta"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if f.UID != "" || f.ResourceVersion != "" || !f.CreationTimestamp.IsZero() {
			t.Errorf("fake: uid %q, resourceVersion %q, creationTimestamp %v; want none set", f.UID, f.ResourceVersion, f.CreationTimestamp)
		}
		r, err := c.real.CoreV1().ConfigMaps(c.ns).Create(ctx, cm(c.ns, "meta"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.UID == "" || r.ResourceVersion == "" || r.CreationTimestamp.IsZero() {
			t.Errorf("real: uid %q, resourceVersion %q, creationTimestamp %v; want all set", r.UID, r.ResourceVersion, r.CreationTimestamp)
		}
	})
}

// TestExampleMissingNamespace runs each example with -kubeconfig and
// -generate in a namespace that does not exist, which the fake cluster
// would have accepted: the example must stop at once with an error that
// names the namespace and says what to do, not run a controller that
// never sees an object.
func TestExampleMissingNamespace(t *testing.T) {
	kubeconfig := shared.kubeconfig(t, "otelqueue-example", "otelqueue:examples")
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			const absent = "otelqueue-absent"
			r := startExample(t, ex, shared.name, "-kubeconfig", kubeconfig, "-namespace", absent, "-generate")
			var err error
			select {
			case err = <-r.done:
				r.done <- err
			case <-time.After(time.Minute):
				t.Fatalf("%s still runs a minute after starting in a namespace that does not exist", ex.name)
			}
			out := strings.Join(r.log(), "\n")
			if err == nil || !strings.Contains(out, absent) || !strings.Contains(out, "kubectl create namespace "+absent) {
				t.Errorf("%s in a missing namespace exited with %v; want an error naming it and how to create it, got:\n%s", ex.name, err, out)
			}
		})
	}
}
