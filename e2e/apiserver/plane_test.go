package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// plane is a control plane (kube-apiserver and etcd) started by envtest on
// 127.0.0.1, with an admin client.
type plane struct {
	name    string
	env     *envtest.Environment
	admin   *rest.Config
	client  kubernetes.Interface
	version string // what /version reports
	logPath string // both servers' output
	logFile *os.File
}

var (
	planesMu sync.Mutex
	planes   []*plane
)

// startPlane starts a control plane from the binaries in assets, with the
// API server flags args added to envtest's (e.g. "max-requests-inflight").
// Its servers write to a log file in tmpDir.
func startPlane(name, assets string, args map[string]string) (*plane, error) {
	p := &plane{name: name, logPath: filepath.Join(tmpDir, "controlplane-"+name+".log")}
	f, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.logFile = f
	p.env = &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute, // a loaded 2-core machine
		ControlPlaneStopTimeout:  time.Minute,
	}
	api := p.env.ControlPlane.GetAPIServer()
	api.Out, api.Err = f, f
	for k, v := range args {
		api.Configure().Set(k, v)
	}
	if p.admin, err = p.env.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting control plane %q from %s: %w\n--- its log (%s):\n%s", name, assets, err, p.logPath, tailFile(p.logPath, 40))
	}
	planesMu.Lock()
	planes = append(planes, p)
	planesMu.Unlock()
	if p.client, err = kubernetes.NewForConfig(p.admin); err != nil {
		return nil, err
	}
	v, err := p.client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("control plane %q: /version: %w", name, err)
	}
	p.version = v.GitVersion
	return p, nil
}

// stop stops the plane's servers; a second call does nothing.
func (p *plane) stop() error {
	planesMu.Lock()
	defer planesMu.Unlock()
	for i, q := range planes {
		if q == p {
			planes = append(planes[:i], planes[i+1:]...)
			err := p.env.Stop()
			p.logFile.Close()
			return err
		}
	}
	return nil
}

// stopPlanes stops every plane still running.
func stopPlanes() error {
	planesMu.Lock()
	ps := append([]*plane(nil), planes...)
	planesMu.Unlock()
	var errs []error
	for _, p := range ps {
		if err := p.stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	return errors.Join(errs...)
}

// namespace creates a namespace of its own for the test, deleted when it
// ends: the plane is shared, and the examples' objects have fixed names.
func (p *plane) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + randomSuffix()}}
	if _, err := p.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns.Name, err)
	}
	t.Cleanup(func() {
		// No namespace controller runs in envtest: the namespace stays
		// Terminating, but its name is never reused.
		_ = p.client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// kubeconfig writes a kubeconfig for a user of the plane authenticated by a
// client certificate (name, in group), bound to the cluster-admin role, and
// returns its path. The user is not in system:masters, so that API Priority
// and Fairness treats its requests as a controller's (system:masters is
// exempt).
func (p *plane) kubeconfig(t *testing.T, name, group string) string {
	t.Helper()
	u, err := p.env.AddUser(envtest.User{Name: name, Groups: []string{group}}, nil)
	if err != nil {
		t.Fatalf("adding user %s: %v", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "otelqueue-" + strings.ReplaceAll(group, ":", "-")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
	_, err = p.client.RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("binding %s to cluster-admin: %v", group, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tmpDir, fmt.Sprintf("kubeconfig-%s-%s", p.name, name))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// metrics returns the API server's own /metrics, read as the admin.
func (p *plane) metrics(ctx context.Context) (string, error) {
	b, err := p.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	return string(b), err
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
