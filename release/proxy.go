// Package release holds what a release of otelqueue's modules needs beyond
// the modules themselves: WriteProxy packages them at a version into a
// file-based module proxy, which the consumer test (consumer_test.go) fetches
// them from as a user would, with go get.
//
// It is a module of its own so that golang.org/x/mod stays out of the root
// go.mod.
package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// Module is one module of the repository to publish: its directory.
type Module struct {
	// Dir is the module's root directory, the one holding its go.mod.
	Dir string
}

// WriteProxy writes every module at version into dir in the layout of a
// GOPROXY=file://dir module proxy (https://go.dev/ref/mod#goproxy-protocol):
// <escaped module path>/@v/list, <version>.info, <version>.mod and
// <version>.zip. A module's zip holds the files a tag of the repository would
// give it: those git tracks or would track (not ignored), as they are in the
// working tree, without the nested modules; zip.Create enforces the rest of
// the go command's rules. It returns the module paths it wrote.
func WriteProxy(dir, version string, modules []Module) ([]string, error) {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return nil, fmt.Errorf("release: version %q is not a canonical semantic version such as v1.2.3 or v1.2.3-rc.1", version)
	}
	var paths []string
	for _, m := range modules {
		p, err := writeModule(dir, version, m.Dir)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func writeModule(proxyDir, version, modDir string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("release: reading the module's go.mod: %w", err)
	}
	modPath := modfile.ModulePath(gomod)
	if modPath == "" {
		return "", fmt.Errorf("release: %s/go.mod has no module line", modDir)
	}
	mv := module.Version{Path: modPath, Version: version}
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return "", fmt.Errorf("release: module path %q: %w", modPath, err)
	}
	vdir := filepath.Join(proxyDir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	files, err := moduleFiles(modDir)
	if err != nil {
		return "", err
	}
	var zbuf bytes.Buffer
	if err := zip.Create(&zbuf, mv, files); err != nil {
		return "", fmt.Errorf("release: zipping %s: %w", mv, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  gomod,
		version + ".zip":  zbuf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return modPath, nil
}

// moduleFiles lists the files of the module in dir that a tag would hold:
// tracked or untracked but not ignored, and present in the working tree.
func moduleFiles(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("release: listing the files of %s with git ls-files: %v: %s", dir, err, stderr.Bytes())
	}
	names := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(names)
	names = slices.Compact(names) // a modified file is both cached and in the tree
	var files []zip.File
	for _, n := range names {
		if n == "" {
			continue
		}
		fp := filepath.Join(dir, filepath.FromSlash(n))
		fi, err := os.Lstat(fp)
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			return nil, err
		}
		files = append(files, dirFile{slash: path.Clean(n), file: fp, info: fi})
	}
	return files, nil
}

// dirFile is a zip.File read from the working tree.
type dirFile struct {
	slash, file string
	info        os.FileInfo
}

func (f dirFile) Path() string                 { return f.slash }
func (f dirFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f dirFile) Open() (io.ReadCloser, error) { return os.Open(f.file) }
