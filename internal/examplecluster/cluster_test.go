package examplecluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServer is a stand-in API server on loopback that answers every request
// with one ConfigMap, and counts the requests.
func apiServer(t *testing.T) (kubeconfig string, requests *atomic.Int64) {
	t.Helper()
	requests = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"demo-0000","namespace":"ns"},"data":{"version":"0"}}`)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, requests
}

// TestRealClientUsesTheLimiter: with -kubeconfig, the requests go through
// the -kube-qps/-kube-burst token bucket. With a bucket of 3 that refills
// once in 1000 s, 3 requests reach the server and the 4th is refused by the
// client (its wait would pass its deadline), as rest.Config.RateLimiter does.
func TestRealClientUsesTheLimiter(t *testing.T) {
	kubeconfig, requests := apiServer(t)
	c, err := Connect(context.Background(), Flags{Kubeconfig: kubeconfig, KubeQPS: 0.001, KubeBurst: 3})
	if err != nil {
		t.Fatal(err)
	}
	if c.Embedded() || c.RestConfig.RateLimiter != c.Limiter || c.RestConfig.QPS != 0.001 || c.RestConfig.Burst != 3 {
		t.Fatalf("rest.Config: QPS %v, Burst %v, RateLimiter %T: not the flags' limiter", c.RestConfig.QPS, c.RestConfig.Burst, c.RestConfig.RateLimiter)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a token is 1000 s away
	defer cancel()
	cms := c.Client.CoreV1().ConfigMaps("ns")
	for i := range 3 {
		if _, err := cms.Get(ctx, Name(0), metav1.GetOptions{}); err != nil {
			t.Fatalf("request %d, within the burst: %v", i+1, err)
		}
	}
	_, err = cms.Get(ctx, Name(0), metav1.GetOptions{})
	if err == nil || !strings.Contains(err.Error(), "client rate limiter") {
		t.Fatalf("request 4, beyond the burst at 0.001/s: %v, want the client rate limiter's refusal", err)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("the server saw %d requests, want 3", n)
	}
}

// TestFakeClusterUsesTheLimiter: the embedded cluster's requests wait for
// the same token bucket as a real client's (the fake clientset has none).
func TestFakeClusterUsesTheLimiter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Connect(ctx, Flags{KubeQPS: 0.001, KubeBurst: 3})
	if err != nil {
		t.Fatal(err)
	}
	cms := c.Client.CoreV1().ConfigMaps("ns")
	for i := range 3 {
		if _, err := cms.List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatalf("request %d, within the burst: %v", i+1, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := cms.List(context.Background(), metav1.ListOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("request 4, beyond the burst at 0.001/s, did not wait: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel() // the cluster's life ends: the waiting request is refused
	if err := <-done; err == nil || !strings.Contains(err.Error(), "client rate limiter Wait returned an error") {
		t.Fatalf("request 4 after the cluster stopped: %v, want the client rate limiter's refusal", err)
	}
	if st := c.Limiter.Stats(); st.Throttled != 1 {
		t.Errorf("limiter stats %+v: want 1 throttled request", st)
	}
}
