#!/bin/sh
# Regenerates scaffold/ from scratch, as it was made: a kubebuilder v4.16.0
# project (init, then create api for the kind Greeting), with the hand-written
# changes of handwritten.patch (the Greeting's spec.message, the reconcile body
# that keeps an owned ConfigMap, Owns(), its RBAC marker, the test of that
# reconcile, the sample), then the scaffold's own `make manifests generate`,
# which regenerates the CRD, the ClusterRole and the deepcopy functions from
# them. Needs Go and the Go module proxy (kubebuilder and controller-gen come
# from it); takes about 3 minutes. What it downloads into bin/ is removed.
#
#   sh e2e/kubebuilder/testdata/regen.sh && git diff --stat e2e/kubebuilder/testdata/scaffold
#
# The copyright headers carry the year of the run, so a run in another year
# changes them and nothing else.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The directory's name is the project's name (PROJECT, Makefile, config/).
mkdir "$work/mirror"
cd "$work/mirror"
kubebuilder() { go run sigs.k8s.io/kubebuilder/v4@v4.16.0 "$@"; }
kubebuilder init --domain otelqueue.example --repo example.com/mirror --owner "The otelqueue Authors"
kubebuilder create api --group demo --version v1 --kind Greeting --resource --controller
# Outside a git repository git apply works as patch -p1 does.
git apply --verbose "$here/handwritten.patch"
make manifests generate
rm -rf bin
rm -rf "$here/scaffold"
cp -a "$work/mirror" "$here/scaffold"
echo "regenerated $here/scaffold"
