// Package buildtest tests how the e2e module builds its tools (e2e.Tool),
// without starting any of them.
package buildtest

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/otelqueue/otelqueue/e2e"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestToolBuildTags: a tool's build tags reach go build, and a binary built
// with other tags is another cache entry.
func TestToolBuildTags(t *testing.T) {
	mod := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":    "module example.com/tagged\n\ngo 1.26.0\n",
		"main.go":   "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(which) }\n",
		"plain.go":  "//go:build !small\n\npackage main\n\nconst which = \"plain\"\n",
		"tagged.go": "//go:build small\n\npackage main\n\nconst which = \"small\"\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	run := func(tags string) (path, out string) {
		t.Helper()
		path, err := e2e.Tool{Name: "tagged", ModuleDir: mod, Package: ".", Tags: tags}.Build(context.Background(), bin, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		b, err := exec.Command(path).Output()
		if err != nil {
			t.Fatal(err)
		}
		return path, string(b)
	}
	plainPath, plain := run("")
	smallPath, small := run("small")
	if plain != "plain" || small != "small" {
		t.Errorf("built without tags: %q, with -tags small: %q; want plain and small", plain, small)
	}
	if plainPath == smallPath {
		t.Errorf("the builds with and without tags share the cache entry %s", plainPath)
	}
}

// TestToolBuildWaitsForItsOwnLockOnly: a tool whose build another process
// holds does not hold up the build of another tool (make prebuild builds
// them one after the other while the stages need them).
func TestToolBuildWaitsForItsOwnLockOnly(t *testing.T) {
	mod := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/quick\n\ngo 1.26.0\n",
		"main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	// Another process builds "slow": its lock is held for the whole test,
	// as is the one lock every build took before (.lock), which made make
	// test's stages wait for make prebuild's other builds.
	for _, name := range []string{".lock-slow", ".lock"} {
		f, err := os.OpenFile(filepath.Join(bin, name), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := (e2e.Tool{Name: "quick", ModuleDir: mod, Package: "."}).Build(ctx, bin, io.Discard); err != nil {
		t.Fatalf("building quick while slow's lock is held: %v", err)
	}
}
