package objsize

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// configMapJSON is a ConfigMap as an API server sends it: labels,
// annotations, managed fields and a few data keys.
func configMapJSON(i, keys int) []byte {
	cm := corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("config-%05d", i), Namespace: "otelqueue-demo", UID: "0d6f4b9e-8a60-4f0e-9d3c-7d1f4c2b9a10",
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.NewTime(time.Unix(1764000000, 0)),
			Labels:      map[string]string{"app.kubernetes.io/name": "demo", "app.kubernetes.io/part-of": "otelqueue"},
			Annotations: map[string]string{"example.otelqueue.io/observed-version": fmt.Sprint(i), "otelqueue.github.io/traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "otelqueue-example-workload", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: &metav1.Time{Time: time.Unix(1764000000, 0)}, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:data":{".":{},"f:version":{},"f:payload":{}},"f:metadata":{"f:annotations":{".":{},"f:otelqueue.github.io/traceparent":{}}}}`),
			}},
		},
		Data: map[string]string{"version": fmt.Sprint(i), "payload": fmt.Sprintf("%0200d", i), "mode": "steady"},
	}
	for k := range keys {
		cm.Data[fmt.Sprintf("key-%02d", k)] = fmt.Sprintf("value %d of %d", k, i)
	}
	b, err := json.Marshal(cm)
	if err != nil {
		panic(err)
	}
	return b
}

// TestAgainstTheHeap decodes ten thousand ConfigMaps as an informer holds
// them and compares the heap they take, measured by the runtime, with the
// estimate: within 15%, with a few data keys and with many (a map of
// several groups).
func TestAgainstTheHeap(t *testing.T) {
	for _, keys := range []int{0, 40} {
		t.Run(fmt.Sprintf("%d more keys", keys), func(t *testing.T) { againstTheHeap(t, keys) })
	}
}

func againstTheHeap(t *testing.T, keys int) {
	const n = 10000
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = configMapJSON(i, keys)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	objs := make([]*corev1.ConfigMap, n)
	for i := range objs {
		objs[i] = new(corev1.ConfigMap)
		if err := json.Unmarshal(raw[i], objs[i]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	measured := float64(after.HeapAlloc-before.HeapAlloc) / n
	var sum uintptr
	for _, o := range objs {
		sum += Of(o)
	}
	runtime.KeepAlive(objs)
	estimated := float64(sum) / n
	t.Logf("a ConfigMap of %d bytes of JSON: %.0f bytes of heap measured, %.0f estimated (%.2f)", len(raw[0]), measured, estimated, estimated/measured)
	if r := estimated / measured; r < 0.85 || r > 1.15 {
		t.Errorf("estimated %.0f bytes per ConfigMap, measured %.0f: off by more than 15%% (%.2f)", estimated, measured, r)
	}
}

func TestOf(t *testing.T) {
	type node struct {
		next *node
		name string
	}
	a := &node{name: "abc"}
	a.next = a // a cycle is counted once
	if got, want := Of(a), class(unsafeSizeofNode)+class(3); got != want {
		t.Errorf("a node that points to itself: %d, want %d", got, want)
	}
	if got := Of(nil); got != 0 {
		t.Errorf("nil: %d", got)
	}
	var np *node
	if got := Of(np); got != 0 {
		t.Errorf("a nil pointer: %d", got)
	}
	s := "shared"
	twice := []string{s, s}
	if got, want := Of(&twice), class(24)+class(32)+class(6); got != want {
		t.Errorf("a slice of one string twice: %d, want %d (the string once)", got, want)
	}
	var deep any = 0
	for range 2 * maxDepth {
		deep = &[]any{deep}
	}
	if got := Of(deep); got == 0 {
		t.Error("a deep value: 0")
	}
	m := map[string]int{"a": 1, "b": 2}
	if got := Of(m); got <= class(1)*2 {
		t.Errorf("a map of two entries: %d", got)
	}
	for n, want := range map[uintptr]uintptr{1: 8, 8: 8, 9: 16, 33: 48, 32768: 32768, 32769: 40960} {
		if got := class(n); got != want {
			t.Errorf("class(%d) = %d, want %d", n, got, want)
		}
	}
}

// unsafeSizeofNode is the size of TestOf's node: a pointer and a string.
const unsafeSizeofNode = 8 + 16
