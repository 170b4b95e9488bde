package examplecluster

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConnectChild runs the embedded API server in a child process, as
// the examples' binaries do: a seed of 2,500 ConfigMaps and the clients
// reach it, the workload's 429s are counted, a Ctrl-C (SIGINT to the
// process group) leaves it serving for the parent's drain, the kubeconfig
// the log names reaches it, and Close ends the process and removes the
// kubeconfig.
func TestConnectChild(t *testing.T) {
	inChild.Store(true)
	defer inChild.Store(false)
	ctx := context.Background()
	c, err := Connect(ctx, Flags{KubeQPS: 100, KubeBurst: 100, ServerQPS: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.child == nil || c.server != nil || !c.Embedded() {
		t.Fatalf("Connect after ServeChild: child %v, server %v", c.child, c.server)
	}
	w := &Workload{Cluster: c, Namespace: "ns", Objects: 2500, Annotations: map[string]string{"a": "b"}}
	if err := w.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.Client.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2500 || l.Items[0].Annotations["a"] != "b" || l.Items[0].UID == "" {
		t.Fatalf("listed %d ConfigMaps (first %+v), want the 2500 seeded", len(l.Items), l.Items[0].ObjectMeta)
	}
	if st := c.ServerStats(); st.QPS != 1 || st.Burst != 1 {
		t.Errorf("ServerStats %+v, want the -server-qps of 1", st)
	}
	// The workload is exempt from -server-qps; the controller's client is
	// not: its second request in a second gets 429 (client-go retries it
	// after a second). The workload's rejections are counted by its own
	// client: none here.
	cms := c.Client.CoreV1().ConfigMaps("ns")
	for range 2 {
		if _, err := cms.Get(ctx, Name(0), metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.workloadRejected.Load(); n != 0 {
		t.Errorf("%d of the workload's requests rejected, want 0 (exempt)", n)
	}

	// SIGINT to the child, as a Ctrl-C to the process group: it serves on.
	pid := c.child.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := cms.Get(ctx, Name(1), metav1.GetOptions{}); err != nil {
		t.Fatalf("after a SIGINT to the server's process: %v", err)
	}
	if len(c.closers) != 1 {
		t.Fatalf("%d closers, want the kubeconfig's", len(c.closers))
	}
	matches, _ := os.ReadDir(os.TempDir())
	var kubeconfigs []string
	for _, m := range matches {
		if strings.HasPrefix(m.Name(), "otelqueue-demo-") && strings.HasSuffix(m.Name(), ".kubeconfig") {
			b, _ := os.ReadFile(os.TempDir() + "/" + m.Name())
			if strings.Contains(string(b), "server: "+c.child.url+"\n") {
				kubeconfigs = append(kubeconfigs, os.TempDir()+"/"+m.Name())
			}
		}
	}
	if len(kubeconfigs) != 1 {
		t.Fatalf("kubeconfigs of %s: %v, want one", c.child.url, kubeconfigs)
	}

	c.Close()
	select {
	case <-c.child.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's process runs on after Close")
	}
	if _, err := os.Stat(kubeconfigs[0]); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig %s is still there after Close: %v", kubeconfigs[0], err)
	}
	c.Close() // again: nothing
}
