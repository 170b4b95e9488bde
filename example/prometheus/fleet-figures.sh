#!/bin/sh
# GENERATED from example/prometheus/fleet-figures.sh.tmpl and the table of package bottleneck by internal/rulesgen (cd example && go test ./prometheus -update): edit those, not this file.
#
# fleet-figures.sh: the figures of rules.yml's group otelqueue.fleet,
# computed by hand from two scrapes of each replica of a sharded controller
# (package shard), for a user with no Prometheus (docs/scaling.md, "From one
# replica to N shards").
#
#   for r in 0 1 2; do curl -s replica-$r:9464/metrics > before-$r.txt; done; sleep 60
#   for r in 0 1 2; do curl -s replica-$r:9464/metrics > after-$r.txt; done
#   sh example/prometheus/fleet-figures.sh 60 before-0.txt after-0.txt before-1.txt after-1.txt before-2.txt after-2.txt
#
# Per replica: its shard (workqueue_shard_share and its labels), its
# arrivals per queue (workqueue_adds_total), its CPU per reconcile and the
# cores its arrivals need at the target utilization 0.7 (or, with no
# reconcile, the cores it used over it), and the memory it needs
# (otelqueue_memory_needed_bytes). For the fleet: the part of the hash
# space covered (two replicas of one ordinal counted once) and the shares
# summed; per queue the arrivals and the skew (the busiest replica's
# arrivals per part of the hash space over the mean); the shards the
# largest pod (4 cores, 8589934592 bytes) allows. The line "fleet="
# names what the rules alert on: uncovered, overlap, hot-shard (skew over
# 1.5), too-few-shards, too-many-shards (more than one to spare), or ok.
# A standby replica (workqueue_standby 1) is left out, as the rules leave it.
# Needs only a POSIX awk.
set -eu
if [ $# -lt 3 ] || [ $(( ($# - 1) % 2 )) -ne 0 ]; then
	echo "usage: $0 SECONDS BEFORE AFTER [BEFORE AFTER ...]  (two scrapes of each replica's /metrics, SECONDS apart)" >&2
	exit 2
fi
secs=$1
shift
awk -v secs="$secs" '
BEGIN {
	TARGET = 0.7
	PODCORES = 4
	PODMEMORY = 8589934592
	HOT = 1.5
	EPS = 0.000001
}
# The value of label k in a series name{labels}: k must follow { or , (so
# that name does not match otel_scope_name).
function label(s, k,    i, r) {
	i = index(s, "{" k "=\"")
	if (i == 0) i = index(s, "," k "=\"")
	if (i == 0) return ""
	r = substr(s, i + length(k) + 3)
	return substr(r, 1, index(r, "\"") - 1)
}
FNR == 1 { file++; rep = int((file - 1) / 2); after = (file - 1) % 2; if (rep + 1 > reps) reps = rep + 1 }
/^#/ { next }
/^workqueue_shard_share[{ ]/ && after {
	share[rep] = $NF + 0
	ordinal[rep] = label($1, "workqueue_shard_ordinal")
	total[rep] = label($1, "workqueue_shard_total")
	by[rep] = label($1, "workqueue_shard_by")
	sharded[rep] = 1
}
/^workqueue_adds_total[{ ]/ {
	q = label($1, "name")
	queues[q] = 1
	if (after) adds[rep, q] += $NF; else adds[rep, q] -= $NF
}
/^workqueue_work_duration_seconds_count[{ ]/ {
	if (after) recs[rep] += $NF; else recs[rep] -= $NF
}
/^(process_cpu_time_seconds_total|process_cpu_seconds_total)[{ ]/ {
	split($1, p, "{")
	if (after) cpu[rep, p[1]] += $NF; else cpu[rep, p[1]] -= $NF
}
/^otelqueue_memory_needed_bytes[{ ]/ && after { memory[rep] = $NF + 0 }
/^workqueue_standby[{ ]/ && after { if ($NF + 0 == 1) standby[rep] = 1; else active[rep] = 1 }
END {
	covered = 0; sum = 0; n = 0
	for (r = 0; r < reps; r++) {
		if (!sharded[r]) { printf "replica %d: no workqueue_shard_share (not sharded): left out\n", r; continue }
		if (standby[r] && !active[r]) { printf "replica %d: standby (workqueue_standby 1): left out\n", r; continue }
		n++
		sum += share[r]
		if (total[r] == "") covered += share[r]
		else {
			key = by[r] " " total[r] " " ordinal[r]
			owners[key]++
			if (owners[key] == 1) covered += share[r]
			if (owners[key] == 2) dup = dup sprintf(" %s of %s", ordinal[r], total[r])
			totals[total[r]] = 1
		}
		used = ((r, "process_cpu_time_seconds_total") in cpu ? cpu[r, "process_cpu_time_seconds_total"] : cpu[r, "process_cpu_seconds_total"]) / secs
		arr = 0
		for (q in queues) arr += adds[r, q] / secs
		if (recs[r] > 0) needed[r] = arr * (used / (recs[r] / secs)) / TARGET
		else needed[r] = used / TARGET
		cores += needed[r]
		mem += memory[r]
		printf "replica %d: shard %s of %s by %s, share %.3f; arrivals/s %.2f; cores needed %.2f; memory needed %.0fMi\n", r, ordinal[r], total[r], by[r], share[r], arr, needed[r], memory[r] / 1048576
	}
	if (n == 0) { print "fleet=unknown (no replica reports workqueue_shard_share)"; exit 0 }
	printf "fleet: %d replicas, covered %.3f, shares summed %.3f\n", n, covered, sum
	verdict = ""
	if (covered < 1 - EPS) verdict = verdict sprintf(" uncovered (%.3f of the hash space has an owner: start the missing shards)", covered)
	ntotals = 0
	for (t in totals) ntotals++
	if (sum > 1 + EPS || dup != "") verdict = verdict sprintf(" overlap (shares summed %.3f%s%s: one replica per ordinal, one total)", sum, dup != "" ? ", ordinal" dup " twice" : "", ntotals > 1 ? ", replicas of several totals" : "")
	for (q in queues) {
		tot = 0; m = 0; k = 0; busiest = -1
		for (r = 0; r < reps; r++) {
			if (!sharded[r] || share[r] <= 0) continue
			a = adds[r, q] / secs
			tot += a
			per = a / share[r]
			m += per; k++
			if (busiest < 0 || per > best) { busiest = r; best = per }
		}
		skew = (k > 0 && m > 0) ? best / (m / k) : 0
		printf "queue %s: arrivals/s %.2f, skew %.2f (replica %d busiest)\n", q, tot, skew, busiest
		if (n > 1 && skew > HOT) verdict = verdict sprintf(" hot-shard (queue %s: replica %d takes %.2f times the mean arrivals for its part: split by uid)", q, busiest, skew)
	}
	c = cores / PODCORES; mm = mem / PODMEMORY
	need = c > mm ? c : mm
	shards = int(need); if (shards < need) shards++
	if (shards < 1) shards = 1
	printf "needed: %.2f cores / %s and %.0fMi / %.0fMi per pod, rounded up: %d shards\n", cores, PODCORES, mem / 1048576, PODMEMORY / 1048576, shards
	if (shards > n) verdict = verdict sprintf(" too-few-shards (run %d, %d run)", shards, n)
	if (shards < n - 1) verdict = verdict sprintf(" too-many-shards (%d would do, %d run)", shards, n)
	if (verdict == "") verdict = " ok"
	print "fleet=" substr(verdict, 2)
}
' "$@"
