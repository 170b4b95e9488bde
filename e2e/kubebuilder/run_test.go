package kubebuilder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/otelqueue/otelqueue/e2e"
)

// greetings is the scaffold's custom resource.
var greetings = schema.GroupVersionResource{Group: "demo.otelqueue.example", Version: "v1", Resource: "greetings"}

// plane is a kube-apiserver and etcd started by envtest with the
// scaffold's CRDs, and a kubeconfig for the managers.
type plane struct {
	kubeconfig string
	cs         kubernetes.Interface
	dyn        dynamic.Interface
}

// startPlane starts the control plane from the binaries in assets; the
// test's cleanup stops it.
func startPlane(t *testing.T, assets, dir string) *plane {
	t.Helper()
	logPath := filepath.Join(dir, "controlplane.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join("testdata", "scaffold", "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute, // a loaded 2-core machine
		ControlPlaneStopTimeout:  time.Minute,
	}
	api := env.ControlPlane.GetAPIServer()
	api.Out, api.Err = f, f
	cfg, err := env.Start()
	if err != nil {
		f.Close()
		t.Fatalf("envtest: starting kube-apiserver and etcd from %s=%s: %v\n--- their log (%s):\n%s", e2e.EnvAssets, assets, err, logPath, tailFile(logPath, 40))
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("envtest: stopping kube-apiserver and etcd: %v", err)
		}
		f.Close()
	})
	p := &plane{}
	if p.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if p.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	// The managers' user: an administrator, as a developer's kubeconfig
	// usually is (the scaffold's RBAC is for a cluster).
	u, err := env.AddUser(envtest.User{Name: "manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	p.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(p.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	// Until its watch cache is initialized, the API server answers a list
	// of a resource with 429 (KEP-4568), and the Greetings' cache starts
	// when envtest installs the CRD: the first manager's initial list could
	// get a 429 (rest_client_requests_total{code="429"}) that the second's
	// would not, a difference of the order of the runs, not of the
	// adoption. So both start once the lists the managers' informers make
	// (resourceVersion 0, served from the cache) succeed. client-go retries
	// a 429 by itself, after its Retry-After.
	e2e.Eventually(t, time.Minute, 500*time.Millisecond, func() error {
		ctx := context.Background()
		if _, err := p.dyn.Resource(greetings).List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
			return fmt.Errorf("listing Greetings from the watch cache: %w", err)
		}
		if _, err := p.cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
			return fmt.Errorf("listing ConfigMaps from the watch cache: %w", err)
		}
		return nil
	})
	return p
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return e2e.Tail(string(b), n)
}

// run is one manager's run: its workload's convergence, its scrapes, how
// it stopped.
type run struct {
	scrape *scrape
	// size is the inspector's recommendation for the controller's queue
	// (the adopted manager serves /debug/queues; the scaffold's 404s).
	size            *size
	sizeErr         error
	exemplars       map[string]int // per workqueue histogram, of the controller's queue
	converged       string
	stopped         string
	scrapePath      string // the text scrape, saved
	openMetricsPath string // the OpenMetrics scrape, saved
}

