package examplecluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The embedded API server of an example's binary runs in a child process
// of the example: the same executable, started with serverEnv set to its
// ServerOptions, serves until its standard input closes (the example
// closed it, or ended: its end of the pipe closes with it). So the
// example's own process holds the controller and its workload only: its
// CPU and memory, which the summary line and the Sizer size the pod by,
// are not the API server's too (which keeps a copy of every object and a
// history of its writes).
//
// A test binary that calls Connect without ServeChild keeps the server in
// its own process.

// serverEnv names the child's options (childOptions, JSON).
const serverEnv = "OTELQUEUE_EXAMPLE_SERVER"

// seedPath is where the embedded API server takes a ConfigMapList to
// store as creates would, without a request each (Workload.Seed): not a
// Kubernetes API.
const seedPath = "/otelqueue/seed"

// childOptions are the ServerOptions a child serves with.
type childOptions struct {
	QPS    float64  `json:"qps"`
	Exempt []string `json:"exempt"`
}

// inChild says that ServeChild was called: Connect starts the embedded
// API server in a child process.
var inChild atomic.Bool

// ServeChild is the first call of an example's main. In the child process
// that serves the embedded API server for its parent, it serves until its
// standard input closes and exits; anywhere else it returns at once, and
// from then on Connect starts the embedded API server in such a child.
func ServeChild() {
	opts, ok := os.LookupEnv(serverEnv)
	if !ok {
		inChild.Store(true)
		return
	}
	if err := serveChild(opts, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embedded API server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveChild serves with the options opts, says its URL on out, and
// returns once in reaches its end.
func serveChild(opts string, in io.Reader, out io.Writer) error {
	// A Ctrl-C reaches the whole process group: the parent stops first,
	// and its reconciles still write while it drains; it closes our input
	// when done.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	var o childOptions
	if err := json.Unmarshal([]byte(opts), &o); err != nil {
		return fmt.Errorf("%s=%q: %w", serverEnv, opts, err)
	}
	srv, err := NewServer(ServerOptions{QPS: o.QPS, Exempt: o.Exempt})
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := fmt.Fprintln(out, "url", srv.URL()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	return nil
}

// child is the embedded API server's process, from its parent's side.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
	url   string
	done  chan struct{} // closed when the process has exited
}

// startChild starts the embedded API server in a child process with opts
// and returns once it serves.
func startChild(opts ServerOptions) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the embedded API server's process: %w", err)
	}
	env, err := json.Marshal(childOptions{QPS: opts.QPS, Exempt: opts.Exempt})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serverEnv+"="+string(env))
	cmd.Stderr = os.Stderr
	setPdeathsig(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the embedded API server's process: %w", err)
	}
	c := &child{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "url ")
	if err != nil || !ok {
		c.close()
		return nil, fmt.Errorf("the embedded API server's process did not say where it serves (%q, %v)", line, err)
	}
	c.url = url
	return c, nil
}

// close ends the child: its standard input closes, which it serves until;
// a child that has not exited two seconds later is killed.
func (c *child) close() {
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// seed stores the ConfigMaps in the embedded API server in the child, as
// creates would, a thousand at a time.
func seed(ctx context.Context, client *http.Client, url string, cms []corev1.ConfigMap) error {
	for len(cms) > 0 {
		n := min(len(cms), 1000)
		body, err := json.Marshal(corev1.ConfigMapList{Items: cms[:n]})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+seedPath, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("seeding the embedded API server: %s: %s", resp.Status, msg)
		}
		cms = cms[n:]
	}
	return nil
}

// serveSeed stores the ConfigMapList of r's body as creates would.
func (s *Server) serveSeed(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a ConfigMapList", http.StatusMethodNotAllowed)
		return
	}
	var l corev1.ConfigMapList
	if err := json.NewDecoder(r.Body).Decode(&l); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for i := range l.Items {
		if err := s.add(&l.Items[i]); err != nil && !apierrors.IsAlreadyExists(err) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// rejections counts the responses 429 Too Many Requests of a client in n.
type rejections struct {
	next http.RoundTripper
	n    *atomic.Uint64
}

func (r *rejections) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		r.n.Add(1)
	}
	return resp, err
}

// logKubeconfig writes a kubeconfig of the embedded API server at url to
// a file of its own, says in the log how the README's quick starts run
// against it, and returns the function that removes the file.
func logKubeconfig(url string) (remove func()) {
	f, err := os.CreateTemp("", "otelqueue-demo-*.kubeconfig")
	if err != nil {
		log.Printf("no kubeconfig for the embedded API server: %v", err)
		return func() {}
	}
	_, err = fmt.Fprintf(f, `apiVersion: v1
kind: Config
clusters:
- name: otelqueue-demo
  cluster:
    server: %s
contexts:
- name: otelqueue-demo
  context:
    cluster: otelqueue-demo
    user: otelqueue-demo
current-context: otelqueue-demo
users:
- name: otelqueue-demo
  user: {}
`, url)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Printf("no kubeconfig for the embedded API server: %v", err)
		_ = os.Remove(f.Name())
		return func() {}
	}
	log.Printf("embedded API server at %s: run the README's client-go quick start against it, while this runs, with KUBECONFIG=%s go run .", url, f.Name())
	return func() { _ = os.Remove(f.Name()) }
}
