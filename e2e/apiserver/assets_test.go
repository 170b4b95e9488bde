package apiserver

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelqueue/otelqueue/e2e"
)

// TestControlPlaneAssetsFromEnvironment: with KUBEBUILDER_ASSETS set, the
// user's binaries are used as they are, and a directory that lacks one is
// refused with a message that says which and what to do.
func TestControlPlaneAssetsFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(e2e.EnvAssets, dir)
	_, err := e2e.ControlPlaneAssets(context.Background(), t.TempDir(), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "holds no executable kube-apiserver") || !strings.Contains(err.Error(), "unset it") {
		t.Errorf("KUBEBUILDER_ASSETS without binaries: %v", err)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	got, err := e2e.ControlPlaneAssets(context.Background(), bin, nil) // nil: no progress wanted
	if err != nil || got != dir {
		t.Errorf("KUBEBUILDER_ASSETS with both binaries: %q, %v; want %q", got, err, dir)
	}
	if entries, _ := os.ReadDir(bin); len(entries) != 0 {
		t.Errorf("with KUBEBUILDER_ASSETS set, %d files were written to the cache", len(entries))
	}
}

// TestToolBuildFailure: a build that fails says which tool, where, after
// how long, and ends with the compiler's own words.
func TestToolBuildFailure(t *testing.T) {
	mod := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/broken\n\ngo 1.26.0\n",
		"main.go": "package main\n\nfunc main() { undefinedOnPurpose() }\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tool := e2e.Tool{Name: "broken", ModuleDir: mod, Package: ".", LDFlags: "-X main.v=1"}
	bin := t.TempDir()
	_, err := tool.Build(context.Background(), bin, io.Discard)
	if err == nil {
		t.Fatal("a tool that does not compile built")
	}
	for _, want := range []string{"broken: go build . (in " + mod + ") failed after", "undefined: undefinedOnPurpose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(bin, "broken-*")); len(m) != 0 {
		t.Errorf("a failed build left %v in the cache", m)
	}
}
