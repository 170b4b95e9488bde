package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

	// procs are the plane's servers as processes, for the tests that
	// pause, kill and restart them (faults_test.go); found at first use.
	procsMu sync.Mutex
	procs   map[string]*serverProc
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
			err := errors.Join(p.stopRestarted(), p.env.Stop())
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

// A plane's two servers as processes, for the tests that pause, kill and
// restart them. envtest keeps a server's process in unexported state and
// starts it once (its Start does nothing after a first success), so a
// server killed here is started again here: its binary with the very
// command line envtest gave it, read from /proc/<pid>/cmdline, so on the
// same ports, with the same serving certificates and client CA (the API
// server's --cert-dir) and the same data (etcd's --data-dir). The plane's
// stop stops such a process itself, before envtest's Stop, which sees its
// own process exited and removes those directories.
const (
	apiserverProc = "kube-apiserver"
	etcdProc      = "etcd"
)

// serverProc is one of a plane's servers as a process.
type serverProc struct {
	name string
	argv []string // its command line, the binary first
	pid  int
	// cmd is the process a restart started, nil while envtest's runs;
	// exited is closed once it has exited.
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool // by SIGSTOP, until a SIGCONT
}

// procLocked returns the plane's server name (apiserverProc or etcdProc),
// found at first use among this process's children by its binary and the
// port envtest gave it. p.procsMu is held.
func (p *plane) procLocked(name string) (*serverProc, error) {
	if s := p.procs[name]; s != nil {
		return s, nil
	}
	var bin, arg string
	switch cp := p.env.ControlPlane; name {
	case apiserverProc:
		bin, arg = cp.APIServer.Path, "--secure-port="+cp.APIServer.SecureServing.Port
	case etcdProc:
		bin, arg = cp.Etcd.Path, "--listen-client-urls="+cp.Etcd.URL.String()
	default:
		return nil, fmt.Errorf("a control plane has no server %q", name)
	}
	pid, argv, err := findChild(bin, arg)
	if err != nil {
		return nil, fmt.Errorf("control plane %q: %s: %w", p.name, name, err)
	}
	if p.procs == nil {
		p.procs = map[string]*serverProc{}
	}
	s := &serverProc{name: name, argv: argv, pid: pid}
	p.procs[name] = s
	return s, nil
}

// findChild returns the pid and command line of the child of this process
// that runs bin with the argument arg.
func findChild(bin, arg string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a kernel thread
		}
		argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if argv[0] == bin && slices.Contains(argv, arg) && parentPid(pid) == os.Getpid() {
			return pid, argv, nil
		}
	}
	return 0, nil, fmt.Errorf("no child process runs %s with %s", bin, arg)
}

// parentPid returns the parent of the process pid (the field after the
// state in /proc/<pid>/stat, whose command in parentheses may hold spaces),
// -1 when unknown.
func parentPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// signal sends sig to the plane's server name, and remembers whether it
// was paused (SIGSTOP) or continued (SIGCONT, SIGKILL).
func (p *plane) signal(name string, sig syscall.Signal) error {
	p.procsMu.Lock()
	defer p.procsMu.Unlock()
	s, err := p.procLocked(name)
	if err != nil {
		return err
	}
	if err := syscall.Kill(s.pid, sig); err != nil {
		return fmt.Errorf("control plane %q: %s (pid %d): %v: %w", p.name, name, s.pid, sig, err)
	}
	s.paused = sig == syscall.SIGSTOP
	return nil
}

// pause stops the plane's server name with SIGSTOP, as a frozen machine
// or a stalled disk does: its connections stay open and answer nothing.
// resume continues it; the plane's stop continues a server still paused.
func (p *plane) pause(name string) error { return p.signal(name, syscall.SIGSTOP) }

// resume continues the plane's server name, paused by pause.
func (p *plane) resume(name string) error { return p.signal(name, syscall.SIGCONT) }

