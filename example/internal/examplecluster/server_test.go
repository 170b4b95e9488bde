package examplecluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/otelqueue/otelqueue/internal/testutil"
)

// startServer starts a Server that stops when the test ends.
func startServer(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// clientOf returns a clientset of srv with no client-side limit, sending
// userAgent, whose requests' URLs go to seen if not nil. Its typed clients
// speak protobuf, as client-go's do by default.
func clientOf(t testing.TB, srv *Server, userAgent string, seen chan<- string) kubernetes.Interface {
	return clientWith(t, srv, userAgent, "", seen)
}

// clientWith is clientOf with rest.Config.ContentType contentType.
func clientWith(t testing.TB, srv *Server, userAgent, contentType string, seen chan<- string) kubernetes.Interface {
	t.Helper()
	tr := newTransport()
	t.Cleanup(tr.CloseIdleConnections)
	cfg := &rest.Config{Host: srv.URL(), UserAgent: userAgent, Transport: tr, QPS: -1, ContentConfig: rest.ContentConfig{ContentType: contentType}}
	if seen != nil {
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripper(func(r *http.Request) (*http.Response, error) {
				select {
				case seen <- r.Method + " " + r.URL.RequestURI():
				default:
				}
				return rt.RoundTrip(r)
			})
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func configMap(name string, data ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "demo"}}, Data: map[string]string{}}
	for i := 0; i+1 < len(data); i += 2 {
		cm.Data[data[i]] = data[i+1]
	}
	return cm
}

// TestServerRoundTrips creates, reads, lists, updates, patches (merge,
// strategic merge, JSON) and deletes a ConfigMap through client-go, in
// protobuf (the typed clients' default) and in JSON: every write has a new
// resourceVersion, and the list's is the last one.
func TestServerRoundTrips(t *testing.T) {
	for _, contentType := range []string{"", runtime.ContentTypeJSON} {
		t.Run("ContentType="+contentType, func(t *testing.T) { testRoundTrips(t, contentType) })
	}
}

