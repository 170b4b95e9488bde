package quickstart

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/e2e"
)

// inspector is where the quick start serves its inspector.
const inspector = "http://127.0.0.1:9465/debug/queues"

// kubeconfigLine is the demo's log line that names its kubeconfig.
var kubeconfigLine = regexp.MustCompile(`KUBECONFIG=(\S+) go run \.`)

func TestQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the test builds the quick start and the demo")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	moduleDir, err := e2e.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(moduleDir)
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := clientGoQuickStart(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := buildQuickStart(ctx, t, dir, repo, src)
	demo, err := e2e.BuildExample(ctx, "./app", dir)
	if err != nil {
		t.Fatal(err)
	}

	// The demo, its inspector off (the quick start's is on 127.0.0.1:9465).
	d := start(ctx, t, demo, nil, "-metrics-addr", "")
	kubeconfig := d.waitFor(t, kubeconfigLine, time.Minute)[1]

	env := []string{"KUBECONFIG=" + kubeconfig}
	q := start(ctx, t, bin, env)
	// It reconciles the demo's ConfigMaps, and its inspector shows them,
	// and the size, with no collector.
	var page inspectorPage
	e2e.Eventually(t, time.Minute, time.Second, func() error {
		if err := getJSON(inspector+"?format=json", &page); err != nil {
			return err
		}
		if len(page.Queues) != 1 || page.Queues[0].Name != "configmaps" {
			return fmt.Errorf("queues %+v", page.Queues)
		}
		b := page.Queues[0].Bottleneck
		if b == nil || b.Reconciles <= 0 {
			return fmt.Errorf("no reconcile seen yet: %+v", b)
		}
		r := page.Recommendation
		if r == nil || len(r.Queues) != 1 || !r.Queues[0].Known || !r.CPU.Known || !r.Memory.Known {
			return fmt.Errorf("no size yet: %+v", r)
		}
		return nil
	})
	html, err := get(inspector)
	if err != nil || !strings.Contains(html, `id="size"`) || !strings.Contains(html, `data-field="size-workers"`) {
		t.Errorf("the inspector's page lacks the size: %v", err)
	}
	t.Logf("reconciles %.1f/s; recommendation: %+v", page.Queues[0].Bottleneck.Reconciles, *page.Recommendation)

	// Ctrl-C: it ends within 2 s, cleanly, with the size as its last line.
	sent := time.Now()
	if err := q.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitErr := q.wait(10 * time.Second)
	took := time.Since(sent)
	out := q.output()
	t.Logf("the quick start's output:\n%s", out)
	if waitErr != nil {
		t.Fatalf("after SIGINT: %v", waitErr)
	}
	if took > 2*time.Second {
		t.Errorf("it took %v to end after SIGINT, want at most 2s", took)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[len(lines)-1], "workers: configmaps ") {
		t.Errorf("the last line is not the size: %q", lines[len(lines)-1])
	}
	said := 0
	for _, l := range lines {
		if strings.Contains(l, "OTEL_EXPORTER_OTLP_ENDPOINT is not set") {
			said++
		}
		if strings.Contains(strings.ToLower(l), "export") && !strings.Contains(l, "OTEL_EXPORTER_OTLP_ENDPOINT is not set") {
			t.Errorf("an export error without a collector: %q", l)
		}
	}
	if said != 1 {
		t.Errorf("it said %d times that OTEL_EXPORTER_OTLP_ENDPOINT is not set, want once", said)
	}
	t.Logf("ended %v after SIGINT", took.Round(time.Millisecond))
}

// clientGoQuickStart returns the Go blocks of the README's section "Quick
// start: client-go", one after the other: the program.
func clientGoQuickStart(readme string) (string, error) {
	const heading = "## Quick start: client-go\n"
	i := strings.Index(readme, heading)
	if i < 0 {
		return "", fmt.Errorf("the README has no %q", strings.TrimSpace(heading))
	}
	section := readme[i+len(heading):]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	var b strings.Builder
	for {
		k := strings.Index(section, "```go\n")
		if k < 0 {
			break
		}
		section = section[k+len("```go\n"):]
		end := strings.Index(section, "```")
		if end < 0 {
			return "", fmt.Errorf("a Go block of the quick start does not end")
		}
		b.WriteString(section[:end])
		b.WriteString("\n")
		section = section[end+3:]
	}
	if !strings.HasPrefix(b.String(), "package main") {
		return "", fmt.Errorf("the quick start's first Go block is not package main")
	}
	return b.String(), nil
}

// buildQuickStart writes src as main.go of a module of its own, points it
// at the checkout repo as the README's "A checkout rather than a release"
// says, and builds and vets it.
func buildQuickStart(ctx context.Context, t *testing.T, dir, repo, src string) string {
	t.Helper()
	mod := filepath.Join(dir, "quickstart")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"mod", "init", "example.com/quickstart"},
		{"mod", "edit", "-replace", "github.com/otelqueue/otelqueue=" + repo},
		{"mod", "tidy"},
		{"vet", "."},
		{"build", "-o", "quickstart", "."},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = mod
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return filepath.Join(mod, "quickstart")
}

// proc is a program the test runs, its output kept.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu    sync.Mutex
	lines []string
	grown chan struct{} // closed and replaced when a line comes
}

// start starts bin with args and env (added to the test's, less any
// OTEL_EXPORTER_OTLP_* variable: no collector), and kills it when the test
// ends.
func start(ctx context.Context, t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{}), grown: make(chan struct{})}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Dir = filepath.Dir(bin)
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.grown)
			p.grown = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		w.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			if p.wait(15*time.Second) != nil && t.Failed() {
				t.Logf("%s:\n%s", filepath.Base(bin), p.output())
			}
		}
	})
	return p
}

// waitFor waits for a line that matches re and returns its submatches.
func (p *proc) waitFor(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if m := re.FindStringSubmatch(l); m != nil {
				p.mu.Unlock()
				return m
			}
		}
		grown := p.grown
		p.mu.Unlock()
		select {
		case <-grown:
		case <-p.done:
			t.Fatalf("%s ended (%v) without a line like %s:\n%s", p.cmd.Path, p.err, re, p.output())
		case <-deadline:
			t.Fatalf("no line like %s within %v:\n%s", re, timeout, p.output())
		}
	}
}

// wait waits for the program to end, and kills it after timeout.
func (p *proc) wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("still running %v later: killed", timeout)
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// inspectorPage is what the test reads of the inspector's JSON.
type inspectorPage struct {
	Recommendation *struct {
		Queues []struct {
			Name  string `json:"name"`
			Known bool   `json:"known"`
			Run   int    `json:"run"`
		} `json:"queues"`
		CPU struct {
			Known   bool    `json:"known"`
			Request float64 `json:"request_cores"`
		} `json:"cpu"`
		Memory struct {
			Known   bool  `json:"known"`
			Request int64 `json:"request_bytes"`
		} `json:"memory"`
	} `json:"recommendation"`
	Queues []struct {
		Name       string `json:"name"`
		Bottleneck *struct {
			Reconciles float64 `json:"reconciles_per_second"`
		} `json:"bottleneck"`
	} `json:"queues"`
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

func getJSON(url string, v any) error {
	s, err := get(url)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(s), v)
}
