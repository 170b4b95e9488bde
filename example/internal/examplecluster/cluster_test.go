package examplecluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/kubeclient"
)

// stub is a stand-in API server on loopback that answers every request with
// one ConfigMap, and counts the requests by User-Agent.
type stub struct {
	mu     sync.Mutex
	agents map[string]int
}

// requests returns the number of requests with userAgent ("" for all).
func (s *stub) requests(userAgent string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if userAgent != "" {
		return s.agents[userAgent]
	}
	n := 0
	for _, c := range s.agents {
		n += c
	}
	return n
}

// apiServer starts a stub and returns a kubeconfig of it.
func apiServer(t *testing.T) (kubeconfig string, s *stub) {
	t.Helper()
	s = &stub{agents: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.agents[r.UserAgent()]++
		s.mu.Unlock()
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
	return kubeconfig, s
}

// TestRealClientUsesTheLimiter: with -kubeconfig, the requests go through
// the -kube-qps/-kube-burst token bucket. With a bucket of 3 that refills
// once in 1000 s, 3 requests reach the server and the 4th is refused by the
// client (its wait would pass its deadline), as rest.Config.RateLimiter does.
func TestRealClientUsesTheLimiter(t *testing.T) {
	kubeconfig, server := apiServer(t)
	c, err := Connect(context.Background(), Flags{Kubeconfig: kubeconfig, KubeQPS: 0.001, KubeBurst: 3})
	if err != nil {
		t.Fatal(err)
	}
	if c.Embedded() || c.RestConfig.RateLimiter.QPS() != float32(0.001) || c.RestConfig.QPS != 0.001 || c.RestConfig.Burst != 3 {
		t.Fatalf("rest.Config: QPS %v, Burst %v, RateLimiter %T: not the flags' limiter", c.RestConfig.QPS, c.RestConfig.Burst, c.RestConfig.RateLimiter)
	}
	if _, err := kubeclient.Instrument(c.RestConfig); err == nil {
		t.Errorf("the controller's rest.Config is not instrumented (kubeclient.Instrument accepted it)")
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
	if n := server.requests(ControllerUserAgent); n != 3 {
		t.Errorf("the server saw %d requests of %s, want 3", n, ControllerUserAgent)
	}

	// The workload's client has no limit of its own by default, and its
	// own User-Agent.
	for i := range 5 {
		if _, err := c.WorkloadClient.CoreV1().ConfigMaps("ns").Get(ctx, Name(0), metav1.GetOptions{}); err != nil {
			t.Fatalf("workload request %d, with the controller's bucket empty: %v", i+1, err)
		}
	}
	if n := server.requests(WorkloadUserAgent); n != 5 {
		t.Errorf("the server saw %d requests of %s, want 5", n, WorkloadUserAgent)
	}
}

// TestEmbeddedClusterUsesTheLimiter: the embedded cluster's requests go
// through client-go's REST client and the -kube-qps/-kube-burst bucket, as
// a real cluster's do; the workload's client has its own bucket
// (-workload-qps/-workload-burst).
func TestEmbeddedClusterUsesTheLimiter(t *testing.T) {
	c, err := Connect(context.Background(), Flags{KubeQPS: 0.001, KubeBurst: 3, WorkloadQPS: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Embedded() || c.RestConfig.RateLimiter.QPS() != float32(0.001) || !strings.HasPrefix(c.RestConfig.Host, "http://127.0.0.1:") || c.RestConfig.UserAgent != ControllerUserAgent {
		t.Fatalf("rest.Config %+v: not the embedded API server's with the flags' limiter", c.RestConfig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a token is 1000 s away
	defer cancel()
	cms := c.Client.CoreV1().ConfigMaps("ns")
	for i := range 3 {
		if _, err := cms.List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("request %d, within the burst: %v", i+1, err)
		}
	}
	_, err = cms.List(ctx, metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "client rate limiter") {
		t.Fatalf("request 4, beyond the burst at 0.001/s: %v, want the client rate limiter's refusal", err)
	}
	if n := c.ServerStats().Requests; n != 3 {
		t.Errorf("the server saw %d requests, want 3", n)
	}
	wcms := c.WorkloadClient.CoreV1().ConfigMaps("ns")
	if _, err := wcms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the workload's first request, with the controller's bucket empty: %v", err)
	}
	_, err = wcms.List(ctx, metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "client rate limiter") {
		t.Fatalf("the workload's second request, beyond its burst of max(1, ceil(0.001)): %v, want its limiter's refusal", err)
	}
	if st := c.WorkloadLimiter.Stats(); st.Throttled != 0 || c.Limiter.Stats().Throttled != 0 {
		t.Errorf("limiter stats %+v, %+v: a wait refused at once is no throttled request", st, c.Limiter.Stats())
	}
}

// TestEmbeddedClusterStops: the embedded API server stops when Connect's
// ctx ends, and on Close.
func TestEmbeddedClusterStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Connect(ctx, Flags{KubeQPS: DefaultKubeQPS, KubeBurst: DefaultKubeBurst})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cms := c.Client.CoreV1().ConfigMaps("ns")
	if _, err := cms.List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	testutil.WaitFor(t, "the embedded API server to stop with Connect's ctx", func() bool {
		_, err := cms.List(context.Background(), metav1.ListOptions{})
		return err != nil
	})

	c, err = Connect(context.Background(), Flags{KubeQPS: DefaultKubeQPS, KubeBurst: DefaultKubeBurst})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Client.CoreV1().ConfigMaps("ns").List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("a request after Close succeeded")
	}
	c.Close() // again: no effect
}

// TestConnectRefusesServerQPSWithKubeconfig: -server-qps throttles only the
// embedded API server.
func TestConnectRefusesServerQPSWithKubeconfig(t *testing.T) {
	_, err := Connect(context.Background(), Flags{Kubeconfig: "/nonexistent", KubeQPS: 1, KubeBurst: 1, ServerQPS: 5})
	if err == nil || !strings.Contains(err.Error(), "API Priority and Fairness configuration") {
		t.Errorf("Connect with -kubeconfig and -server-qps: %v, want a refusal naming API Priority and Fairness", err)
	}
}