func testRoundTrips(t *testing.T, contentType string) {
	srv := startServer(t, ServerOptions{})
	ctx := context.Background()
	cms := clientWith(t, srv, "test", contentType, nil).CoreV1().ConfigMaps("ns")

	created, err := cms.Create(ctx, configMap("a", "k", "0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Namespace != "ns" || created.UID == "" || created.CreationTimestamp.IsZero() || created.ResourceVersion == "" {
		t.Errorf("created %+v: want the request's namespace, a uid, a creation time and a resourceVersion", created.ObjectMeta)
	}
	if _, err := cms.Create(ctx, configMap("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "0" || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("get: %+v, %v; want what was created", got, err)
	}

	versions := map[string]string{created.ResourceVersion: "create"}
	check := func(what string, cm *corev1.ConfigMap, err error, key, want string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if cm.Data[key] != want {
			t.Errorf("%s: data %v, want %s=%s", what, cm.Data, key, want)
		}
		if prev, ok := versions[cm.ResourceVersion]; ok {
			t.Errorf("%s: resourceVersion %s, as after %s", what, cm.ResourceVersion, prev)
		}
		versions[cm.ResourceVersion] = what
		if cm.UID != created.UID {
			t.Errorf("%s: uid %s, want the created %s", what, cm.UID, created.UID)
		}
	}
	got.Data["k"] = "1"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	check("update", updated, err, "k", "1")
	merged, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"2"}}`), metav1.PatchOptions{})
	check("merge patch", merged, err, "k", "2")
	strategic, err := cms.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"data":{"s":"3"}}`), metav1.PatchOptions{})
	check("strategic merge patch", strategic, err, "s", "3")
	if strategic.Data["k"] != "2" {
		t.Errorf("the strategic merge patch lost data k: %v", strategic.Data)
	}
	jsonPatched, err := cms.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"replace","path":"/data/k","value":"4"}]`), metav1.PatchOptions{})
	check("JSON patch", jsonPatched, err, "k", "4")

	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.ResourceVersion != jsonPatched.ResourceVersion {
		t.Errorf("list: %d items at resourceVersion %q; want 2 at the last write's %q", len(list.Items), list.ResourceVersion, jsonPatched.ResourceVersion)
	}
	all, err := clientOf(t, srv, "test", nil).CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) != 2 {
		t.Errorf("list of all namespaces: %v, %v; want the 2 ConfigMaps", all, err)
	}
	selected, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=b"})
	if err != nil || len(selected.Items) != 1 || selected.Items[0].Name != "b" {
		t.Errorf("list of metadata.name=b: %v, %v", selected, err)
	}

	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

// TestServerErrors: the server's errors are Status bodies that client-go
// maps to its apierrors predicates.
func TestServerErrors(t *testing.T) {
	srv := startServer(t, ServerOptions{})
	ctx := context.Background()
	cs := clientOf(t, srv, "test", nil)
	cms := cs.CoreV1().ConfigMaps("ns")
	a, err := cms.Create(ctx, configMap("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	_, err = cms.Create(ctx, configMap("a"), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("create of an existing name: %v, want AlreadyExists", err)
	}
	_, err = cms.Get(ctx, "nope", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `configmaps "nope" not found`) {
		t.Errorf("get of a missing name: %v, want NotFound naming it", err)
	}
	if _, err = cms.Update(ctx, configMap("nope"), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of a missing name: %v, want NotFound", err)
	}
	if _, err = cms.Patch(ctx, "nope", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("patch of a missing name: %v, want NotFound", err)
	}
	if err = cms.Delete(ctx, "nope", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing name: %v, want NotFound", err)
	}

	// An update from an outdated read is a conflict, as is a delete whose
	// precondition no longer holds.
	if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"1"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	a.Data = map[string]string{"k": "stale"}
	if _, err = cms.Update(ctx, a, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with an outdated resourceVersion: %v, want Conflict", err)
	}
	stale := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &a.ResourceVersion}}
	if err = cms.Delete(ctx, "a", stale); !apierrors.IsConflict(err) {
		t.Errorf("delete with an outdated resourceVersion precondition: %v, want Conflict", err)
	}
	if _, err = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"name":"b"}}`), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("a patch that renames: %v, want BadRequest", err)
	}
	if _, err = cms.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/k","value":"other"}]`), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("a JSON patch whose test fails: %v, want BadRequest", err)
	}
	if _, err = cms.Patch(ctx, "a", types.ApplyYAMLPatchType, []byte(`{}`), metav1.PatchOptions{FieldManager: "t"}); !apierrors.IsUnsupportedMediaType(err) || !strings.Contains(err.Error(), "server-side apply") {
		t.Errorf("server-side apply: %v, want UnsupportedMediaType saying so", err)
	}
	if _, err = cms.Create(ctx, &corev1.ConfigMap{}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("create with no name: %v, want Invalid", err)
	}
	if cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{}); err != nil || !strings.HasPrefix(cm.Name, "gen-") || len(cm.Name) != len("gen-")+5 {
		t.Errorf("create with generateName: %v, %v", cm, err)
	}
	if _, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "other"}}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("create in another namespace than the URL's: %v, want BadRequest", err)
	}
	if _, err = cms.List(ctx, metav1.ListOptions{FieldSelector: "data.k=1"}); !apierrors.IsBadRequest(err) {
		t.Errorf("list by an unsupported field: %v, want BadRequest", err)
	}

	// A path it does not serve is a 404 that names it; a method it does
	// not serve on a path, a 405.
	err = cs.CoreV1().RESTClient().Get().AbsPath("/apis/apps/v1/namespaces/ns/deployments").Do(ctx).Error()
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "nothing at /apis/apps/v1/namespaces/ns/deployments") {
		t.Errorf("an unknown path: %v, want NotFound naming the path", err)
	}
	err = cs.CoreV1().RESTClient().Post().AbsPath("/api/v1/namespaces/ns/configmaps/a").Body([]byte(`{}`)).Do(ctx).Error()
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("POST on a ConfigMap: %v, want MethodNotSupported (405)", err)
	}

	// Raw HTTP: the Status body and codes client-go reads.
	for _, tc := range []struct {
		method, path, accept string
		code                 int
		reason               metav1.StatusReason
	}{
		{http.MethodGet, "/version", "", http.StatusNotFound, metav1.StatusReasonNotFound},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps/a", "application/yaml", http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps", "application/json;as=Table;v=v1;g=meta.k8s.io", http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable},
		{http.MethodPut, "/api/v1/namespaces/ns/configmaps/a", "", http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType},
		{http.MethodDelete, "/api/v1/namespaces/ns/configmaps", "", http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL()+tc.path, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		st := doStatus(t, req)
		if st.code != tc.code || st.Reason != tc.reason || st.Kind != "Status" || st.Status.Status != metav1.StatusFailure || st.Message == "" {
			t.Errorf("%s %s (Accept %q): %d %+v, want %d %s", tc.method, tc.path, tc.accept, st.code, st.Status, tc.code, tc.reason)
		}
	}
}

