package e2e

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// PrometheusModule is the module that holds Prometheus's commands.
const PrometheusModule = "github.com/prometheus/prometheus"

// PrometheusTools returns the tools that build Prometheus and promtool from
// the Go module proxy (tools/prometheus). The version comes from the
// github.com/prometheus/prometheus requirement of that go.mod: Prometheus
// 3.MM.P is published as module version v0.3MM.P, so v0.316.0 is 3.16.0,
// which is what `prometheus --version` and the build_info metric report.
func PrometheusTools(moduleDir string) (prometheus, promtool Tool, err error) {
	dir := filepath.Join(moduleDir, "tools", "prometheus")
	modVersion, err := requiredVersion(filepath.Join(dir, "go.mod"), PrometheusModule)
	if err != nil {
		return Tool{}, Tool{}, err
	}
	version, err := PrometheusVersion(modVersion)
	if err != nil {
		return Tool{}, Tool{}, fmt.Errorf("%s: %w", dir, err)
	}
	// remove_all_sd leaves out Prometheus's service discoveries but the
	// static, file and HTTP ones, which are all the stack and the rules'
	// tests use: the cloud providers' SDKs (AWS EC2, Google Compute, OCI,
	// Azure…) are the slowest packages of a cold build.
	const tags = "remove_all_sd"
	const pkg = "github.com/prometheus/common/version."
	ldflags := "-X " + pkg + "Version=" + version + " -X " + pkg + "Revision=" + modVersion + " -X " + pkg + "Branch=" + modVersion
	prometheus = Tool{
		Name:        "prometheus",
		ModuleDir:   dir,
		Package:     PrometheusModule + "/cmd/prometheus",
		EnvOverride: "OTELQUEUE_E2E_PROMETHEUS",
		LDFlags:     ldflags,
		Tags:        tags,
		Hint:        "Prometheus " + version + ": a cold build takes minutes (docs/testing.md#how-long); it is cached afterwards",
	}
	promtool = Tool{
		Name:        "promtool",
		ModuleDir:   dir,
		Package:     PrometheusModule + "/cmd/promtool",
		EnvOverride: "OTELQUEUE_E2E_PROMTOOL",
		LDFlags:     ldflags,
		Tags:        tags,
		Hint:        "promtool " + version + ": it shares most packages with Prometheus, so it takes little more after it; it is cached afterwards",
	}
	return prometheus, promtool, nil
}

// PrometheusVersion turns the module version of github.com/prometheus/prometheus
// (v0.316.0) into the release it is (3.16.0).
func PrometheusVersion(modVersion string) (string, error) {
	parts := strings.SplitN(strings.TrimPrefix(modVersion, "v"), ".", 3)
	if len(parts) != 3 || parts[0] != "0" || !strings.HasPrefix(modVersion, "v") {
		return "", fmt.Errorf("%s %s is not a v0.MMM.P module version of a Prometheus release", PrometheusModule, modVersion)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < 100 {
		return "", fmt.Errorf("%s %s is not a v0.MMM.P module version of a Prometheus release", PrometheusModule, modVersion)
	}
	patch := parts[2]
	if i := strings.IndexAny(patch, "-+"); i >= 0 || strings.Trim(patch, "0123456789") != "" || patch == "" {
		return "", fmt.Errorf("%s %s is a pre-release or a pseudo-version, not a Prometheus release", PrometheusModule, modVersion)
	}
	return fmt.Sprintf("%d.%d.%s", minor/100, minor%100, patch), nil
}

// BuildPrometheus returns the paths of Prometheus and promtool, built from
// the Go module proxy and cached in the e2e module's .bin (BinDir), or the
// binaries named by OTELQUEUE_E2E_PROMETHEUS and OTELQUEUE_E2E_PROMTOOL.
// Progress goes to log.
func BuildPrometheus(ctx context.Context, log io.Writer) (prometheus, promtool string, err error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", "", err
	}
	pt, tt, err := PrometheusTools(dir)
	if err != nil {
		return "", "", err
	}
	binDir := BinDir(dir)
	if prometheus, err = pt.Build(ctx, binDir, log); err != nil {
		return "", "", err
	}
	if promtool, err = tt.Build(ctx, binDir, log); err != nil {
		return "", "", err
	}
	return prometheus, promtool, nil
}
