#!/bin/sh
# queue-figures.sh: the figures of example/prometheus/rules.yml, computed by
# hand from two scrapes of a /metrics endpoint, for a user with no
# Prometheus (docs/tuning.md, worked example).
#
#   curl -s 127.0.0.1:9464/metrics > before.txt; sleep 60
#   curl -s 127.0.0.1:9464/metrics > after.txt
#   sh example/prometheus/queue-figures.sh before.txt after.txt 60
#
# Rates are the counters' increase over the seconds between the scrapes;
# quantiles interpolate inside histogram buckets as histogram_quantile does;
# gauges are read from the second scrape. Prints one block per queue (name
# label). Needs only a POSIX awk.
set -eu
if [ $# -ne 3 ]; then
	echo "usage: $0 BEFORE AFTER SECONDS  (two scrapes of /metrics, SECONDS apart)" >&2
	exit 2
fi
awk -v secs="$3" '
function label(s, k,    i, r) {
	i = index(s, k "=\"")
	if (i == 0) return ""
	r = substr(s, i + length(k) + 2)
	return substr(r, 1, index(r, "\"") - 1)
}
# One sample line: name{labels} value [timestamp]. Keep workqueue_* only.
/^workqueue_/ {
	split($1, p, "{"); metric = p[1]; q = label($1, "name")
	if (q == "") next
	queues[q] = 1
	key = metric SUBSEP q
	if (metric ~ /_bucket$/) key = key SUBSEP label($1, "le")
	if (metric == "workqueue_depth") key = key SUBSEP label($1, "priority")
	if (FILENAME == ARGV[1]) before[key] += $2; else after[key] += $2
}
function rate(m, q) { return (after[m, q] - before[m, q]) / secs }
function quantile(phi, m, q,    k, n, i, j, t, les, cnt, total, rank, lo, c) {
	n = 0
	for (k in after) {
		split(k, f, SUBSEP)
		if (f[1] != m || f[2] != q) continue
		n++; les[n] = (f[3] == "+Inf") ? 1e308 : f[3] + 0
		cnt[n] = after[k] - before[k]
	}
	for (i = 2; i <= n; i++)        # insertion sort by le
		for (j = i; j > 1 && les[j-1] > les[j]; j--) {
			t = les[j]; les[j] = les[j-1]; les[j-1] = t
			t = cnt[j]; cnt[j] = cnt[j-1]; cnt[j-1] = t
		}
	total = cnt[n]
	if (n < 2 || total <= 0) return "n/a"
	rank = phi * total
	for (i = 1; i < n; i++) if (cnt[i] >= rank) break
	if (i == n) return les[n-1]
	lo = 0; c = cnt[i]
	if (i > 1) { lo = les[i-1]; c -= cnt[i-1]; rank -= cnt[i-1] }
	return lo + (les[i] - lo) * rank / c
}
END {
	for (q in queues) {
		workers = after["workqueue_workers", q]
		busy = rate("workqueue_work_duration_seconds_sum", q)
		done = rate("workqueue_work_duration_seconds_count", q)
		adds = rate("workqueue_adds_total", q)
		coal = rate("workqueue_coalesced_total", q)
		depth = 0
		for (k in after) { split(k, f, SUBSEP); if (f[1] == "workqueue_depth" && f[2] == q) depth += after[k] }
		util = (workers > 0) ? busy / workers : -1
		mean = (done > 0) ? busy / done : 0
		# rules.yml: coalesced adds count as demand from 90% utilization on.
		arrivals = (util >= 0.9) ? adds + coal : adds
		need = arrivals * mean / 0.7
		rec = (need == int(need)) ? need : int(need) + 1
		if (rec < 1) rec = 1
		printf "queue %s, over %ss:\n", q, secs
		printf "  configured workers      %s\n", (workers > 0) ? workers : "unknown (no workqueue_workers)"
		printf "  busy workers            %.3f\n", busy
		if (util >= 0) printf "  utilization             %.3f\n", util
		printf "  reconciles/s            %.2f (mean work time %.4fs)\n", done, mean
		printf "  adds/s                  %.2f became work, %.2f coalesced\n", adds, coal
		printf "  retries/s               %.2f\n", rate("workqueue_retries_total", q)
		printf "  queue wait p50, p99     %ss, %ss (mean %.3fs)\n", quantile(0.5, "workqueue_queue_duration_seconds_bucket", q), \
			quantile(0.99, "workqueue_queue_duration_seconds_bucket", q), \
			(rate("workqueue_queue_duration_seconds_count", q) > 0) ? rate("workqueue_queue_duration_seconds_sum", q) / rate("workqueue_queue_duration_seconds_count", q) : 0
		printf "  depth, oldest pending   %d keys, %.3fs (at the second scrape)\n", depth, after["workqueue_oldest_pending_item_seconds", q]
		printf "  arrivals/s              %.2f%s\n", arrivals, (util >= 0.9) ? " (saturated: adds + coalesced)" : " (adds)"
		printf "  recommended workers     %d  (ceil(arrivals x mean work / 0.7))\n", rec
	}
}' "$1" "$2"
