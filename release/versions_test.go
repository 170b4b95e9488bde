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
	if _, err := os.Stat(filepath.Join(root, "otelqueue", "version.go")); err != nil {
		t.Fatalf("the repository root %s is not where this test expects it: %v", root, err)
	}
	return root
}

// TestModulesRequireRootAtVersion checks what a user's go get relies on:
// every module of the repository that uses the library requires it at the
// version otelqueue.Version() reports (a replace is ignored once the module is
// a dependency), and keeps a replace to the local directory for development.
func TestModulesRequireRootAtVersion(t *testing.T) {
	root := repoRoot(t)
	version, err := LibraryVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	requiring := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" || p == filepath.Join(root, "go.mod") {
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
			if r.Mod.Path != RootModule {
				continue
			}
			requiring++
			if r.Mod.Version != version {
				t.Errorf("%s requires %s %s, want %s (otelqueue.Version()); make release sets both", rel, RootModule, r.Mod.Version, version)
			}
			replaced := false
			for _, rp := range f.Replace {
				if rp.Old.Path == RootModule && rp.New.Version == "" && filepath.Join(filepath.Dir(p), rp.New.Path) == root {
					replaced = true
				}
			}
			if !replaced {
				t.Errorf("%s has no replace of %s by the repository root: local builds would use the published version", rel, RootModule)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if requiring < 2 {
		t.Errorf("%d modules require %s, want at least controllerruntime and bench", requiring, RootModule)
	}
}
