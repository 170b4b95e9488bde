#!/usr/bin/env bash
# release.sh vX.Y.Z — prepare a release of every module at one version
# (make release VERSION=vX.Y.Z). See docs/releasing.md.
#
# It checks the version, a clean tree and that the tags do not exist yet;
# sets the version in internal/semconv/version.go and in every go.mod that requires
# a published module; runs the release tests (the consumer test go gets the
# modules at that version from a file-based proxy and runs a client-go and a
# controller-runtime controller against them); and prints the commands that
# commit, tag and push. It commits, tags and pushes nothing itself.
set -euo pipefail

GO=${GO:-go}
root_module=github.com/otelqueue/otelqueue
# Modules users go get: each gets a tag <dir>/vX.Y.Z (the root: vX.Y.Z).
tagged_dirs=(. controllerruntime)

die() { echo "release: $*" >&2; exit 1; }

version=${1:-}
[ -n "$version" ] || die "usage: make release VERSION=vX.Y.Z (or release/release.sh vX.Y.Z)"
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
[[ $version =~ $semver ]] || die "version $version is not vMAJOR.MINOR.PATCH[-PRERELEASE], e.g. v0.1.0 or v0.2.0-rc.1"
major=${BASH_REMATCH[1]}
[ "$major" -lt 2 ] || die "version $version: v2 and later need /v$major module paths (https://go.dev/ref/mod#major-version-suffixes); change the module paths first"

cd "$(git rev-parse --show-toplevel)"

[ -z "$(git status --porcelain)" ] || die "the working tree is not clean (git status): commit or stash first, so that the release commit holds only the version changes"

if ! grep -qF "## [${version#v}]" CHANGELOG.md; then
	if [[ $version == *-* ]]; then
		echo "release: note: CHANGELOG.md has no [${version#v}] section (a pre-release may go without)" >&2
	else
		die "CHANGELOG.md has no '## [${version#v}]' section: move the [Unreleased] entries under it and commit first (docs/releasing.md)"
	fi
fi

tags=()
for d in "${tagged_dirs[@]}"; do
	if [ "$d" = . ]; then tags+=("$version"); else tags+=("$d/$version"); fi
done
for t in "${tags[@]}"; do
	if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
		die "tag $t exists already: pick the next version"
	fi
	if git remote get-url origin >/dev/null 2>&1 && git ls-remote --exit-code --tags origin "refs/tags/$t" >/dev/null 2>&1; then
		die "tag $t exists on origin already: pick the next version"
	fi
done

# The version, in its one place (otelqueue.Version and every instrumentation
# scope's version are that constant).
for f in internal/semconv/version.go; do
	echo "== $f: ${version#v}"
	sed -i.bak -E 's/^const Version = "[^"]*"$/const Version = "'"${version#v}"'"/' "$f"
	rm -f "$f.bak"
	grep -qx "const Version = \"${version#v}\"" "$f" || die "$f: no line 'const Version = \"...\"' to set"
done

published=()
for d in "${tagged_dirs[@]}"; do
	if [ "$d" = . ]; then published+=("$root_module"); else published+=("$root_module/$d"); fi
done
while IFS= read -r mod; do
	dir=$(dirname "$mod")
	[ "$dir" != . ] || continue
	json=$(cd "$dir" && "$GO" mod edit -json)
	for p in "${published[@]}"; do
		# A require of p (a replace has "Old"/"New" objects around its Path).
		if printf '%s\n' "$json" | grep -A1 -F "\"Path\": \"$p\"," | grep -q '"Version"'; then
			echo "== $dir/go.mod: require $p $version"
			(cd "$dir" && "$GO" mod edit -require="$p@$version")
		fi
	done
done < <(git ls-files '*go.mod' 'go.mod')

# What changed in the API since the last release (found by its commit):
# read it against the CHANGELOG's migration notes before committing.
GO="$GO" bash release/apidiff.sh || die "release/apidiff.sh could not compare the API with the last release"

echo "== release tests (the consumer test builds against a file-based proxy)"
if ! (cd release && "$GO" test -count=1 ./...); then
	echo "release: the release tests failed; undo the version changes with: git checkout -- ." >&2
	exit 1
fi

echo
echo "Ready. Review the diff (git diff), then:"
echo "  git commit -am 'release $version'"
for t in "${tags[@]}"; do echo "  git tag -a $t -m 'otelqueue $version'"; done
echo "  git push origin HEAD ${tags[*]}"
