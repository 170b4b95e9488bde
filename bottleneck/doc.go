// Package bottleneck names what limits a work queue over a window of its
// signals: the process's CPU, the API server's throttling, the client's
// rate limiter, errors, too few workers, or nothing. It holds the one table
// of classes, signals and thresholds (Rules) that every part of otelqueue
// which classifies reads: the adaptive worker pool of package otelqueue,
// the examples' summary line, and, generated from the table, the Prometheus
// recording rules and queue-figures.sh of example/prometheus
// (a test of example/prometheus fails when they are stale).
//
// A Window holds the differences of two readings of a queue's cumulative
// numbers (scheduler.Stats, a Runner's Stats, otelqueue.ClientStats) and
// the process's CPU (package procstat) over the same interval; its Classify
// returns the Verdict, its LittlesLaw the worker count the load needs and
// its Size the CPU per reconcile and the cores the arrivals need.
// docs/tuning.md explains each class and what to change; docs/scaling.md
// how to size a controller from these figures.
package bottleneck
