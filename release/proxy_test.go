package release

import (
	stdzip "archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// TestWriteProxyLayout checks the files the go command reads from a file
// proxy, and that each zip holds its own module only, with a LICENSE.
func TestWriteProxyLayout(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	const version = "v0.0.1-test"
	paths, err := WriteProxy(dir, version, []Module{{Dir: root}, {Dir: filepath.Join(root, "controllerruntime")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{RootModule, RootModule + "/controllerruntime"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("modules %v, want %v", paths, want)
	}
	for _, p := range paths {
		vdir := filepath.Join(dir, filepath.FromSlash(p), "@v")
		list, err := os.ReadFile(filepath.Join(vdir, "list"))
		if err != nil || string(list) != version+"\n" {
			t.Errorf("%s: @v/list is %q (%v), want %q", p, list, err, version+"\n")
		}
		for _, ext := range []string{".info", ".mod"} {
			if _, err := os.Stat(filepath.Join(vdir, version+ext)); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		zipFile := filepath.Join(vdir, version+".zip")
		if _, err := zip.CheckZip(module.Version{Path: p, Version: version}, zipFile); err != nil {
			t.Errorf("%s: the go command would refuse the zip: %v", p, err)
		}
		zr, err := stdzip.OpenReader(zipFile)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		prefix := p + "@" + version + "/"
		for _, f := range zr.File {
			names[strings.TrimPrefix(f.Name, prefix)] = true
		}
		zr.Close()
		for _, must := range []string{"LICENSE", "go.mod"} {
			if !names[must] {
				t.Errorf("%s: the zip has no %s", p, must)
			}
		}
		for n := range names {
			for _, nested := range []string{"controllerruntime/", "bench/", "e2e/", "release/", ".git/"} {
				if p == RootModule && strings.HasPrefix(n, nested) {
					t.Errorf("%s: the zip holds %s, which belongs to another module or to no module", p, n)
				}
			}
		}
	}
}

func TestWriteProxyRefusesBadVersions(t *testing.T) {
	for _, v := range []string{"", "1.2.3", "v1.2", "v1.2.3+build", "latest"} {
		if _, err := WriteProxy(t.TempDir(), v, nil); err == nil {
			t.Errorf("WriteProxy accepted version %q", v)
		}
	}
}
