package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// EnvAssets is the variable through which envtest (and setup-envtest's
// users) name a directory holding kube-apiserver and etcd. When it is set,
// ControlPlaneAssets uses those binaries and builds nothing.
const EnvAssets = "KUBEBUILDER_ASSETS"

// ControlPlaneTools returns the tools that build the control plane from the
// Go module proxy: kube-apiserver (tools/kube-apiserver, k8s.io/kubernetes
// with its staging modules replaced by their releases) and etcd
// (tools/etcd). The API server's version comes from the k8s.io/kubernetes
// requirement of its go.mod, and is what its /version reports.
func ControlPlaneTools(moduleDir string) (apiserver, etcd Tool, err error) {
	apiDir := filepath.Join(moduleDir, "tools", "kube-apiserver")
	version, err := requiredVersion(filepath.Join(apiDir, "go.mod"), "k8s.io/kubernetes")
	if err != nil {
		return Tool{}, Tool{}, err
	}
	major, minor, ok := majorMinor(version)
	if !ok {
		return Tool{}, Tool{}, fmt.Errorf("%s: k8s.io/kubernetes %s is not a vMAJOR.MINOR.PATCH release", apiDir, version)
	}
	const pkg = "k8s.io/component-base/version."
	apiserver = Tool{
		Name:      "kube-apiserver",
		ModuleDir: apiDir,
		Package:   "k8s.io/kubernetes/cmd/kube-apiserver",
		LDFlags: "-X " + pkg + "gitVersion=" + version + " -X " + pkg + "gitMajor=" + major +
			" -X " + pkg + "gitMinor=" + minor + " -X " + pkg + "gitTreeState=clean",
		Hint: "kube-apiserver " + version + ": a cold build takes minutes (docs/testing.md#how-long); it is cached afterwards",
	}
	etcd = Tool{
		Name:      "etcd",
		ModuleDir: filepath.Join(moduleDir, "tools", "etcd"),
		Package:   ".",
		Hint:      "a cold build takes about a minute (docs/testing.md#how-long); it is cached afterwards",
	}
	return apiserver, etcd, nil
}

// ControlPlaneAssets returns a directory holding kube-apiserver and etcd
// executables, for envtest.Environment.BinaryAssetsDirectory or
// KUBEBUILDER_ASSETS.
//
// With KUBEBUILDER_ASSETS set, that directory is checked and returned as it
// is: a user's own binaries (setup-envtest's, a release's) are used. Without
// it, both are built from the modules of ControlPlaneTools, cached in binDir
// under a hash of their module content (so of their versions) and of the Go
// toolchain, and linked into a directory of binDir named after both
// binaries. A failed build says which binary, after how long, and the tail
// of its output. Progress goes to log (nil: nowhere). Concurrent callers,
// in one process or several, share the builds and the directory.
func ControlPlaneAssets(ctx context.Context, binDir string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	if dir := os.Getenv(EnvAssets); dir != "" {
		for _, name := range []string{"kube-apiserver", "etcd"} {
			if !isExecutable(filepath.Join(dir, name)) {
				return "", fmt.Errorf("%s=%s holds no executable %s: point it at a directory with kube-apiserver and etcd "+
					"(setup-envtest use -p path prints one), or unset it to build both from the Go module proxy", EnvAssets, dir, name)
			}
		}
		fmt.Fprintf(log, "e2e: control plane: using the binaries in %s (from %s)\n", dir, EnvAssets)
		return dir, nil
	}
	moduleDir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	apiTool, etcdTool, err := ControlPlaneTools(moduleDir)
	if err != nil {
		return "", err
	}
	etcdBin, err := etcdTool.Build(ctx, binDir, log)
	if err != nil {
		return "", fmt.Errorf("building etcd for the control plane: %w", err)
	}
	apiBin, err := apiTool.Build(ctx, binDir, log)
	if err != nil {
		return "", fmt.Errorf("building kube-apiserver for the control plane: %w", err)
	}
	return linkAssets(ctx, binDir, map[string]string{"kube-apiserver": apiBin, "etcd": etcdBin}, log)
}

// linkAssets returns a directory of binDir in which each name of bins links
// to its binary, creating it (whole, through a rename) when missing. Older
// such directories, whose binaries removeStale deleted, are removed.
func linkAssets(ctx context.Context, binDir string, bins map[string]string, log io.Writer) (string, error) {
	suffix := func(name string) string { return strings.TrimPrefix(filepath.Base(bins[name]), name+"-") }
	dir := filepath.Join(binDir, "assets-"+suffix("kube-apiserver")+"-"+suffix("etcd"))
	ready := func() bool {
		for name := range bins {
			if !isExecutable(filepath.Join(dir, name)) { // Stat follows the link
				return false
			}
		}
		return true
	}
	if ready() {
		return dir, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(binDir, ".lock-assets"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if ready() {
		return dir, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(binDir, ".assets-")
	if err != nil {
		return "", err
	}
	for name, bin := range bins {
		if err := os.Symlink(bin, filepath.Join(tmp, name)); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(binDir, "assets-*"))
	for _, d := range old {
		if d != dir && os.RemoveAll(d) == nil {
			fmt.Fprintf(log, "e2e: control plane: removed stale %s\n", d)
		}
	}
	fmt.Fprintf(log, "e2e: control plane: binaries in %s\n", dir)
	return dir, nil
}

// requiredVersion returns the version at which the go.mod at path requires
// module.
func requiredVersion(path, module string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New(path + " does not require " + module)
}

// majorMinor splits v1.37.2 into "1" and "37".
func majorMinor(version string) (major, minor string, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) != 3 || !strings.HasPrefix(version, "v") {
		return "", "", false
	}
	for _, p := range parts[:2] {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return "", "", false
		}
	}
	return parts[0], parts[1], true
}
