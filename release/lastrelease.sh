#!/usr/bin/env bash
# release/lastrelease.sh: the commit of the last release, found by its
# subject ("release vX.Y.Z", which make release tells the releaser to
# commit): tags do not reach the repository. Falls back to the newest v*
# tag, then to the first commit.
set -euo pipefail
c=$(git log -1 --format=%H -E --grep='^release v[0-9]+\.[0-9]+\.[0-9]+$' 2>/dev/null || true)
[ -n "$c" ] || c=$(git describe --tags --abbrev=0 --match 'v*' 2>/dev/null || true)
[ -n "$c" ] || c=$(git rev-list --max-parents=0 HEAD | tail -1)
echo "$c"
