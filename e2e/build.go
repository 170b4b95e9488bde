package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Tool is a binary built from a module of its own under e2e/tools.
type Tool struct {
	// Name names the binary and the cache entry, e.g. "jaeger".
	Name string
	// ModuleDir is the directory holding the tool's go.mod.
	ModuleDir string
	// Package is the package to build, relative to ModuleDir ("." or an
	// import path listed as a tool in go.mod).
	Package string
	// EnvOverride names an environment variable that, when set, gives the
	// path of a prebuilt binary to use instead.
	EnvOverride string
	// LDFlags, when not empty, is passed to go build as -ldflags (for
	// example the version a binary reports).
	LDFlags string
	// Tags, when not empty, is passed to go build as -tags: build tags
	// that leave out what the tests do not use.
	Tags string
	// Hint is printed before a cold build (how long it takes, how much memory).
	Hint string
}

// ModuleDir returns the directory of the e2e module (the one holding its
// go.mod), wherever the calling test runs from.
func ModuleDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("cannot locate the e2e module: not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// BinDir returns where built binaries are cached: $OTELQUEUE_E2E_BIN_DIR,
// or .bin in the e2e module at moduleDir.
func BinDir(moduleDir string) string {
	if dir := os.Getenv("OTELQUEUE_E2E_BIN_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(moduleDir, ".bin")
}

// Build returns the path of the tool's binary, building it if no binary for
// the current module content and Go toolchain is cached in binDir. Concurrent
// callers (several test processes) serialize on the tool's lock file; the binary is
// written under a temporary name and renamed, so a cached binary is always
// complete. Progress goes to log (nil: nowhere).
func (t Tool) Build(ctx context.Context, binDir string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	if t.EnvOverride != "" {
		if p := os.Getenv(t.EnvOverride); p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("%s=%s: %w", t.EnvOverride, p, err)
			}
			fmt.Fprintf(log, "e2e: %s: using %s (from %s)\n", t.Name, p, t.EnvOverride)
			return p, nil
		}
	}
	key, err := t.cacheKey(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: hashing module: %w", t.Name, err)
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, t.Name+"-"+key)
	if isExecutable(bin) {
		fmt.Fprintf(log, "e2e: %s: cached %s\n", t.Name, bin)
		return bin, nil
	}

	// A lock per tool: a caller that needs one tool does not wait for the
	// build of another (make prebuild builds them all, one after the
	// other, while the stages run).
	unlock, err := lockFile(ctx, filepath.Join(binDir, ".lock-"+t.Name))
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(bin) { // built by another process while we waited
		fmt.Fprintf(log, "e2e: %s: cached %s\n", t.Name, bin)
		return bin, nil
	}

	fmt.Fprintf(log, "e2e: %s: building %s in %s (%s)\n", t.Name, t.Package, t.ModuleDir, t.Hint)
	tmp := bin + ".tmp"
	args := []string{"build", "-o", tmp}
	if t.LDFlags != "" {
		args = append(args, "-ldflags", t.LDFlags)
	}
	if t.Tags != "" {
		args = append(args, "-tags", t.Tags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, t.Package)...)
	cmd.Dir = t.ModuleDir
	cmd.Env = buildEnv()
	cmd.SysProcAttr = sysProcAttr() // the build dies with the test binary
	cmd.Cancel = func() error {     // on ctx's end, stop go and its compilers
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%s: go build: %w", t.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			fmt.Fprintf(log, "e2e: %s: still building (%s)\n", t.Name, time.Since(start).Round(time.Second))
			continue
		case err = <-done:
		}
		break
	}
	if err != nil {
		os.Remove(tmp)
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s: build stopped after %s: %w; the Go build cache keeps what was compiled, "+
				"so run again, with a longer go test -timeout (a cold build of Jaeger takes minutes)",
				t.Name, time.Since(start).Round(time.Second), ctx.Err())
		}
		return "", fmt.Errorf("%s: go build %s (in %s) failed after %s: %w; the last lines of its output:\n%s",
			t.Name, t.Package, t.ModuleDir, time.Since(start).Round(time.Second), err, Tail(out.String(), 40))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "e2e: %s: built %s in %s\n", t.Name, bin, time.Since(start).Round(time.Second))
	removeStale(binDir, t.Name, bin, log)
	return bin, nil
}

// cacheKey hashes what determines the binary: the Go toolchain and target,
// and every file of the tool's module (go.mod, go.sum, sources).
func (t Tool) cacheKey(ctx context.Context) (string, error) {
	h := sha256.New()
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION", "GOOS", "GOARCH", "CGO_ENABLED").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	fmt.Fprintf(h, "tool %s %s\nldflags %q\ntags %q\n%s", t.Name, t.Package, t.LDFlags, t.Tags, out)
	var files []string
	err = filepath.WalkDir(t.ModuleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != t.ModuleDir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(t.ModuleDir, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// buildEnv is the test's environment without what would change how the tools
// build: no workspace, and no GOFLAGS (a -race there would slow Jaeger down).
func buildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOWORK=off")
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// removeStale deletes binaries of the same tool built from older module
// content (a Jaeger binary weighs ~120 MB).
func removeStale(dir, name, keep string, log io.Writer) {
	matches, _ := filepath.Glob(filepath.Join(dir, name+"-*"))
	for _, m := range matches {
		if m == keep || strings.HasSuffix(m, ".tmp") {
			continue
		}
		if os.Remove(m) == nil {
			fmt.Fprintf(log, "e2e: %s: removed stale %s\n", name, m)
		}
	}
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Tail returns the last n lines of s (a trailing newline aside).
func Tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// BuildExample builds the package pkg of the examples' module (example/,
// beside the e2e module), such as "./app", into dir and returns the
// binary's path.
func BuildExample(ctx context.Context, pkg, dir string) (string, error) {
	moduleDir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	root := filepath.Join(filepath.Dir(moduleDir), "example")
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %v\n%s", pkg, root, err, out)
	}
	return bin, nil
}
