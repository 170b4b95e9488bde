#!/bin/sh
# fleet-figures_test.sh: tests fleet-figures.sh on fleets of hand-made
# scrapes, 60 s apart, with the numbers of rules_test.yml's fleet groups
# (make rules runs it): every verdict of the line "fleet=" and "ok". Exits
# 1, naming each failed case and what it printed, if any fails.
#
#   sh example/prometheus/fleet-figures_test.sh
set -u
here=$(dirname "$0")
script=$here/fleet-figures.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cases=0
failures=0

# replica NAME ORDINAL TOTAL BY SHARE ADDS_PER_MIN CPU_PER_MIN MEMORY [STANDBY]:
# writes NAME-before.txt (counters at 0) and NAME-after.txt (a minute later);
# STANDBY, when given, is its queue's workqueue_standby.
replica() {
	labels="workqueue_shard_by=\"$4\",workqueue_shard_ordinal=\"$2\",workqueue_shard_total=\"$3\""
	for at in before after; do
		if [ $at = before ]; then adds=0 cpu=0; else adds=$6 cpu=$7; fi
		{
			echo "# TYPE workqueue_shard_share gauge"
			echo "workqueue_shard_share{$labels} $5"
			echo "workqueue_adds_total{name=\"q\",controller=\"q\"} $adds"
			echo "workqueue_work_duration_seconds_count{name=\"q\",controller=\"q\"} $adds"
			echo "process_cpu_time_seconds_total{cpu_mode=\"user\"} $cpu"
			echo "otelqueue_memory_needed_bytes $8"
			if [ $# -ge 9 ]; then echo "workqueue_standby{name=\"q\",controller=\"q\"} $9"; fi
		} > "$dir/$1-$at.txt"
	done
}

# check CASE WANT REPLICA...: the line "fleet=" of the replicas' scrapes
# must match the shell pattern WANT.
check() {
	name=$1 want=$2
	shift 2
	cases=$((cases + 1))
	set -- 60 $(for r in "$@"; do printf '%s %s ' "$dir/$r-before.txt" "$dir/$r-after.txt"; done)
	if ! out=$(sh "$script" "$@" 2>&1); then
		failures=$((failures + 1))
		printf 'FAIL %s: fleet-figures.sh failed: %s\n' "$name" "$out" >&2
		return
	fi
	got=$(printf '%s\n' "$out" | sed -n 's/^fleet=/fleet=/p')
	case "$got" in
	$want) ;;
	*)
		failures=$((failures + 1))
		printf 'FAIL %s: got "%s", want "%s"; it printed:\n%s\n' "$name" "$got" "$want" "$out" >&2
		;;
	esac
}

# Three shards of 1/3, 10 keys/s each, 2.8 cores (4 needed) and 1 GiB:
# 12 cores, three pods of 4.
replica a 0 3 uid 0.3333333333333333 600 168 1073741824
replica b 1 3 uid 0.3333333333333333 600 168 1073741824
replica c 2 3 uid 0.33333333333333337 600 168 1073741824
check ok 'fleet=ok' a b c
# A warm standby of shard 0 beside a (workqueue_standby 1): left out; once
# it leads (0), it overlaps a.
replica s 0 3 uid 0.3333333333333333 0 6 1073741824 1
check standby 'fleet=ok' a b c s
replica s 0 3 uid 0.3333333333333333 0 6 1073741824 0
check standby-leading 'fleet=overlap (shares summed 1.333, ordinal 0 of 3 twice*' a b c s
# c down: two thirds covered.
check uncovered 'fleet=uncovered (0.667 of the hash space*' a b
# a second replica of shard 1 beside b, c down: the shares sum to 1.
check overlap-and-uncovered 'fleet=uncovered (0.667*) overlap (shares summed 1.000, ordinal 1 of 3 twice*' a b b
# Two totals at once.
replica x 0 2 uid 0.5 600 42 1073741824
replica y 1 2 uid 0.5 600 42 1073741824
check two-totals 'fleet=overlap (shares summed 2.000*replicas of several totals*' a b c x y
# A split by namespace with one big namespace: 40/s and 10/s, 1.6 times.
replica h0 0 2 namespace 0.5 2400 42 1073741824
replica h1 1 2 namespace 0.5 600 42 1073741824
check hot 'fleet=hot-shard (queue q: replica 0 takes 1.60 times*' h0 h1
# Just under the skew: 35/s and 15/s, 1.4 times.
replica w0 0 2 namespace 0.5 2100 42 1073741824
replica w1 1 2 namespace 0.5 900 42 1073741824
check warm 'fleet=ok' w0 w1
# One shard needing 6 cores over the 0.7 target: 8.57 / 4, 3 shards.
replica big 0 1 uid 1 600 360 1073741824
check too-few 'fleet=too-few-shards (run 3, 1 run)' big
# Four shards that one pod holds (4 cores, 4 GiB).
replica i0 0 4 uid 0.25 600 42 1073741824
replica i1 1 4 uid 0.25 600 42 1073741824
replica i2 2 4 uid 0.25 600 42 1073741824
replica i3 3 4 uid 0.25 600 42 1073741824
check too-many 'fleet=too-many-shards (1 would do, 4 run)' i0 i1 i2 i3
# Two shards that one pod holds: one to spare is not too many.
check one-spare 'fleet=ok' x y

if [ $failures -gt 0 ]; then
	echo "fleet-figures_test.sh: $failures of $cases cases failed" >&2
	exit 1
fi
echo "fleet-figures_test.sh: $cases cases passed"