// runManager gives the manager bin (built in dir) its workload in a
// namespace of its own, against p, as a user would run it on a laptop
// (metrics over plain HTTP on loopback, no leader election): 50 Greetings
// there before it starts, which its informers' initial list brings
// (controller-runtime enqueues them at priority -100), then a change of
// each (events, priority 0). The Greetings exist before the manager starts
// so that both runs see the same: created while it starts, some would be
// listed and some be events, and workqueue_depth's priority label would
// depend on the timing. It waits until the manager is idle, scrapes it,
// stops it with SIGTERM and removes the workload's objects, so that the
// next manager starts on the same cluster state.
func runManager(ctx context.Context, t *testing.T, p *plane, name, bin, dir, tmp string) *run {
	t.Helper()
	ns := "greetings-" + name
	if _, err := p.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	for i := range objects {
		g := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "demo.otelqueue.example/v1", "kind": "Greeting",
			"metadata": map[string]any{"name": greetingName(i), "namespace": ns},
			"spec":     map[string]any{"message": message("hello", i)},
		}}
		if _, err := p.dyn.Resource(greetings).Namespace(ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Greeting %s/%s: %v", ns, greetingName(i), err)
		}
	}

	ports, err := e2e.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr, probeAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	proc := &e2e.Process{
		Name: "manager-" + name,
		Path: bin,
		Args: []string{"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false",
			"--health-probe-bind-address=" + probeAddr, "--leader-elect=false"},
		Env:     []string{"KUBECONFIG=" + p.kubeconfig},
		Dir:     dir,
		LogPath: filepath.Join(tmp, "manager-"+name+".log"),
	}
	start := time.Now()
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	defer proc.Kill() // after a failure; a stopped process is left alone
	exited, exitErr := proc.Exited()
	alive := func() {
		select {
		case <-exited:
			t.Fatalf("the %s manager exited: %v\n--- its log (%s):\n%s", name, exitErr(), proc.LogPath, proc.Tail(40))
		default:
		}
	}
	metricsURL := "http://" + metricsAddr + "/metrics"
	e2e.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		alive()
		if _, _, err := get(ctx, "http://"+probeAddr+"/readyz", "*/*"); err != nil {
			return err
		}
		_, _, err := get(ctx, metricsURL, acceptText)
		return err
	})

	r := &run{}
	waitConverged(ctx, t, p, ns, "hello", alive)
	listed := time.Since(start)
	start = time.Now()
	for i := range objects {
		patch := fmt.Appendf(nil, `{"spec":{"message":%q}}`, message("bye", i))
		if _, err := p.dyn.Resource(greetings).Namespace(ns).Patch(ctx, greetingName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("changing Greeting %s/%s: %v", ns, greetingName(i), err)
		}
	}
	waitConverged(ctx, t, p, ns, "bye", alive)
	r.converged = fmt.Sprintf("%d of %d, listed in %.1fs from the start, changed in %.1fs", objects, objects, listed.Seconds(), time.Since(start).Seconds())

	waitIdle(ctx, t, metricsURL, alive)
	s, err := scrapeAll(ctx, metricsURL)
	if err != nil {
		t.Fatalf("scraping the %s manager: %v", name, err)
	}
	r.scrape = s
	r.exemplars = exemplars(s.openMetrics, controllerName)
	text, _, err := get(ctx, metricsURL, acceptText)
	if err != nil {
		t.Fatal(err)
	}
	r.size, r.sizeErr = readSize(ctx, "http://"+metricsAddr+"/debug/queues?format=json")
	r.scrapePath = filepath.Join(tmp, "metrics-"+name+".txt")
	r.openMetricsPath = filepath.Join(tmp, "metrics-"+name+".openmetrics")
	for path, b := range map[string][]byte{r.scrapePath: text, r.openMetricsPath: []byte(s.openMetrics)} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	start = time.Now()
	if err := proc.Stop(30 * time.Second); err != nil {
		t.Errorf("the %s manager: %v (SIGTERM should stop it)\n--- its log (%s):\n%s", name, err, proc.LogPath, proc.Tail(40))
	}
	<-exited
	if err := exitErr(); err != nil {
		t.Errorf("the %s manager exited with %v on SIGTERM, want 0\n--- its log (%s):\n%s", name, err, proc.LogPath, proc.Tail(40))
	}
	r.stopped = fmt.Sprintf("exit %s in %.1fs", exitDesc(exitErr()), time.Since(start).Seconds())

	// Leave the cluster as the next manager should find it. envtest runs no
	// garbage collector, so the ConfigMaps go by hand.
	if err := p.dyn.Resource(greetings).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deleting the Greetings of %s: %v", ns, err)
	}
	if err := p.cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deleting the ConfigMaps of %s: %v", ns, err)
	}
	return r
}

