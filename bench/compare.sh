#!/usr/bin/env bash
# compare.sh BASE [BENCH]: how far each benchmark variant moved between BASE
# (a git ref: the last release by default, see make bench-compare) and the
# working tree. It builds the bench test binary of each (BASE from a
# temporary worktree), runs them in COUNT interleaved rounds (BASE, then
# the tree, then BASE...: a burst of other work on a busy machine lands on
# both), and prints benchstat's comparison, one line per benchmark and
# variant, with the change of the median and its p-value. Benchmarks BASE
# does not have are left out. Then cmd/moved says by how much each variant
# moved and is the gate: it exits 1 (and so does this script) when one of
# otelqueue's own variants got slower than BASE by more than 2% with
# significance, or allocates more. Environment: COUNT (6), BENCHTIME (1s),
# BENCHSTAT (the benchstat command), GO (go), MOVEDFLAGS (cmd/moved's flags,
# -fail by default).
set -euo pipefail
base=${1:?usage: compare.sh BASE [BENCH]}
bench=${2:-'^BenchmarkLifecycle$'}
count=${COUNT:-6}
benchtime=${BENCHTIME:-1s}
go=${GO:-go}
benchstat=${BENCHSTAT:-"$go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && git rev-parse --show-toplevel)
out=$here/results/compare
mkdir -p "$out"
wt=$(mktemp -d)
cleanup() { git -C "$repo" worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"; }
trap cleanup EXIT
git -C "$repo" worktree add --detach "$wt" "$base" >/dev/null
echo "== building the bench binaries of $base and of the working tree" >&2
(cd "$wt/bench" && "$go" test -c -o "$out/base.test" .)
(cd "$here" && "$go" test -c -o "$out/head.test" .)
: >"$out/base.txt"
: >"$out/head.txt"
for i in $(seq "$count"); do
	echo "== round $i of $count" >&2
	"$out/base.test" -test.run '^$' -test.bench "$bench" -test.benchmem -test.benchtime "$benchtime" >>"$out/base.txt"
	"$out/head.test" -test.run '^$' -test.bench "$bench" -test.benchmem -test.benchtime "$benchtime" >>"$out/head.txt"
done
echo "== $base against the working tree, $count interleaved rounds of $benchtime (bench/results/compare/)" >&2
cd "$out"
# shellcheck disable=SC2086 # benchstat may be a command with arguments
$benchstat base.txt head.txt | tee benchstat.txt
# shellcheck disable=SC2086
$benchstat -format csv base.txt head.txt 2>/dev/null >benchstat.csv
echo "== how far each variant moved (bench/results/compare/moved.txt)" >&2
# shellcheck disable=SC2086 # MOVEDFLAGS holds several flags
(cd "$here" && "$go" run ./cmd/moved ${MOVEDFLAGS:--fail} <"$out/benchstat.csv") | tee moved.txt
