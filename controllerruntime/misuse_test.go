package controllerruntime_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
)

// TestFakeInformers: controller-runtime's informertest fake, which unit
// tests of controllers use, has informers without a store; the Sizer's
// Cache lists nothing from it and ObjectLinkSource reads the object
// through the cache instead, neither panics.
func TestFakeInformers(t *testing.T) {
	fake := &informertest.FakeInformers{}
	if got := controllerruntime.Cache(fake, &corev1.ConfigMap{}).List(); len(got) != 0 {
		t.Errorf("Cache(fake).List() = %v, want nothing", got)
	}
	src := controllerruntime.ObjectLinkSource(fake, &corev1.ConfigMap{})
	if sc, _ := src.SpanContext(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}); sc.IsValid() {
		t.Errorf("SpanContext = %v, want no link", sc)
	}
}

// TestTypedNilArguments: a typed nil cache given to ObjectLinkSource and a
// nil handler given to WithTraceContext are reported through otel.Handle
// like their untyped nils, and give what never panics.
func TestTypedNilArguments(t *testing.T) {
	testutil.TakeOTelErrors()
	src := controllerruntime.ObjectLinkSource((*informertest.FakeInformers)(nil), &corev1.ConfigMap{})
	if errs := testutil.TakeOTelErrors(); len(errs) != 1 {
		t.Errorf("ObjectLinkSource(typed nil cache): otel.Handle got %v, want one error", errs)
	}
	if sc, err := src.SpanContext(context.Background(), reconcile.Request{}); sc.IsValid() || err != nil {
		t.Errorf("SpanContext = %v, %v; want no link and no error", sc, err)
	}

	h := controllerruntime.WithTraceContext[client.Object, reconcile.Request](nil)
	if errs := testutil.TakeOTelErrors(); len(errs) != 1 {
		t.Errorf("WithTraceContext(nil): otel.Handle got %v, want one error", errs)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	h.Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: cm}, q)
	h.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: cm, ObjectNew: cm}, q)
	h.Delete(context.Background(), event.TypedDeleteEvent[client.Object]{Object: cm}, q)
	h.Generic(context.Background(), event.TypedGenericEvent[client.Object]{Object: cm}, q)
	if q.Len() != 0 {
		t.Errorf("a nil handler's events enqueued %d keys", q.Len())
	}
}
