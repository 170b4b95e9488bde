#!/bin/sh
# GENERATED from example/prometheus/queue-figures.sh.tmpl and the table of package bottleneck by internal/rulesgen (cd example && go test ./prometheus -update): edit those, not this file.
#
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
# Kubernetes client (kubeclient.Instrument); the process's CPU from the
# process_cpu_time_seconds_total, go_processor_limit and otelqueue_cpu_*
# series of package procstat (or client_golang's process_cpu_seconds_total
# and go_sched_gomaxprocs_threads); how the API server answers the process
# (the share of its round trips that failed for the server, the mean time of
# its single-object ones) from package kubeclient's
# http_client_request_duration_seconds_count and _sum, which count for the
# class only of the queues with client series (a queue that makes no API
# calls is not limited by the API server). The line "bottleneck=" names one
# class per queue with the thresholds and precedence of package bottleneck's
# table, which rules.yml's queue:workqueue_bottleneck:rate5m is generated
# from too (this script is generated from queue-figures.sh.tmpl):
#   apiserver-unavailable apiserver_unavailable >= 0.25
#   cpu                cpu_maxprocs >= 0.9
#   cpu                cpu_utilization >= 0.9
#   cpu                cpu_throttled >= 0.5
#   cpu                cpu_wait_share >= 0.25
#   server-throttling  retry_after_share >= 0.25
#   client-rate-limit  rate_limiter_share >= 0.25
#   apiserver-slow     apiserver_latency >= 0.25
#   errors             error_retries > 0.5
#   workers            workers_needed > 1
#   none               otherwise, when the utilization is known
# and "recommended workers" more than the configured count only for the
# classes that may ask for more (workers|none). A standby
# queue (workqueue_standby 1: its workers wait for leadership) says
# "bottleneck=standby" and recommends nothing.
set -eu
if [ $# -ne 3 ]; then
	echo "usage: $0 BEFORE AFTER SECONDS  (two scrapes of /metrics, SECONDS apart)" >&2
	exit 2
fi
awk -v secs="$3" '
BEGIN {
	TARGET = 0.7        # utilization the recommended workers and the cores needed aim at
	SATURATED = 0.9     # coalesced adds count as arrivals from this utilization on
	n = split("workers|none|unknown", m, "|")  # the classes that may recommend more workers
	for (i = 1; i <= n; i++) more[m[i]] = 1
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
# The CPU series of the process (no name label): summed by metric, per scrape.
/^(process_cpu_time_seconds_total|process_cpu_seconds_total|go_processor_limit|go_sched_gomaxprocs_threads|otelqueue_cpu_limit|otelqueue_cpu_periods_total|otelqueue_cpu_throttled_periods_total|otelqueue_cpu_gc_idle_seconds_total|otelqueue_cpu_run_delay_seconds_total|otelqueue_cpu_count)[{ ]/ {
	split($1, p, "{")
	if (FILENAME == ARGV[1]) pbefore[p[1]] += $2; else pafter[p[1]] += $2
	pseen[p[1]] = 1
	next
}
# A process series summed into pbefore/pafter under the key k.
function padd(k, v) {
	if (FILENAME == ARGV[1]) pbefore[k] += v; else pafter[k] += v
	pseen[k] = 1
}
# The API round trips of the instrumented clients of the process (no name
# label), summed per scrape: all that ended; those that failed for the API
# server, whose error_type is a 5xx or a transport error (not a 4xx answer,
# not "canceled": the caller canceled it; "timeout" counts); the count and
# the count and the time of the single-object reads (get) and writes
# (create, update, patch, delete), apart.
/^http_client_request_duration_seconds_(count|sum)[{ ]/ {
	split($1, p, "{"); e = label($1, "error_type"); v = label($1, "kubernetes_request_verb")
	obj = (v == "get") ? "read" : (v ~ /^(create|update|patch|delete)$/) ? "write" : ""
	if (p[1] == "http_client_request_duration_seconds_count") {
		padd("api_requests", $2)
		if (e != "" && e !~ /^4[0-9][0-9]$/ && e != "canceled") padd("api_unavailable", $2)
		if (obj != "") padd("api_" obj "s", $2)
	} else if (obj != "") {
		padd("api_" obj "_seconds", $2)
	}
	next
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
function prate(m) { return (pafter[m] - pbefore[m]) / secs }
function pdelta(m) { return pafter[m] - pbefore[m] }
# Why the class holds, in words, with the threshold thr (">= 0.25").
function why(sig, thr) {
	if (sig == "apiserver_unavailable") return sprintf("the process'"'"'s API requests failed for the server %.3f %s", val[sig], thr)
	if (sig == "apiserver_latency") return sprintf("single-object API read or write mean %.3fs %s", val[sig], thr)
	if (sig == "workers_needed") return sprintf("Little'"'"'s-law workers %d > configured %d", ll, workers)
	if (sig == "retry_after_share") return sprintf("Retry-After share %.3f %s", val[sig], thr)
	if (sig == "rate_limiter_share") return sprintf("client rate-limiter share %.3f %s", val[sig], thr)
	if (sig == "error_retries") return sprintf("backoff retries/adds %.3f %s", val[sig], thr)
	if (sig == "cpu_utilization") return sprintf("CPU used %.3f of the cores the process has %s", val[sig], thr)
	if (sig == "cpu_throttled") return sprintf("CPU throttled in %.3f of the cgroup'"'"'s periods %s", val[sig], thr)
	if (sig == "cpu_maxprocs") return sprintf("CPU used %.3f of GOMAXPROCS, below the cores the process may use %s", val[sig], thr)
	if (sig == "cpu_wait_share") return sprintf("CPU wait share %.3f of the work time %s", val[sig], thr)
	return sprintf("%s %.3f %s", sig, val[sig], thr)
}
function pct(x) { return sprintf("%.1f%%", 100 * x) }
END {
	# The CPU of the process: cores used over the cores it has (its quota when
	# under GOMAXPROCS), and the share of its periods throttled.
	cpu_used = ("process_cpu_time_seconds_total" in pseen) ? prate("process_cpu_time_seconds_total") : prate("process_cpu_seconds_total")
	cpu_seen = ("process_cpu_time_seconds_total" in pseen) || ("process_cpu_seconds_total" in pseen)
	cores = ("go_processor_limit" in pseen) ? pafter["go_processor_limit"] : pafter["go_sched_gomaxprocs_threads"]
	if (("otelqueue_cpu_limit" in pseen) && (cores <= 0 || pafter["otelqueue_cpu_limit"] < cores)) cores = pafter["otelqueue_cpu_limit"]
	periods = pafter["otelqueue_cpu_periods_total"] - pbefore["otelqueue_cpu_periods_total"]
	throttled = pafter["otelqueue_cpu_throttled_periods_total"] - pbefore["otelqueue_cpu_throttled_periods_total"]
	# The marking of the idle GC is left out of the CPU the work used.
	gc_idle = ("otelqueue_cpu_gc_idle_seconds_total" in pseen) ? prate("otelqueue_cpu_gc_idle_seconds_total") : 0
	worked = cpu_used - gc_idle; if (worked < 0) worked = 0
	# GOMAXPROCS below the cores the process may use (its CPUs, its quota
	# when under them): then it, not the CPU, is the limit.
	maxprocs = pafter["go_processor_limit"]
	allowed = pafter["otelqueue_cpu_count"]
	if (("otelqueue_cpu_limit" in pseen) && pafter["otelqueue_cpu_limit"] > 0 && pafter["otelqueue_cpu_limit"] < allowed) allowed = pafter["otelqueue_cpu_limit"]
	maxprocs_bound = cpu_seen && ("go_processor_limit" in pseen) && ("otelqueue_cpu_count" in pseen) && maxprocs > 0 && maxprocs < allowed - 0.01
	# The time the threads waited on the run queues for a CPU: the CPU the
	# node did not give them.
	run_delay = ("otelqueue_cpu_run_delay_seconds_total" in pseen) ? prate("otelqueue_cpu_run_delay_seconds_total") : -1
	starved_known = cpu_seen && run_delay >= 0 && run_delay + cpu_used >= 0.1
	# How the API server answered the process: the share of its round trips
	# that failed for the server; the mean time of a single-object read, or
	# of a write if more (a webhook slows writes only).
	api_requests = pdelta("api_requests"); api_reads = pdelta("api_reads"); api_writes = pdelta("api_writes")
	api_objects = api_reads + api_writes
	api_failed = (api_requests > 0) ? pdelta("api_unavailable") / api_requests : 0
	api_latency = (api_reads > 0) ? pdelta("api_read_seconds") / api_reads : 0
	if (api_writes > 0 && pdelta("api_write_seconds") / api_writes > api_latency) api_latency = pdelta("api_write_seconds") / api_writes
	reconciles_all = 0
	for (k in after) { split(k, f, SUBSEP); if (f[1] == "workqueue_work_duration_seconds_count") reconciles_all += after[k] - before[k] }
	for (q in queues) {
		workers = after["workqueue_workers", q]
		busy = rate("workqueue_work_duration_seconds_sum", q)
		done = rate("workqueue_work_duration_seconds_count", q)
		adds = rate("workqueue_adds_total", q)
		coal = rate("workqueue_coalesced_total", q)
		retries = rate("workqueue_retries_total", q)
		# The retries through the backoff: those the reconcile asked for
		# with RequeueAfter (workqueue_delayed_adds_total) are no errors.
		delayed_adds = has("workqueue_delayed_adds_total", q) ? rate("workqueue_delayed_adds_total", q) : 0
		backoff = retries - delayed_adds; if (backoff < 0) backoff = 0
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
		printf "  retries/s               %.2f, %.2f of them RequeueAfter", retries, delayed_adds
		if (adds > 0) printf " (backoff retries %.3f of the adds)", backoff / adds
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
			printf "  client signals          absent: instrument the client with kubeclient.Instrument (bottleneck among cpu, errors, workers, none)\n"
		} else if (busy <= 0) {
			printf "  work time split         n/a (no work finished between the scrapes)\n"
		} else {
			own = 1 - (req + lim + ra); if (own < 0) own = 0
			printf "  work time split         own %s, client rate limiter %s, API %s, Retry-After %s\n", pct(own), pct(lim), pct(req), pct(ra)
			printf "  per reconcile           %.4fs: own %.4fs, client rate limiter %.4fs, API %.4fs, Retry-After %.4fs\n", \
				mean, own * mean, lim * mean, req * mean, ra * mean
			printf "  client requests/s       %.2f, answered 429: %.2f/s\n", rate("workqueue_client_requests_total", q), rate("workqueue_client_throttled_total", q)
		}

		# The CPU of the process, and the size figures.
		delete val; delete known
		if (maxprocs_bound) { known["cpu_maxprocs"] = 1; val["cpu_maxprocs"] = worked / maxprocs }
		# That wait over the queue'"'"'s work time, and no more than the
		# share of what the threads wanted that they waited, as rules.yml:
		# from a tenth of a core of wait, with the workers busy at least
		# 25% of their time.
		if (cpu_seen && run_delay >= 0.1 && util >= 0.25) {
			known["cpu_wait_share"] = 1
			val["cpu_wait_share"] = run_delay / ((busy > run_delay + cpu_used) ? busy : run_delay + cpu_used)
		}
		if (cpu_seen && cores > 0) {
			known["cpu_utilization"] = 1; val["cpu_utilization"] = worked / cores
			printf "  process CPU             %.3f of %.3f cores used", cpu_used, cores
			if (gc_idle > 0) printf " (%.3f of it the idle GC'"'"'s)", gc_idle
			if (periods > 0) printf ", throttled in %.3f of the periods", throttled / periods
			if (maxprocs_bound) printf ", GOMAXPROCS %d of %.3f cores allowed", maxprocs, allowed
			if (starved_known) printf ", waited for a CPU %.3f of what it wanted", run_delay / (run_delay + cpu_used)
			printf "\n"
			if (reconciles_all > 0) {
				per = cpu_used * secs / reconciles_all
				printf "  size                    %.4fs of CPU per reconcile, %.2f cores needed for these arrivals at %s\n", per, arrivals * per / TARGET, TARGET
			}
		}
		if (periods > 0) { known["cpu_throttled"] = 1; val["cpu_throttled"] = throttled / periods }
		# The figures of the API server are those of the process: they count
		# for the class only of a queue whose reconciles use an instrumented
		# client (its workqueue_client_request_duration_seconds series, as
		# in rules.yml).
		api_client = has(req_m, q)
		if (api_requests > 0) {
			printf "  API server (process)    %.2f requests/s, %.3f of them failed for the server", api_requests / secs, api_failed
			if (api_objects > 0) printf ", single-object mean (the slower of reads and writes) %.4fs", api_latency
			if (!api_client) printf " (no client series: not this queue'"'"'s class)"
			printf "\n"
		}
		if (api_client && api_requests > 0) { known["apiserver_unavailable"] = 1; val["apiserver_unavailable"] = api_failed }
		if (api_client && api_objects > 0) { known["apiserver_latency"] = 1; val["apiserver_latency"] = api_latency }
		if (ra_known) { known["retry_after_share"] = 1; val["retry_after_share"] = ra }
		if (lim_known) { known["rate_limiter_share"] = 1; val["rate_limiter_share"] = lim }
		if (adds > 0) { known["error_retries"] = 1; val["error_retries"] = backoff / adds }
		if (workers > 0 && done > 0) { known["workers_needed"] = 1; val["workers_needed"] = ll / workers }

		# A standby queue (workqueue_standby 1 at the second scrape: a
		# replica whose workers wait for leadership) has no class and no
		# recommendation, as in rules.yml.
		if (after["workqueue_standby", q] == 1) {
			printf "  bottleneck=standby (the workers wait for leadership: no class)\n"
			printf "  recommended workers     none while standby\n"
			continue
		}
		# The bottleneck: the rules of the table in their order (generated).
		cls = ""; change = ""
		if (known["apiserver_unavailable"] && val["apiserver_unavailable"] >= 0.25) {
			cls = "apiserver-unavailable"; sig = "apiserver_unavailable"; thr = ">= 0.25"
			change = "bring the control plane back (kube-apiserver, etcd, a failing webhook); the reconciles are not at fault, more workers only retry faster"
		} else if (known["cpu_maxprocs"] && val["cpu_maxprocs"] >= 0.9) {
			cls = "cpu"; sig = "cpu_maxprocs"; thr = ">= 0.9"
			change = "raise GOMAXPROCS, or unset it (the Go runtime sets it from the CPU limit); not the CPU limit, which it does not reach, nor workers"
		} else if (known["cpu_utilization"] && val["cpu_utilization"] >= 0.9) {
			cls = "cpu"; sig = "cpu_utilization"; thr = ">= 0.9"
			change = "give the controller more CPU (its CPU limit, or a node with more) or make each reconcile cheaper; more workers only share the same cores"
		} else if (known["cpu_throttled"] && val["cpu_throttled"] >= 0.5) {
			cls = "cpu"; sig = "cpu_throttled"; thr = ">= 0.5"
			change = "raise the controller'"'"'s CPU limit or make each reconcile cheaper; more workers only hit the quota sooner"
		} else if (known["cpu_wait_share"] && val["cpu_wait_share"] >= 0.25) {
			cls = "cpu"; sig = "cpu_wait_share"; thr = ">= 0.25"
			change = "the node'"'"'s other processes take the CPU it asks for: raise its CPU request (the scheduler places it where that is free, and the kernel weighs it by it) or move it off the busy node; more workers only wait longer"
		} else if (known["retry_after_share"] && val["retry_after_share"] >= 0.25) {
			cls = "server-throttling"; sig = "retry_after_share"; thr = ">= 0.25"
			change = "give the controller a larger API Priority and Fairness share on the server (its FlowSchema'"'"'s PriorityLevelConfiguration) or make fewer API calls"
		} else if (known["rate_limiter_share"] && val["rate_limiter_share"] >= 0.25) {
			cls = "client-rate-limit"; sig = "rate_limiter_share"; thr = ">= 0.25"
			change = "raise the client'"'"'s QPS/Burst (rest.Config) or make fewer API calls"
		} else if (known["apiserver_latency"] && val["apiserver_latency"] >= 0.25) {
			cls = "apiserver-slow"; sig = "apiserver_latency"; thr = ">= 0.25"
			change = "find what slows the API server (admission webhooks, etcd, API Priority and Fairness queuing) or make fewer API calls; more workers help only while the server has room, which only a change of the count tells: try a step and watch the work time"
		} else if (known["error_retries"] && val["error_retries"] > 0.5) {
			cls = "errors"; sig = "error_retries"; thr = "> 0.5"
			change = "fix the reconcile'"'"'s errors, they are most of the work"
		} else if (known["workers_needed"] && val["workers_needed"] > 1) {
			cls = "workers"; sig = "workers_needed"; thr = "> 1"
			change = "raise the workers to the recommended count"
		}
		if (cls != "") {
			why_s = why(sig, thr)
		} else if (workers > 0) {
			cls = "none"; why_s = sprintf("utilization %.3f", util)
			if (done > 0) why_s = why_s sprintf("; Little'"'"'s-law workers %d <= configured %d", ll, workers)
		} else {
			cls = "unknown"; why_s = "no workqueue_workers: the configured count is unknown"
		}
		printf "  bottleneck=%s (%s)\n", cls, why_s
		# The change of apiserver-slow says itself when more workers help
		# (as Verdict.String of package bottleneck).
		nohelp = (cls == "apiserver-slow") ? "" : "more workers will not help, "
		if (!(cls in more)) {
			if (workers > 0 && (done <= 0 || ll >= workers))
				printf "  recommended workers     keep -workers %d: %s%s\n", workers, nohelp, change
			else if (workers > 0)
				printf "  recommended workers     %d (Little'"'"'s law, not above the configured %d): %s%s\n", ll, workers, nohelp, change
			else
				printf "  recommended workers     none above the configured count (unknown): %s%s\n", nohelp, change
		} else if (done > 0) {
			printf "  recommended workers     %d  (ceil(arrivals x mean work / %s))\n", ll, TARGET
		} else {
			printf "  recommended workers     n/a (no reconcile finished between the scrapes)\n"
		}
	}
}' "$1" "$2"