type httpStatus struct {
	metav1.Status
	code       int
	retryAfter string
}

// doStatus sends req and decodes the Status it answers.
func doStatus(t *testing.T, req *http.Request) httpStatus {
	t.Helper()
	tr := newTransport()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	st := httpStatus{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", req.Method, req.URL.Path, ct)
	}
	if err := json.Unmarshal(body, &st.Status); err != nil {
		t.Fatalf("%s %s: %v in %s", req.Method, req.URL.Path, err, body)
	}
	return st
}

// TestServerInformer runs an informer of the server, with client-go's
// watch-list (sendInitialEvents, client-go's default since 1.35) and with
// the list-then-watch it falls back to: it syncs with the objects there and
// sees a later update with its new resourceVersion.
func TestServerInformer(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Error("client-go's WatchListClient gate is off by default: the watch-list case below tests no default")
	}
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			srv := startServer(t, ServerOptions{})
			seen := make(chan string, 100)
			cs := clientOf(t, srv, "test", seen)
			ctx := context.Background()
			for i := range 3 {
				if err := srv.add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name(i), Namespace: "ns"}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := srv.add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}}); err != nil {
				t.Fatal(err)
			}

			factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("ns"))
			inf := factory.Core().V1().ConfigMaps()
			updates := make(chan *corev1.ConfigMap, 10)
			if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
				updates <- obj.(*corev1.ConfigMap)
			}}); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			factory.Start(stop)
			defer factory.Shutdown()
			defer close(stop)
			testutil.WaitFor(t, "the informer to sync", inf.Informer().HasSynced)
			if objs, _ := inf.Lister().List(labels.Everything()); len(objs) != 3 {
				t.Errorf("the synced informer holds %d ConfigMaps, want the 3 of the namespace", len(objs))
			}
			before, err := inf.Lister().ConfigMaps("ns").Get(Name(1))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().ConfigMaps("ns").Patch(ctx, Name(1), types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			got := testutil.Receive(t, updates, "the informer's update")
			if got.Data["k"] != "v" || got.ResourceVersion == before.ResourceVersion {
				t.Errorf("update seen: data %v at resourceVersion %s (%s before); want k=v at a new resourceVersion", got.Data, got.ResourceVersion, before.ResourceVersion)
			}

			var listed, streamed bool
			for len(seen) > 0 {
				u := <-seen
				listed = listed || strings.HasPrefix(u, "GET ") && !strings.Contains(u, "watch=true")
				streamed = streamed || strings.Contains(u, "sendInitialEvents=true")
			}
			if watchList && (listed || !streamed) || !watchList && (!listed || streamed) {
				t.Errorf("with WatchListClient=%v the informer listed: %v, asked for initial events: %v", watchList, listed, streamed)
			}
		})
	}
}

// TestServerWatchList is the reflector's watch-list by hand: the objects
// as ADDED events, then a bookmark annotated k8s.io/initial-events-end at
// their resourceVersion (with allowWatchBookmarks), then later writes.
func TestServerWatchList(t *testing.T) {
	srv := startServer(t, ServerOptions{})
	ctx := context.Background()
	cms := clientOf(t, srv, "test", nil).CoreV1().ConfigMaps("ns")
	for _, name := range []string{"a", "b"} {
		if _, err := cms.Create(ctx, configMap(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, bookmarks := range []bool{true, false} {
		w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: bookmarks,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 2 {
			ev := testutil.Receive(t, w.ResultChan(), "an initial event")
			got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*corev1.ConfigMap).Name))
		}
		if strings.Join(got, ", ") != "ADDED a, ADDED b" {
			t.Errorf("initial events %q, want ADDED a, ADDED b", got)
		}
		if bookmarks {
			ev := testutil.Receive(t, w.ResultChan(), "the bookmark")
			cm, _ := ev.Object.(*corev1.ConfigMap)
			if ev.Type != watch.Bookmark || cm == nil || cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || cm.ResourceVersion != list.ResourceVersion {
				t.Errorf("after the initial events: %s %+v, want a bookmark annotated %s at resourceVersion %s", ev.Type, ev.Object, metav1.InitialEventsAnnotationKey, list.ResourceVersion)
			}
		}
		if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"n":"1"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := testutil.Receive(t, w.ResultChan(), "the modification")
		if cm, _ := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Modified || cm == nil || cm.Name != "a" || cm.Data["n"] != "1" {
			t.Errorf("after a patch (bookmarks %v): %s %+v, want MODIFIED a", bookmarks, ev.Type, ev.Object)
		}
		w.Stop()
	}
}

