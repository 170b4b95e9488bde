package release

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// repoRoot is the repository root: this module lives in its release/
// directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "semconv", "version.go")); err != nil {
		t.Fatalf("the repository root %s is not where this test expects it: %v", root, err)
	}
	return root
}

// TestModulesRequireRootAtVersion checks what a user's go get relies on:
// every module of the repository that uses a published module (the root or
// controllerruntime) requires it at the version otelqueue.Version reports
// (a replace is ignored once the module is a dependency), and keeps a
// replace to its local directory for development.
func TestModulesRequireRootAtVersion(t *testing.T) {
	root := repoRoot(t)
	version, err := LibraryVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	publishedDirs := map[string]string{} // module path -> directory
	for _, p := range published {
		publishedDirs[modulePath(t, filepath.Join(root, p.dir))] = filepath.Join(root, p.dir)
	}
	requiring := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, data, nil)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, r := range f.Require {
			dir, ok := publishedDirs[r.Mod.Path]
			if !ok {
				continue
			}
			requiring++
			if r.Mod.Version != version {
				t.Errorf("%s requires %s %s, want %s (otelqueue.Version); make release sets both", rel, r.Mod.Path, r.Mod.Version, version)
			}
			replaced := false
			for _, rp := range f.Replace {
				if rp.Old.Path == r.Mod.Path && rp.New.Version == "" && filepath.Join(filepath.Dir(p), rp.New.Path) == dir {
					replaced = true
				}
			}
			if !replaced {
				t.Errorf("%s has no replace of %s by its directory: local builds would use the published version", rel, r.Mod.Path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if requiring < 2 {
		t.Errorf("%d requirements of the published modules, want at least controllerruntime's and bench's", requiring)
	}
}

func modulePath(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	return modfile.ModulePath(data)
}
