#!/bin/sh
# queue-figures_test.sh: tests queue-figures.sh on pairs of hand-written
# scrapes, testdata/CASE-before.txt and testdata/CASE-after.txt, 60 s apart
# (make rules runs it). The cases are those of the bottleneck groups of
# rules_test.yml, with the same numbers: each class, both sides of every
# threshold (the shares' 0.25, the retries' 0.5, the API server's 0.25 of
# the requests failed and 0.25 s single-object mean, Little's law equal to
# the configured count or one more), several classes at once, queues without
# client series or without a configured count. Checks the line
# "bottleneck=..." exactly and the recommended workers against a pattern;
# exits 1, naming each failed case and what it printed, if any fails.
#
#   sh example/prometheus/queue-figures_test.sh
set -u
here=$(dirname "$0")
script=$here/queue-figures.sh
data=$here/testdata
cases=0
failures=0

fail() {
	failures=$((failures + 1))
	printf 'FAIL %s: %s\n' "$1" "$2" >&2
}

# check CASE BOTTLENECK RECOMMENDED [LINE]: the script's "bottleneck=" line
# must be BOTTLENECK, the text after "recommended workers" must match the
# shell pattern RECOMMENDED, and LINE, when given, must be one of its lines
# (leading spaces aside).
check() {
	name=$1 want_b=$2 want_r=$3
	cases=$((cases + 1))
	if ! out=$(sh "$script" "$data/$name-before.txt" "$data/$name-after.txt" 60 2>&1); then
		fail "$name" "queue-figures.sh failed: $out"
		return
	fi
	got=$(printf '%s\n' "$out" | sed -n 's/^ *\(bottleneck=\)/\1/p')
	if [ "$got" != "$want_b" ]; then
		fail "$name" "got \"$got\", want \"$want_b\""
	fi
	got=$(printf '%s\n' "$out" | sed -n 's/^ *recommended workers  *//p')
	# shellcheck disable=SC2254 # want_r is a pattern
	case $got in
	$want_r) ;;
	*) fail "$name" "recommended workers \"$got\", want the pattern \"$want_r\"" ;;
	esac
	if [ $# -ge 4 ] && ! printf '%s\n' "$out" | sed 's/^ *//' | grep -qxF -- "$4"; then
		fail "$name" "no line \"$4\" in:
$out"
	fi
}

more='36  (ceil(arrivals x mean work / 0.7))'
apf='more workers will not help, give the controller a larger API Priority and Fairness share on the server (*) or make fewer API calls'
qps="more workers will not help, raise the client's QPS/Burst (rest.Config) or make fewer API calls"
errs="more workers will not help, fix the reconcile's errors, they are most of the work"
absent='client signals          absent: instrument the client with kubeclient.Instrument (bottleneck among cpu, errors, workers, none)'

# Retry-After share of the work time: 0.24 / 0.25 / 0.26 (36 > 30 workers otherwise).
check ra-below "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" \
	'work time split         own 51.0%, client rate limiter 0.0%, API 25.0%, Retry-After 24.0%'
check ra-at 'bottleneck=server-throttling (Retry-After share 0.250 >= 0.25)' "keep -workers 30: $apf" \
	'client requests/s       400.00, answered 429: 100.00/s'
check ra-above 'bottleneck=server-throttling (Retry-After share 0.260 >= 0.25)' "keep -workers 30: $apf"
# Client rate-limiter share: 0.24 / 0.25 / 0.26.
check rl-below "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more"
check rl-at 'bottleneck=client-rate-limit (client rate-limiter share 0.250 >= 0.25)' "keep -workers 30: $qps" \
	'per reconcile           0.1250s: own 0.0625s, client rate limiter 0.0312s, API 0.0312s, Retry-After 0.0000s'
check rl-above 'bottleneck=client-rate-limit (client rate-limiter share 0.260 >= 0.25)' "keep -workers 30: $qps"
# Retries / adds: 0.49 / 0.5 / 0.51, no client series.
check err-below "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" "$absent"
check err-at "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" "$absent"
check err-above 'bottleneck=errors (backoff retries/adds 0.510 > 0.5)' "keep -workers 30: $errs" "$absent"
# Little's law equal to the configured count, then one more.
check ll-equal "bottleneck=none (utilization 0.694; Little's-law workers 36 <= configured 36)" "$more"
check ll-more "bottleneck=workers (Little's-law workers 36 > configured 35)" "$more" "$absent"
# Several classes at once: the first in precedence wins.
check all 'bottleneck=server-throttling (Retry-After share 0.250 >= 0.25)' "keep -workers 30: $apf"
# The same figures on a standby queue: no class, no recommendation.
check standby 'bottleneck=standby (the workers wait for leadership: no class)' 'none while standby'
check limited-failing 'bottleneck=client-rate-limit (client rate-limiter share 0.500 >= 0.25)' "keep -workers 30: $qps"
# A downstream class never recommends more than configured, nor raises a
# lower Little's law to it.
check capped-below 'bottleneck=client-rate-limit (client rate-limiter share 0.500 >= 0.25)' \
	"36 (Little's law, not above the configured 40): $qps"
