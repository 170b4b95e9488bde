package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// writeReport prints both recommendations side by side, what the
// recommender saw, and the workload's figures in one row (row).
func writeReport(w io.Writer, name string, m Meta, samples []Sample, fetch time.Duration, v VPAResult, r *bottleneck.Recommendation) error {
	var b strings.Builder
	ran := time.Duration(0)
	if len(samples) > 0 {
		ran = samples[len(samples)-1].At.Sub(m.Start)
	}
	fmt.Fprintf(&b, "workload %s: %s\n", name, m.Command)
	if m.Cgroup != "" {
		fmt.Fprintf(&b, "under %s\n", m.Cgroup)
	}
	fmt.Fprintf(&b, "ran %v from %s: %d samples of %v; VPA fetched one every %v: %d fed, %d CPU samples kept\n\n",
		ran.Round(time.Second), m.Start.UTC().Format(time.RFC3339), len(samples), m.Resolution, fetch, v.Fed, v.Aggregated)

	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	oq := func(f func(*bottleneck.Recommendation) string) string {
		if r == nil {
			return "(not read)"
		}
		return f(r)
	}
	fmt.Fprintln(tw, "\totelqueue\tVPA target\tVPA lower bound\tVPA upper bound")
	fmt.Fprintf(tw, "CPU request (cores)\t%s\t%.3f\t%.3f\t%.3f\n", oq(func(r *bottleneck.Recommendation) string {
		ge := ""
		if r.CPU.LowerBound {
			ge = ">="
		}
		return fmt.Sprintf("%s%.2f", ge, r.CPU.Request)
	}), v.TargetCPU, v.LowerCPU, v.UpperCPU)
	fmt.Fprintf(tw, "CPU limit (cores)\t%s\t(the pod's limit/request ratio times the target)\t\t\n", oq(func(r *bottleneck.Recommendation) string { return fmt.Sprintf("%.2f", r.CPU.Limit) }))
	fmt.Fprintf(tw, "memory request\t%s\t%s\t%s\t%s\n", oq(func(r *bottleneck.Recommendation) string { return mib(int64(r.Memory.Request)) }),
		mib(v.TargetMemory), mib(v.LowerMemory), mib(v.UpperMemory))
	fmt.Fprintf(tw, "memory limit\t%s\t(the pod's limit/request ratio times the target)\t\t\n", oq(func(r *bottleneck.Recommendation) string { return mib(int64(r.Memory.Limit)) }))
	fmt.Fprintf(tw, "GOMEMLIMIT\t%s\t-\t\t\n", oq(func(r *bottleneck.Recommendation) string { return mib(int64(r.Memory.GOMEMLIMIT)) }))
	fmt.Fprintf(tw, "workers\t%s\t-\t\t\n", oq(workers))
	if err := tw.Flush(); err != nil {
		return err
	}

	fed := fetched(samples, m.Start, fetch, m.Resolution)
	fmt.Fprintf(&b, "\nusage VPA was fed: cpu %s; rss %s\n", stats(fed, func(s Sample) float64 { return s.CPU }, "%.3f"),
		stats(fed, func(s Sample) float64 { return float64(s.RSS) / (1 << 20) }, "%.1fMi"))
	fmt.Fprintf(&b, "every sample:      cpu %s; rss %s\n", stats(samples, func(s Sample) float64 { return s.CPU }, "%.3f"),
		stats(samples, func(s Sample) float64 { return float64(s.RSS) / (1 << 20) }, "%.1fMi"))
	fmt.Fprintf(&b, "                   rss anonymous %s; file-backed %s\n", stats(samples, func(s Sample) float64 { return float64(s.RSSAnon) / (1 << 20) }, "%.1fMi"),
		stats(samples, func(s Sample) float64 { return float64(s.RSSFile) / (1 << 20) }, "%.1fMi"))
	if v.Confidence > 0 {
		fmt.Fprintf(&b, "VPA's confidence: %.4f days of history: upper bound x %.1f (1 + 1/confidence), lower bound x %.3f ((1 + 0.001/confidence)^-2)\n",
			v.Confidence, 1+1/v.Confidence, math.Pow(1+0.001/v.Confidence, -2))
	}
	if r != nil {
		fmt.Fprintf(&b, "otelqueue: %s\n", r)
		if !r.CPU.PeakAt.Before(m.Start) && !r.Memory.PeakAt.Before(m.Start) {
			fmt.Fprintf(&b, "otelqueue's busiest span for CPU ended %v after the start, for memory %v after it\n",
				r.CPU.PeakAt.Sub(m.Start).Round(time.Second), r.Memory.PeakAt.Sub(m.Start).Round(time.Second))
		}
	}
	fmt.Fprintf(&b, "\nrow: %s\n", row(name, ran, v, r))
	_, err := io.WriteString(w, b.String())
	return err
}

func workers(r *bottleneck.Recommendation) string {
	var q []string
	for _, x := range r.Queues {
		if !x.Known {
			q = append(q, fmt.Sprintf("%s unknown (%d run)", x.Name, x.Workers))
			continue
		}
		q = append(q, fmt.Sprintf("%s %d (%d run)", x.Name, x.Run, x.Workers))
	}
	if len(q) == 0 {
		return "no queue"
	}
	return strings.Join(q, ", ")
}

// stats is "mean M p90 P max X" of f over the samples (p90: the nearest
// rank).
func stats(samples []Sample, f func(Sample) float64, format string) string {
	if len(samples) == 0 {
		return "no sample"
	}
	v := make([]float64, len(samples))
	sum := 0.0
	for i, s := range samples {
		v[i] = f(s)
		sum += v[i]
	}
	slices.Sort(v)
	p90 := v[int(math.Ceil(0.9*float64(len(v))))-1]
	return fmt.Sprintf("mean "+format+" p90 "+format+" max "+format, sum/float64(len(v)), p90, v[len(v)-1])
}

// row is the workload's figures in one Markdown table row: otelqueue's
// CPU request/limit, memory request/limit/GOMEMLIMIT and workers, then
// VPA's target (lower-upper) for CPU and memory.
func row(name string, ran time.Duration, v VPAResult, r *bottleneck.Recommendation) string {
	oqCPU, oqMem, oqWorkers := "-", "-", "-"
	if r != nil {
		ge := ""
		if r.CPU.LowerBound {
			ge = "≥"
		}
		oqCPU = fmt.Sprintf("%s%.2f / %s%.2f", ge, r.CPU.Request, ge, r.CPU.Limit)
		oqMem = fmt.Sprintf("%d / %d / %d", r.Memory.Request>>20, r.Memory.Limit>>20, r.Memory.GOMEMLIMIT>>20)
		var w []string
		for _, q := range r.Queues {
			if q.Known {
				w = append(w, fmt.Sprintf("%d (of %d)", q.Run, q.Workers))
			}
		}
		if len(w) > 0 {
			oqWorkers = strings.Join(w, ", ")
		}
	}
	return fmt.Sprintf("| %s | %v | %s | %s | %s | %.3f (%.3f–%.2f) | %.0f (%.0f–%.0f) |", name, ran.Round(time.Minute), oqCPU, oqMem, oqWorkers,
		v.TargetCPU, v.LowerCPU, v.UpperCPU, float64(v.TargetMemory)/(1<<20), float64(v.LowerMemory)/(1<<20), float64(v.UpperMemory)/(1<<20))
}
