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
#
# Where the work time goes (own, client rate limiter, API round trips,
# Retry-After) comes from the workqueue_client_* series of an instrumented
# Kubernetes client (kubeclient.Instrument). The line "bottleneck=" names
# one class per queue with the thresholds and precedence of rules.yml's
# queue:workqueue_bottleneck:rate5m (its header states them; change them
# there, here and in queue-figures_test.sh together):
#   server-throttling  Retry-After share of the work time >= 0.25
#   client-rate-limit  client rate-limiter share of the work time >= 0.25
#   errors             retries / adds > 0.5
#   workers            Little's-law workers > configured workers
#   none               otherwise, when the configured workers are known
# and "recommended workers" more than the configured count only for workers.
set -eu
if [ $# -ne 3 ]; then
	echo "usage: $0 BEFORE AFTER SECONDS  (two scrapes of /metrics, SECONDS apart)" >&2
	exit 2
fi
awk -v secs="$3" '
BEGIN {
	SHARE = 0.25        # server-throttling, client-rate-limit: share of the work time, >=
	RETRIES = 0.5       # errors: retries / adds, >
	TARGET = 0.7        # utilization the recommended workers aim at
	SATURATED = 0.9     # coalesced adds count as arrivals from this utilization on
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
function has(m, q) { return ((m, q) in after) }
function pct(x) { return sprintf("%.1f%%", 100 * x) }
END {
	for (q in queues) {
		workers = after["workqueue_workers", q]
		busy = rate("workqueue_work_duration_seconds_sum", q)
		done = rate("workqueue_work_duration_seconds_count", q)
		adds = rate("workqueue_adds_total", q)
		coal = rate("workqueue_coalesced_total", q)
		retries = rate("workqueue_retries_total", q)
		depth = 0
		for (k in after) { split(k, f, SUBSEP); if (f[1] == "workqueue_depth" && f[2] == q) depth += after[k] }
		util = (workers > 0) ? busy / workers : -1
		mean = (done > 0) ? busy / done : 0
		# rules.yml: coalesced adds count as demand from 90% utilization on.
		arrivals = (util >= SATURATED) ? adds + coal : adds
		need = arrivals * mean / TARGET
		ll = (need == int(need)) ? need : int(need) + 1
		if (ll < 1) ll = 1
		printf "queue %s, over %ss:\n", q, secs
		printf "  configured workers      %s\n", (workers > 0) ? workers : "unknown (no workqueue_workers)"
		printf "  busy workers            %.3f\n", busy
		if (util >= 0) printf "  utilization             %.3f\n", util
		printf "  reconciles/s            %.2f (mean work time %.4fs)\n", done, mean
		printf "  adds/s                  %.2f became work, %.2f coalesced\n", adds, coal
		printf "  retries/s               %.2f", retries
		if (adds > 0) printf " (%.3f of the adds; errors from > %s)", retries / adds, RETRIES
		printf "\n"
		printf "  queue wait p50, p99     %ss, %ss (mean %.3fs)\n", quantile(0.5, "workqueue_queue_duration_seconds_bucket", q), \
			quantile(0.99, "workqueue_queue_duration_seconds_bucket", q), \
			(rate("workqueue_queue_duration_seconds_count", q) > 0) ? rate("workqueue_queue_duration_seconds_sum", q) / rate("workqueue_queue_duration_seconds_count", q) : 0
		printf "  depth, oldest pending   %d keys, %.3fs (at the second scrape)\n", depth, after["workqueue_oldest_pending_item_seconds", q]
		printf "  arrivals/s              %.2f%s\n", arrivals, (util >= SATURATED) ? " (saturated: adds + coalesced)" : " (adds)"

		# Where the work time goes: shares of the work time as in rules.yml,
		# each known when its histogram was exported and work finished.
		lim_m = "workqueue_client_rate_limiter_duration_seconds_sum"
		req_m = "workqueue_client_request_duration_seconds_sum"
		ra_m = "workqueue_client_retry_after_duration_seconds_sum"
		client = has(lim_m, q) || has(req_m, q) || has(ra_m, q)
		lim_known = has(lim_m, q) && busy > 0; lim = lim_known ? rate(lim_m, q) / busy : 0
		ra_known = has(ra_m, q) && busy > 0; ra = ra_known ? rate(ra_m, q) / busy : 0
		req = (has(req_m, q) && busy > 0) ? rate(req_m, q) / busy : 0
		if (!client) {
			printf "  client signals          absent: instrument the client with kubeclient.Instrument (bottleneck among errors, workers, none)\n"
		} else if (busy <= 0) {
			printf "  work time split         n/a (no work finished between the scrapes)\n"
		} else {
			own = 1 - (req + lim + ra); if (own < 0) own = 0
			printf "  work time split         own %s, client rate limiter %s, API %s, Retry-After %s\n", pct(own), pct(lim), pct(req), pct(ra)
			printf "  per reconcile           %.4fs: own %.4fs, client rate limiter %.4fs, API %.4fs, Retry-After %.4fs\n", \
				mean, own * mean, lim * mean, req * mean, ra * mean
			printf "  client requests/s       %.2f, answered 429: %.2f/s\n", rate("workqueue_client_requests_total", q), rate("workqueue_client_throttled_total", q)
		}

		# The bottleneck, in the precedence of rules.yml.
		if (ra_known && ra >= SHARE) {
			cls = "server-throttling"; why = sprintf("Retry-After share %.3f >= %s", ra, SHARE)
			change = "give the controller a larger API Priority and Fairness share on the server (its FlowSchema'"'"'s PriorityLevelConfiguration) or make fewer API calls"
		} else if (lim_known && lim >= SHARE) {
			cls = "client-rate-limit"; why = sprintf("client rate-limiter share %.3f >= %s", lim, SHARE)
			change = "raise the client'"'"'s QPS/Burst (rest.Config) or make fewer API calls"
		} else if (adds > 0 && retries / adds > RETRIES) {
			cls = "errors"; why = sprintf("retries/adds %.3f > %s", retries / adds, RETRIES)
			change = "fix the reconcile'"'"'s errors, they are most of the work"
		} else if (workers > 0 && done > 0 && ll > workers) {
			cls = "workers"; why = sprintf("Little'"'"'s-law workers %d > configured %d", ll, workers)
		} else if (workers > 0) {
			cls = "none"; why = sprintf("utilization %.3f", util)
			if (done > 0) why = why sprintf("; Little'"'"'s-law workers %d <= configured %d", ll, workers)
		} else {
			cls = "unknown"; why = "no workqueue_workers: the configured count is unknown"
		}
		printf "  bottleneck=%s (%s)\n", cls, why
		if (cls == "server-throttling" || cls == "client-rate-limit" || cls == "errors") {
			if (workers > 0 && (done <= 0 || ll >= workers))
				printf "  recommended workers     keep -workers %d: more workers will not help, %s\n", workers, change
			else if (workers > 0)
				printf "  recommended workers     %d (Little'"'"'s law, not above the configured %d): more workers will not help, %s\n", ll, workers, change
			else
				printf "  recommended workers     none above the configured count (unknown): more workers will not help, %s\n", change
		} else if (done > 0) {
			printf "  recommended workers     %d  (ceil(arrivals x mean work / %s))\n", ll, TARGET
		} else {
			printf "  recommended workers     n/a (no reconcile finished between the scrapes)\n"
		}
	}
}' "$1" "$2"