func exitDesc(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}

func greetingName(i int) string         { return fmt.Sprintf("greeting-%02d", i) }
func message(word string, i int) string { return fmt.Sprintf("%s-%02d", word, i) }

// waitConverged waits until every Greeting of ns has its ConfigMap: the
// Greeting's name, data {"message": <word>-<i>}, and the Greeting as its
// controller (owner reference with its uid).
func waitConverged(ctx context.Context, t *testing.T, p *plane, ns, word string, alive func()) {
	t.Helper()
	list, err := p.dyn.Resource(greetings).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, g := range list.Items {
		uids[g.GetName()] = g.GetUID()
	}
	if len(uids) != objects {
		t.Fatalf("%d Greetings in %s, want %d", len(uids), ns, objects)
	}
	e2e.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() error {
		alive()
		var wrong []string
		for i := range objects {
			name := greetingName(i)
			cm, err := p.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				wrong = append(wrong, name+": no ConfigMap")
				continue
			}
			if err != nil {
				return err
			}
			if got, want := cm.Data["message"], message(word, i); got != want {
				wrong = append(wrong, fmt.Sprintf("%s: message %q, want %q", name, got, want))
				continue
			}
			owner := metav1.GetControllerOf(cm)
			if owner == nil || owner.Kind != "Greeting" || owner.Name != name || owner.UID != uids[name] {
				wrong = append(wrong, fmt.Sprintf("%s: controller %+v, want the Greeting %s (uid %s)", name, owner, name, uids[name]))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("%d of %d ConfigMaps of %s not as their Greetings say (%q), e.g. %s", len(wrong), objects, ns, word, strings.Join(wrong[:min(3, len(wrong))], "; "))
		}
		return nil
	})
}

// waitIdle waits until the controller's queue is empty with nothing in
// flight, and its reconcile count holds still between two scrapes: the
// scrapes then read a manager at rest, the same for both runs.
func waitIdle(ctx context.Context, t *testing.T, metricsURL string, alive func()) {
	t.Helper()
	last := -1.0
	e2e.Eventually(t, time.Minute, time.Second, func() error {
		alive()
		mfs, err := scrapeText(ctx, metricsURL)
		if err != nil {
			return err
		}
		depth := sumOf(mfs, "workqueue_depth", "name", controllerName)
		unfinished := sumOf(mfs, "workqueue_unfinished_work_seconds", "name", controllerName)
		reconciles := sumOf(mfs, "controller_runtime_reconcile_total", "controller", controllerName)
		if depth != 0 || unfinished != 0 || reconciles != last {
			last = reconciles
			return fmt.Errorf("the queue is not idle: depth %v, unfinished work %vs, reconciles %v", depth, unfinished, reconciles)
		}
		if reconciles == 0 {
			return errors.New("no reconcile counted yet")
		}
		return nil
	})
}

// size is what the test reads of the inspector's recommendation: the
// workers of the controller's queue, the pod's CPU and memory, and the
// objects counted in the manager's cache.
type size struct {
	Recommendation *struct {
		Queues []struct {
			Name    string `json:"name"`
			Known   bool   `json:"known"`
			Run     int    `json:"run"`
			Workers int    `json:"workers"`
		} `json:"queues"`
		CPU struct {
			Known   bool    `json:"known"`
			Request float64 `json:"request_cores"`
			Limit   float64 `json:"limit_cores"`
		} `json:"cpu"`
		Memory struct {
			Known     bool  `json:"known"`
			Request   int64 `json:"request_bytes"`
			Objects   int   `json:"objects"`
			PerObject int64 `json:"per_object_bytes"`
		} `json:"memory"`
	} `json:"recommendation"`
}

// readSize reads the inspector's JSON at url.
func readSize(ctx context.Context, url string) (*size, error) {
	body, _, err := get(ctx, url, "application/json")
	if err != nil {
		return nil, err
	}
	var s size
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return &s, nil
}
