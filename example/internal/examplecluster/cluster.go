package examplecluster

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/otelqueue/otelqueue/kubeclient"
)

// The User-Agents of the examples' two clients: a real API server's audit
// log, and the embedded one's simulated API Priority and Fairness
// (-server-qps), tell them apart by it.
const (
	ControllerUserAgent = "otelqueue-example-controller"
	WorkloadUserAgent   = "otelqueue-example-workload"
)

// Cluster is the cluster an example talks to, the embedded API server
// (Server) or a real one, always through client-go's REST client: one
// client for the controller, limited by -kube-qps and -kube-burst, and one
// for the workload, limited by -workload-qps and -workload-burst only, so
// that a controller-side limit does not throttle the load the controller
// is measured against.
type Cluster struct {
	// Client is the controller's clientset.
	Client kubernetes.Interface
	// WorkloadClient is the workload's clientset: RestConfig's cluster with
	// the WorkloadLimiter and WorkloadUserAgent.
	WorkloadClient kubernetes.Interface
	// RestConfig is the controller's client config: the cluster's host (for
	// the embedded cluster, the Server's loopback URL), the Limiter as its
	// RateLimiter (QPS and Burst are set to the flags' too, for whoever
	// builds a client of their own from it) and ControllerUserAgent,
	// instrumented by kubeclient.Instrument.
	RestConfig *rest.Config
	// Limiter is the controller's client-side token bucket (-kube-qps and
	// -kube-burst).
	Limiter *Limiter
	// WorkloadLimiter is the workload's client-side token bucket
	// (-workload-qps and -workload-burst), nil when it has none.
	WorkloadLimiter *Limiter
	// Where says which cluster it is, for the log.
	Where string

	// The embedded cluster's API server, in this process (server) or in a
	// child process (child, after ServeChild); both nil for a real one.
	server    *Server
	child     *child
	serverQPS float64
	transport *http.Transport // the clients' transport to the embedded one
	// workloadRejected counts the 429 answers to the workload's requests.
	workloadRejected atomic.Uint64
	closeOnce        sync.Once
	closers          []func()
}

// Embedded reports whether the cluster is the embedded API server.
func (c *Cluster) Embedded() bool { return c.server != nil || c.child != nil }

// ServerStats returns the embedded API server's counts: its QPS and burst
// only when it runs in a child process, zero for a real cluster.
func (c *Cluster) ServerStats() ServerStats {
	switch {
	case c.server != nil:
		return c.server.Stats()
	case c.child != nil && c.serverQPS > 0:
		return ServerStats{QPS: c.serverQPS, Burst: max(1, int(math.Ceil(c.serverQPS)))}
	}
	return ServerStats{}
}

// Close stops the embedded API server (its open watches end) and closes the
// clients' idle connections to it; it does nothing for a real cluster. It
// may be called more than once.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		if c.server != nil {
			c.server.Close()
		}
		if c.child != nil {
			c.child.close()
		}
		if c.transport != nil {
			c.transport.CloseIdleConnections()
		}
		for _, f := range c.closers {
			f()
		}
	})
}

// Connect returns the cluster f asks for: with -kubeconfig, that cluster;
// otherwise an embedded API server (Server, with -server-qps) on loopback,
// which runs until ctx is done or Close is called. Either way the clients
// go through client-go's REST client: the controller's (Client,
// RestConfig) limited by -kube-qps and -kube-burst, the workload's
// (WorkloadClient) by -workload-qps and -workload-burst.
func Connect(ctx context.Context, f Flags) (*Cluster, error) {
	if err := checkServerQPS(f); err != nil {
		return nil, err
	}
	c := &Cluster{Limiter: NewLimiter(f.KubeQPS, f.KubeBurst)}
	wburst := workloadBurst(f.WorkloadQPS, f.WorkloadBurst)
	if f.WorkloadQPS > 0 {
		c.WorkloadLimiter = NewLimiter(f.WorkloadQPS, wburst)
	}
	var rc *rest.Config
	if f.Kubeconfig == "" {
		opts := ServerOptions{QPS: f.ServerQPS, Exempt: []string{WorkloadUserAgent}}
		var url string
		if inChild.Load() {
			ch, err := startChild(opts)
			if err != nil {
				return nil, err
			}
			c.child, url = ch, ch.url
			c.closers = append(c.closers, logKubeconfig(url))
		} else {
			srv, err := NewServer(opts)
			if err != nil {
				return nil, err
			}
			c.server, url = srv, srv.URL()
		}
		c.serverQPS, c.transport = f.ServerQPS, newTransport()
		context.AfterFunc(ctx, c.Close)
		rc = &rest.Config{Host: url, Transport: c.transport}
		c.Where = "embedded API server at " + url
	} else {
		var err error
		rc, err = clientcmd.BuildConfigFromFlags("", f.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("-kubeconfig %s: %w", f.Kubeconfig, err)
		}
		c.Where = "cluster at " + rc.Host
	}
	// RateLimiter wins over QPS and Burst; they are set too for whoever
	// copies the config (controller-runtime's manager builds its own).
	rc.QPS, rc.Burst, rc.RateLimiter, rc.UserAgent = float32(f.KubeQPS), f.KubeBurst, c.Limiter, ControllerUserAgent
	wc := rest.CopyConfig(rc)
	wc.UserAgent = WorkloadUserAgent
	wc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &rejections{next: rt, n: &c.workloadRejected} })
	if c.WorkloadLimiter != nil {
		wc.QPS, wc.Burst, wc.RateLimiter = float32(f.WorkloadQPS), wburst, c.WorkloadLimiter
	} else {
		wc.QPS, wc.Burst, wc.RateLimiter = -1, 0, nil // a negative QPS: no client-side limit
	}
	// The controller's requests are measured (package kubeclient): those
	// made in a reconcile count for its queue, for the summary line's
	// split and bottleneck. The workload's are not: it stands for the
	// cluster's other clients.
	rc, err := kubeclient.Instrument(rc)
	if err != nil {
		c.Close()
		return nil, err
	}
	if c.Client, err = kubernetes.NewForConfig(rc); err != nil {
		c.Close()
		return nil, fmt.Errorf("client for %s: %w", rc.Host, err)
	}
	if c.WorkloadClient, err = kubernetes.NewForConfig(wc); err != nil {
		c.Close()
		return nil, fmt.Errorf("workload client for %s: %w", wc.Host, err)
	}
	c.RestConfig = rc
	return c, nil
}

// newTransport is the clients' transport to the embedded API server: its
// own, so that Close can close its idle connections, and with enough of
// them kept for the workers and the workload (http.DefaultTransport keeps
// 2 per host and would dial anew for most requests).
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
}