check api-only "bottleneck=none (utilization 0.625; Little's-law workers 36 <= configured 40)" "$more" \
	'work time split         own 50.0%, client rate limiter 0.0%, API 50.0%, Retry-After 0.0%'
# No configured count.
check unconfigured 'bottleneck=unknown (no workqueue_workers: the configured count is unknown)' "$more" "$absent"
check unconfigured-limited 'bottleneck=client-rate-limit (client rate-limiter share 0.500 >= 0.25)' \
	"none above the configured count (unknown): $qps"
# Nothing done: no shares, no Little's law.
check idle 'bottleneck=none (utilization 0.000)' 'n/a (no reconcile finished between the scrapes)' \
	'work time split         n/a (no work finished between the scrapes)'
# Saturated: coalesced adds count as arrivals.
check sat-throttled 'bottleneck=server-throttling (Retry-After share 0.500 >= 0.25)' "keep -workers 20: $apf" \
	'arrivals/s              200.00 (saturated: adds + coalesced)'
check sat-draining "bottleneck=none (utilization 0.938; Little's-law workers 9 <= configured 20)" \
	'9  (ceil(arrivals x mean work / 0.7))'

# The process's CPU (package procstat's series): used over the cores it
# has, 0.895 / 0.9 / 0.91; a half-core quota under GOMAXPROCS 2; throttled in
# 0.498 / 0.5 / 0.502 of the periods at a use of 0.6. The cpu class keeps the
# configured count.
cpuadv="more workers will not help, give the controller more CPU (its CPU limit, or a node with more) or make each reconcile cheaper; more workers only share the same cores"
check cpu-below "bottleneck=workers (Little's-law workers 36 > configured 35)" "$more" \
	'process CPU             1.790 of 2.000 cores used'
check cpu-at 'bottleneck=cpu (CPU used 0.900 of the cores the process has >= 0.9)' "keep -workers 35: $cpuadv" \
	'size                    0.0090s of CPU per reconcile, 2.57 cores needed for these arrivals at 0.7'
check cpu-above 'bottleneck=cpu (CPU used 0.910 of the cores the process has >= 0.9)' "keep -workers 35: $cpuadv"
check cpu-quota 'bottleneck=cpu (CPU used 1.000 of the cores the process has >= 0.9)' "keep -workers 35: $cpuadv" \
	'process CPU             0.500 of 0.500 cores used, throttled in 1.000 of the periods'
check thr-below "bottleneck=workers (Little's-law workers 36 > configured 35)" "$more"
check thr-at "bottleneck=cpu (CPU throttled in 0.500 of the cgroup's periods >= 0.5)" \
	"keep -workers 35: more workers will not help, raise the controller's CPU limit or make each reconcile cheaper; more workers only hit the quota sooner"
check thr-above "bottleneck=cpu (CPU throttled in 0.502 of the cgroup's periods >= 0.5)" \
	"keep -workers 35: more workers will not help, raise the controller's CPU limit or make each reconcile cheaper; more workers only hit the quota sooner"
# GOMAXPROCS 2 of the 4 CPUs the process may use, 0.89 / 0.9 / 0.91 of it
# used: cpu by GOMAXPROCS, which says to raise it. A busy node, no quota:
# the threads waited on run queues 0.24 / 0.25 / 0.26 of the work time of
# 5 busy workers of 16; Little's law asks for 8 of them.
mpadv="keep -workers 30: more workers will not help, raise GOMAXPROCS, or unset it (the Go runtime sets it from the CPU limit); not the CPU limit, which it does not reach, nor workers"
cwadv="more workers will not help, the node's other processes take the CPU it asks for: raise its CPU request (the scheduler places it where that is free, and the kernel weighs it by it) or move it off the busy node; more workers only wait longer"
check mp-below "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" \
	'process CPU             1.780 of 2.000 cores used, GOMAXPROCS 2 of 4.000 cores allowed'
