package release

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/mod/semver"
)

// RootModule is the module path of the library; every other module of the
// repository that uses it requires it at the release version.
const RootModule = "github.com/otelqueue/otelqueue"

// versionConst matches the declaration of the version in
// internal/semconv/version.go, which release/release.sh rewrites.
var versionConst = regexp.MustCompile(`(?m)^const Version = "([^"]*)"$`)

// LibraryVersion returns the release version ("v" + otelqueue.Version)
// read from internal/semconv/version.go under the repository root, and checks that
// it is a canonical semantic version.
func LibraryVersion(repoRoot string) (string, error) {
	file := filepath.Join(repoRoot, "internal", "semconv", "version.go")
	src, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("release: reading the library version: %w", err)
	}
	m := versionConst.FindSubmatch(src)
	if m == nil {
		return "", fmt.Errorf("release: %s has no line matching %s: keep the version in that form, the release script rewrites it", file, versionConst)
	}
	v := "v" + string(m[1])
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return "", fmt.Errorf("release: otelqueue.Version is %q: it must be a semantic version such as 1.2.3 (without the v)", m[1])
	}
	return v, nil
}
