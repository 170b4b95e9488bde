// Package buildtest tests how the e2e module builds its tools (e2e.Tool),
// without starting any of them.
package buildtest

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
