#!/usr/bin/env bash
# release/apidiff.sh [BASE]: what changed in the API of the published
# modules (the root and controllerruntime) since BASE, by golang.org/x/exp's
# apidiff: the incompatible changes first, then the compatible ones. BASE
# defaults to the last release: the newest commit of main whose subject is
# "release vX.Y.Z" (a tag does not reach the repository, so it is found by
# its commit). Prints; the exit status says only whether it could compare.
# make release runs it.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
GO=${GO:-go}
APIDIFF=${APIDIFF:-"$GO run golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4"}
base=${1:-$(bash release/lastrelease.sh)}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/old" "$base" >/dev/null 2>&1
echo "== API changes since $(git log -1 --format='%h %s' "$base")"
for mod in . controllerruntime; do
	path=github.com/otelqueue/otelqueue
	[ "$mod" = . ] || path=$path/$mod
	(cd "$work/old/$mod" && $APIDIFF -m -w "$work/old.export" "$path")
	(cd "$root/$mod" && $APIDIFF -m -w "$work/new.export" "$path")
	echo "== $path"
	$APIDIFF -m "$work/old.export" "$work/new.export" || true
done