// kill kills the plane's server name with SIGKILL, as the OOM killer or a
// node's failure does, and returns once it is gone (reaped by envtest's
// Wait, or by restart's).
func (p *plane) kill(name string) error {
	if err := p.signal(name, syscall.SIGKILL); err != nil {
		return err
	}
	p.procsMu.Lock()
	s := p.procs[name]
	pid, exited := s.pid, s.exited
	p.procsMu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if exited != nil {
			select {
			case <-exited:
				return nil
			default:
			}
		} else if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("control plane %q: %s (pid %d) still there 10s after SIGKILL", p.name, name, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restart starts the plane's server name again after kill: the same binary
// and command line, its output to the plane's log. It returns once the
// server is healthy (healthy), or with an error after timeout or if it
// exits first.
func (p *plane) restart(name string, timeout time.Duration) error {
	p.procsMu.Lock()
	s, err := p.procLocked(name)
	if err != nil {
		p.procsMu.Unlock()
		return err
	}
	if err := syscall.Kill(s.pid, 0); !errors.Is(err, syscall.ESRCH) {
		p.procsMu.Unlock()
		return fmt.Errorf("control plane %q: %s (pid %d) still runs: kill it first", p.name, name, s.pid)
	}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Stdout, cmd.Stderr = p.logFile, p.logFile
	// Its own process group, as envtest starts its servers; killed if
	// the test's process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(p.logFile, "--- %s: %s restarted by the test ---\n", time.Now().Format("15:04:05.000000"), name)
	if err := cmd.Start(); err != nil {
		p.procsMu.Unlock()
		return fmt.Errorf("control plane %q: restarting %s: %w", p.name, name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.pid, s.exited, s.paused = cmd, cmd.Process.Pid, exited, false
	p.procsMu.Unlock()

	deadline := time.Now().Add(timeout)
	for {
		err := p.healthy(name)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("control plane %q: %s exited after its restart (%v)\n--- its log (%s):\n%s", p.name, name, cmd.ProcessState, p.logPath, tailFile(p.logPath, 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("control plane %q: %s not healthy %v after its restart: %v\n--- its log (%s):\n%s", p.name, name, timeout, err, p.logPath, tailFile(p.logPath, 40))
		}
	}
}

// healthy checks once that the plane's server name answers its health
// endpoint: the API server's /readyz (etcd, its informers and post-start
// hooks included), read as the admin; etcd's /health.
func (p *plane) healthy(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	switch name {
	case apiserverProc:
		_, err := p.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	case etcdProc:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.env.ControlPlane.Etcd.URL.String()+"/health", nil)
		if err != nil {
			return err
		}
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("etcd /health: %s %s", resp.Status, b)
		}
		return nil
	}
	return fmt.Errorf("a control plane has no server %q", name)
}

// waitHealthy waits until the plane's server name is healthy, for at most
// timeout.
func (p *plane) waitHealthy(name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := p.healthy(name)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("control plane %q: %s not healthy within %v: %w", p.name, name, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopRestarted continues the servers left paused and stops those a test
// restarted, before envtest's Stop: the API server first, then, if etcd
// was restarted, envtest's API server if that one still runs and the
// restarted etcd (envtest's Etcd.Stop, which finds its own process
// exited, removes the data directory the restarted one uses).
func (p *plane) stopRestarted() error {
	p.procsMu.Lock()
	defer p.procsMu.Unlock()
	var errs []error
	for _, s := range p.procs {
		if s.paused {
			if err := syscall.Kill(s.pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("continuing %s (pid %d): %w", s.name, s.pid, err))
			}
			s.paused = false
		}
	}
	timeout := p.env.ControlPlaneStopTimeout
	if s := p.procs[apiserverProc]; s != nil && s.cmd != nil {
		errs = append(errs, s.terminate(timeout))
	}
	if s := p.procs[etcdProc]; s != nil && s.cmd != nil {
		errs = append(errs, p.env.ControlPlane.APIServer.Stop(), s.terminate(timeout))
	}
	return errors.Join(errs...)
}

// terminate stops a restarted server as envtest stops its own: SIGTERM to
// its process group, SIGKILL after timeout.
func (s *serverProc) terminate(timeout time.Duration) error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = syscall.Kill(-s.pid, syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(timeout):
	}
	_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	<-s.exited
	return fmt.Errorf("%s (pid %d) did not stop within %v of SIGTERM: killed", s.name, s.pid, timeout)
}