check mp-at 'bottleneck=cpu (CPU used 0.900 of GOMAXPROCS, below the cores the process may use >= 0.9)' "$mpadv"
check mp-above 'bottleneck=cpu (CPU used 0.910 of GOMAXPROCS, below the cores the process may use >= 0.9)' "$mpadv"
check cw-below "bottleneck=none (utilization 0.312; Little's-law workers 8 <= configured 16)" '8  (ceil(arrivals x mean work / 0.7))' \
	'process CPU             0.700 of 10.000 cores used, waited for a CPU 0.632 of what it wanted'
check cw-at 'bottleneck=cpu (CPU wait share 0.250 of the work time >= 0.25)' "8 (Little's law, not above the configured 16): $cwadv"
check cw-above 'bottleneck=cpu (CPU wait share 0.260 of the work time >= 0.25)' "8 (Little's law, not above the configured 16): $cwadv"
# The wait of a busy node beside a queue whose workers are idle most of
# the time (5 of 30 busy): 0.4 of its work time, but no key waits behind
# it.
check cw-idle "bottleneck=none (utilization 0.167; Little's-law workers 8 <= configured 30)" '8  (ceil(arrivals x mean work / 0.7))' \
	'process CPU             0.700 of 10.000 cores used, waited for a CPU 0.741 of what it wanted'
# A queue that is a small part of a busy process: 1.5 cores of wait, 0.3
# of its work time, but 0.23 of the 6.5 cores the threads wanted.
check cw-starved "bottleneck=none (utilization 0.312; Little's-law workers 8 <= configured 16)" '8  (ceil(arrivals x mean work / 0.7))' \
	'process CPU             5.000 of 10.000 cores used, waited for a CPU 0.231 of what it wanted'
# A quiet process: its threads waited 0.05 of a core, as long as the work
# time of 5 reconciles of 10 ms a second; under a tenth of a core, no share.
check cw-quiet "bottleneck=none (utilization 0.002; Little's-law workers 1 <= configured 30)" '1  (ceil(arrivals x mean work / 0.7))'
# err-above's retries, every one a RequeueAfter: polling, no errors.
check polling "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" \
	'retries/s               102.00, 102.00 of them RequeueAfter (backoff retries 0.000 of the adds)'

# The API server as the process's instrumented clients see it
# (http_client_request_duration_seconds): 0.24 / 0.25 / 0.26 of the round
# trips failed for the server (5xx, *net.OpError, timeout; a 409 is not
# counted); a single-object mean of 0.24 / 0.25 / 0.26 s (lists and watches
# apart). Both classes keep the configured count; apiserver-slow says itself
# when more workers help.
uaadv="more workers will not help, bring the control plane back (kube-apiserver, etcd, a failing webhook); the reconciles are not at fault, more workers only retry faster"
latadv="find what slows the API server (admission webhooks, etcd, API Priority and Fairness queuing) or make fewer API calls; more workers help only while the server has room, which only a change of the count tells: try a step and watch the work time"
check ua-below "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" \
	'API server (process)    100.00 requests/s, 0.240 of them failed for the server, single-object mean (the slower of reads and writes) 0.0625s'
check ua-at "bottleneck=apiserver-unavailable (the process's API requests failed for the server 0.250 >= 0.25)" "keep -workers 30: $uaadv"
check ua-above "bottleneck=apiserver-unavailable (the process's API requests failed for the server 0.260 >= 0.25)" "keep -workers 30: $uaadv"
check lat-below "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more"
check lat-at 'bottleneck=apiserver-slow (single-object API read or write mean 0.250s >= 0.25)' "keep -workers 30: $latadv" \
	'API server (process)    112.00 requests/s, 0.000 of them failed for the server, single-object mean (the slower of reads and writes) 0.2500s'
check lat-above 'bottleneck=apiserver-slow (single-object API read or write mean 0.260s >= 0.25)' "keep -workers 30: $latadv"
# Every request of the process failed, but its queue has no client series
# (its reconciles make no API calls): not the API server's class.
check ua-no-client "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" \
	"API server (process)    100.00 requests/s, 1.000 of them failed for the server, single-object mean (the slower of reads and writes) 0.0625s (no client series: not this queue's class)"
# 4xx answers and canceled requests, 60% of them: none failed for the server.
check ua-client-errors "bottleneck=workers (Little's-law workers 36 > configured 30)" "$more" \
	'API server (process)    100.00 requests/s, 0.000 of them failed for the server, single-object mean (the slower of reads and writes) 0.0625s'

if [ "$failures" -gt 0 ]; then
	echo "queue-figures_test.sh: $failures failed expectations in $cases cases" >&2
	exit 1
fi
echo "queue-figures_test.sh: $cases cases passed"