// TestServerWatchFromResourceVersion: a watch from a resourceVersion gets
// the writes after it, in order, and one from before the history kept gets
// 410 Gone, which makes an informer list again; a label selector turns a
// modification out of it into a deletion.
func TestServerWatchFromResourceVersion(t *testing.T) {
	srv := startServer(t, ServerOptions{history: 3})
	ctx := context.Background()
	cms := clientOf(t, srv, "test", nil).CoreV1().ConfigMaps("ns")
	first, err := cms.Create(ctx, configMap("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, LabelSelector: "app=demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, configMap("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"other"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		ev := testutil.Receive(t, w.ResultChan(), "an event")
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*corev1.ConfigMap).Name))
	}
	if want := "ADDED b, DELETED a, DELETED b"; strings.Join(got, ", ") != want {
		t.Errorf("events after resourceVersion %s with app=demo: %q, want %s", first.ResourceVersion, got, want)
	}

	// 6 writes with a history of 3: at the 6th, the first 3 were dropped.
	for _, name := range []string{"c", "d"} {
		if _, err := cms.Create(ctx, configMap(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	old, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	ev := testutil.Receive(t, old.ResultChan(), "the watch's error")
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Errorf("a watch from before the history: %s %+v, want an ERROR event with 410 Gone", ev.Type, ev.Object)
	}
	_, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "1000"})
	if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Errorf("a watch from a resourceVersion never given: %v, want kube-apiserver's Too large resource version", err)
	}
}

// TestServerCloseEndsWatches: Close ends an open watch, and refuses the
// requests that follow.
func TestServerCloseEndsWatches(t *testing.T) {
	srv, err := NewServer(ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms := clientOf(t, srv, "test", nil).CoreV1().ConfigMaps("ns")
	w, err := cms.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	srv.Close()
	if ev := testutil.Receive(t, w.ResultChan(), "the watch to end"); ev.Type != "" {
		t.Errorf("event after Close: %+v, want the watch's end", ev)
	}
	if _, err := cms.List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("a list after Close succeeded")
	}
	srv.Close() // again: no effect
}

// TestServerThrottlesEachClient sets -server-qps 2: one user agent's third
// request in a burst gets 429 with Retry-After: 1, which client-go waits
// out and retries (successfully once the token bucket refills), while
// another user agent's requests and the first one's watches pass.
func TestServerThrottlesEachClient(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now()) // buckets refill only when stepped
	srv := startServer(t, ServerOptions{QPS: 2, Clock: clk})
	ctx := context.Background()
	a := clientOf(t, srv, "a", nil).CoreV1().ConfigMaps("ns")
	b := clientOf(t, srv, "b", nil).CoreV1().ConfigMaps("ns")
	for i := range 2 {
		if _, err := a.List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("a's request %d, within the burst of 2: %v", i+1, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.List(ctx, metav1.ListOptions{})
		done <- err
	}()
	testutil.WaitFor(t, "the server to reject a's third request", func() bool { return srv.Stats().Rejected["a"] >= 1 })

	for i := range 2 {
		if _, err := b.List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("b's request %d while a's bucket is empty: %v", i+1, err)
		}
	}
	w, err := a.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("a's watch while a's bucket is empty: %v", err)
	}
	w.Stop()
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/api/v1/namespaces/ns/configmaps", nil)
	req.Header.Set("User-Agent", "a")
	st := doStatus(t, req)
	if st.code != http.StatusTooManyRequests || st.retryAfter != "1" || st.Reason != metav1.StatusReasonTooManyRequests ||
		!strings.Contains(st.Message, "the embedded API server's -server-qps limit") {
		t.Errorf("a's request with an empty bucket: %d, Retry-After %q, %+v; want 429, Retry-After 1 and a Status naming -server-qps", st.code, st.retryAfter, st.Status)
	}

	clk.SetTime(clk.Now().Add(time.Second)) // two tokens for a: client-go's retry, a second after the 429, gets one
	if err := testutil.Receive(t, done, "a's retried request"); err != nil {
		t.Errorf("a's third request, retried by client-go: %v", err)
	}
	stats := srv.Stats()
	// 2 rejections of a's: client-go's request and the raw one (more if
	// client-go retried before the clock was stepped, on a slow machine).
	if stats.Rejected["a"] < 2 || stats.Rejected["b"] != 0 || stats.QPS != 2 || stats.Burst != 2 {
		t.Errorf("stats %+v: want a's 2 rejections, none of b's, at 2/s and burst 2", stats)
	}
}

