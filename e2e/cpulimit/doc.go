// Package cpulimit runs the example app (example/app) in a cgroup with a
// CPU quota of half a core, a load that needs more (-reconcile-cpu 60ms at
// -churn 12: 0.72 cores of reconcile CPU alone), and lifts the quota in the
// middle of the run: the proof, on a real CPU limit rather than on
// figures, that the summary line's class (the library's classifier,
// package bottleneck) says cpu while the quota holds, never asks for more
// workers then, sizes the controller above the quota, and drops the class
// once the quota is gone; and that an adaptive pool shrinks for the CPU
// under the quota, never grows for demand there, and grows again after.
//
// TestCPULimit runs a fixed pool and then an adaptive one, one after the
// other (about 2 minutes 40 s). TestWhichCPULimit (about 1 minute 40 s)
// runs the app where the CPU limits it with no quota, on a busy node (a
// neighbour cgroup of four times its weight burning every core) and with
// GOMAXPROCS 1, and checks that the line tells those limits apart: cpu by
// the threads' wait for a CPU, and cpu by GOMAXPROCS, each with its own
// advice. Both need root and a writable cpu controller:
// cgroup v1's (/sys/fs/cgroup/cpu), or cgroup v2's (cpu.max); without
// them they skip, saying why. They write a report of the summary lines they
// judged to $OTELQUEUE_E2E_RESULTS/cpulimit.md and cpuwhich.md when that is
// set, and log it either way (go test -v shows it).
//
// Environment:
//
//	OTELQUEUE_E2E_RESULTS  a directory for cpulimit.md and cpuwhich.md
package cpulimit
