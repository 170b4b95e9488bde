// Package otelqueuesdk holds the pieces of otelqueue that need the
// OpenTelemetry SDK rather than the API: a sampler that keeps the traces of
// queue items whose enqueuer was sampled (LinkSampled); views that give the
// queue histograms native (exponential) buckets beside their classic ones,
// and the Prometheus Gatherer and Registerer that serve both kinds as one
// histogram, as controller-runtime does (NativeHistograms,
// MergeNativeHistograms, NativeHistogramRegisterer); and views that make
// them exponential only (ExponentialHistograms).
//
// Package otelqueue itself imports only the OpenTelemetry API; import this
// package in the program that configures the SDK.
package otelqueuesdk