// TestServerExemptUserAgent: an exempt user agent (the demo's workload)
// is never throttled, while another one is.
func TestServerExemptUserAgent(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	srv := startServer(t, ServerOptions{QPS: 1, Exempt: []string{"workload"}, Clock: clk})
	for i := range 5 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/api/v1/namespaces/ns/configmaps", nil)
		req.Header.Set("User-Agent", "workload")
		if st := doStatus(t, req); st.code != http.StatusOK {
			t.Fatalf("the exempt user agent's request %d: %d %+v", i+1, st.code, st.Status)
		}
	}
	codes := []int{}
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/api/v1/namespaces/ns/configmaps", nil)
		req.Header.Set("User-Agent", "controller")
		codes = append(codes, doStatus(t, req).code)
	}
	if codes[0] != http.StatusOK || codes[1] != http.StatusTooManyRequests {
		t.Errorf("a limited user agent's two requests at 1/s: %v, want [200 429]", codes)
	}
	if st := srv.Stats(); st.Rejected["workload"] != 0 || st.Rejected["controller"] != 1 {
		t.Errorf("rejections %v", st.Rejected)
	}
}

// BenchmarkPatch is one merge patch of the workload's kind through the
// embedded API server (client-go's REST client, HTTP on loopback, JSON)
// against client-go's fake clientset with the reactors the embedded cluster
// had before (resource versions stamped, the client's limiter waited for).
func BenchmarkPatch(b *testing.B) {
	patch := []byte(`{"data":{"version":"1"},"metadata":{"annotations":{"otelqueue.github.io/traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`)
	run := func(b *testing.B, cs kubernetes.Interface) {
		ctx := context.Background()
		cms := cs.CoreV1().ConfigMaps("ns")
		for i := range 100 {
			if _, err := cms.Create(ctx, configMap(Name(i), VersionKey, "0"), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := cms.Patch(ctx, Name(i%100), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("http", func(b *testing.B) {
		c, err := Connect(context.Background(), Flags{KubeQPS: MaxKubeQPS, KubeBurst: MaxKubeQPS})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c.WorkloadClient)
	})
	b.Run("fake", func(b *testing.B) {
		run(b, oldFake(NewLimiter(MaxKubeQPS, MaxKubeQPS)))
	})
}

// oldFake is the embedded cluster as it was: client-go's fake clientset
// whose creates and updates are stamped with a resource version and whose
// requests wait for the limiter.
func oldFake(lim *Limiter) kubernetes.Interface {
	cs := fake.NewSimpleClientset() //nolint:staticcheck // the old embedded cluster, for comparison
	var version atomic.Int64
	var mu sync.Mutex
	stamp := func(action k8stesting.Action) (bool, runtime.Object, error) {
		if a, ok := action.(interface{ GetObject() runtime.Object }); ok {
			mu.Lock()
			a.GetObject().(*corev1.ConfigMap).ResourceVersion = fmt.Sprint(version.Add(1))
			mu.Unlock()
		}
		return false, nil, nil
	}
	cs.PrependReactor("create", "*", stamp)
	cs.PrependReactor("update", "*", stamp)
	cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return false, nil, lim.Wait(context.Background())
	})
	return cs
}

// TestWatchBookmarks: a quiet watch that asks for bookmarks gets one every
// bookmarkEvery (a minute, kube-apiserver's), at the resourceVersion it is
// at, so that a client (package kubeclient's stale watches) tells it from a
// hung one; a watch that asks for none gets none.
func TestWatchBookmarks(t *testing.T) {
	defer func(d time.Duration) { bookmarkEvery = d }(bookmarkEvery)
	bookmarkEvery = 50 * time.Millisecond
	srv := startServer(t, ServerOptions{})
	cms := clientOf(t, srv, "test", nil).CoreV1().ConfigMaps("ns")
	ctx := context.Background()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	with, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Stop()
	without, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Stop()
	for range 2 {
		select {
		case ev := <-with.ResultChan():
			if m, _ := rvOf(ev.Object); ev.Type != watch.Bookmark || m != "1" {
				t.Fatalf("event %s at %q, want a bookmark at 1", ev.Type, m)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no bookmark within 5s")
		}
	}
	select {
	case ev := <-without.ResultChan():
		t.Errorf("a watch without bookmarks got %s", ev.Type)
	case <-time.After(200 * time.Millisecond):
	}
}

// rvOf returns obj's resourceVersion.
func rvOf(obj runtime.Object) (string, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return "", fmt.Errorf("a %T", obj)
	}
	return cm.ResourceVersion, nil
}
