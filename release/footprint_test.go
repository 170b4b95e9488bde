package release

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// footprintProgram is a user's whole program that imports only the
// scheduler and its instrumentation: what the root module costs a module
// that uses it so.
const footprintProgram = `package main

import (
	"fmt"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

func main() {
	q := scheduler.New(scheduler.Config[string]{Name: "footprint"})
	defer q.ShutDown()
	if _, err := otelqueue.Instrument(q); err != nil {
		panic(err)
	}
	q.Add("a")
	fmt.Println("ok: depth", q.Len())
}
`

// notInTheFootprint are modules that only otelqueue's examples, tests and
// tools use (the exporters and what they bring): a module that imports the
// library must not find them in its module graph.
var notInTheFootprint = []string{
	"google.golang.org/grpc",
	"go.opentelemetry.io/proto/otlp",
	"github.com/grpc-ecosystem/grpc-gateway/v2",
	"go.opentelemetry.io/otel/exporters/",
	"sigs.k8s.io/controller-runtime",
	"github.com/prometheus/otlptranslator",
}

// TestLibraryFootprint does what a user who imports only otelqueue and
// scheduler does: in a fresh module with a fresh module cache, go get the
// root module at the release version (from the file proxy of TestConsumer),
// go mod tidy, build and run. It fails when the module graph holds a module
// that only the examples, tests or tools need, and it logs the consumer's
// requirements and the module zips the go command downloaded.
func TestLibraryFootprint(t *testing.T) {
	root := repoRoot(t)
	version, err := LibraryVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	paths, err := WriteProxy(proxy, version, []Module{{Dir: root}})
	if err != nil {
		t.Fatal(err)
	}
	work, modcache := t.TempDir(), t.TempDir()
	env := consumerEnv(t, proxy, modcache)
	goCmd(t, work, env, "mod", "init", "example.com/footprint")
	seedGoSum(t, work, root)
	goCmd(t, work, env, "get", paths[0]+"@"+version)
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte(footprintProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd(t, work, env, "mod", "tidy")
	checkRequires(t, work, paths, version)

	cmd := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all")
	cmd.Dir, cmd.Env = work, env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	graph := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range graph {
		for _, bad := range notInTheFootprint {
			if strings.HasPrefix(line, bad) {
				t.Errorf("the module graph of a program that imports otelqueue and scheduler holds %s", line)
			}
		}
	}
	t.Logf("module graph: %d modules", len(graph))

	run := exec.CommandContext(t.Context(), "go", "run", ".")
	run.Dir, run.Env = work, env
	if out, err := run.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "ok: ") {
		t.Errorf("go run: %v\n%s", err, out)
	}

	gomod, err := os.ReadFile(filepath.Join(work, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the consumer's go.mod:\n%s", gomod)
	t.Logf("module zips downloaded: %s", strings.Join(downloadedZips(t, modcache), " "))
}

// downloadedZips lists the module@version of every zip in a module cache:
// the modules whose source the go command fetched.
func downloadedZips(t *testing.T, modcache string) []string {
	t.Helper()
	dl := filepath.Join(modcache, "cache", "download")
	var zips []string
	err := filepath.WalkDir(dl, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".zip") {
			return err
		}
		rel, _ := filepath.Rel(dl, p)
		mod := filepath.ToSlash(filepath.Dir(filepath.Dir(rel)))
		zips = append(zips, mod+"@"+strings.TrimSuffix(filepath.Base(p), ".zip"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(zips)
	return zips
}
