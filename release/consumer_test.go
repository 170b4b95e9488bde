package release

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// published are the modules a user can go get, with the programs of
// testdata/ that use them (testdata/check holds what they share).
var published = []struct {
	dir     string // under the repository root
	program string // under testdata/
}{
	{".", "clientgo"},
	{"controllerruntime", "controllerruntime"},
}

// TestConsumer does what a user does once the tags are pushed: in a fresh
// module outside the repository, go get the root and controllerruntime
// modules at the release version, then build and run a client-go controller
// and a controller-runtime controller against them. The modules come from a
// file-based module proxy that WriteProxy fills from the working tree; their
// dependencies from the module cache and the usual proxy. A replace in our
// go.mod files cannot help here: the go command ignores those of
// dependencies.
func TestConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds controller-runtime and client-go programs in a fresh module cache")
	}
	start := time.Now()
	root := repoRoot(t)
	version, err := LibraryVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	var mods []Module
	for _, p := range published {
		mods = append(mods, Module{Dir: filepath.Join(root, p.dir)})
	}
	paths, err := WriteProxy(proxy, version, mods)
	if err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	env := consumerEnv(t, proxy, t.TempDir())
	goCmd(t, work, env, "mod", "init", "example.com/consumer")
	seedGoSum(t, work, root)
	// One go get per module, the submodule first, as a user who starts with
	// controller-runtime does: asked for together, the root's version would
	// hide what the submodule requires.
	for i := range paths {
		goCmd(t, work, env, "get", paths[len(paths)-1-i]+"@"+version)
	}
	// The programs and their shared package check, as packages of the
	// consumer module (example.com/consumer/...).
	if err := os.CopyFS(work, os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	goCmd(t, work, env, "mod", "tidy")
	checkRequires(t, work, paths, version)

	bin := filepath.Join(work, "bin")
	goCmd(t, work, env, "build", "-o", bin+string(filepath.Separator), "./...")
	for _, p := range published {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, filepath.Join(bin, p.program)).CombinedOutput()
		cancel()
		if err != nil || !bytes.HasPrefix(out, []byte("ok: ")) {
			t.Errorf("%s: %v\n%s", p.program, err, out)
			continue
		}
		t.Logf("%s", bytes.TrimSpace(out))
	}
	t.Logf("consumer test of %s took %s", version, time.Since(start).Round(time.Second))
}

// consumerEnv is the environment of the go commands of the consumer: our
// modules from the file proxy, without checksum database lookups (they are
// not published); everything else as configured, from the local module cache
// first (it is laid out as a proxy) so that a warm machine needs no network.
// The module cache is a fresh one: the shared one may hold an older build of
// the same version, which the go command would take without looking.
func consumerEnv(t *testing.T, proxy, modcache string) []string {
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	proxies := []string{"file://" + filepath.ToSlash(proxy)}
	if shared := goEnv("GOMODCACHE"); shared != "" {
		proxies = append(proxies, "file://"+filepath.ToSlash(filepath.Join(shared, "cache", "download")))
	}
	if p := goEnv("GOPROXY"); p != "" && p != "off" {
		proxies = append(proxies, p)
	}
	env := []string{
		"GOPROXY=" + strings.Join(proxies, ","),
		"GONOSUMDB=" + RootModule,
		"GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		"GOMODCACHE=" + modcache,
		// -modcacherw lets t.TempDir remove the module cache; -trimpath
		// keeps the fresh cache's paths out of the build cache's keys, so
		// a second run reuses the compiled dependencies.
		"GOFLAGS=" + strings.TrimSpace(goEnv("GOFLAGS")+" -mod=mod -modcacherw -trimpath"),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	}
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GO") || strings.HasPrefix(kv, "GOCACHE=") || strings.HasPrefix(kv, "GOROOT=") || strings.HasPrefix(kv, "GOPATH=") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	t.Logf("go %s", strings.Join(args, " "))
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// seedGoSum gives the consumer the checksums the repository's go.sum files
// already vouch for, so that the go command verifies the downloaded
// dependencies against them instead of asking the checksum database.
func seedGoSum(t *testing.T, work, root string) {
	t.Helper()
	var sums []byte
	for _, p := range published {
		b, err := os.ReadFile(filepath.Join(root, p.dir, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, b...)
	}
	if err := os.WriteFile(filepath.Join(work, "go.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkRequires checks that the consumer's go.mod requires our modules at
// the release version, as go get and go mod tidy left it.
func checkRequires(t *testing.T, work string, paths []string, version string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(work, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range f.Require {
		got[r.Mod.Path] = r.Mod.Version
	}
	for _, p := range paths {
		if got[p] != version {
			t.Errorf("the consumer requires %s at %q, want %s", p, got[p], version)
		}
	}
}
