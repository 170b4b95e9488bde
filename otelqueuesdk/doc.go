// Package otelqueuesdk holds the pieces of otelqueue that need the
// OpenTelemetry SDK rather than the API: a sampler that keeps the traces of
// queue items whose enqueuer was sampled, and views that switch the queue
// histograms to exponential (Prometheus native) histograms.
//
// Package otelqueue itself imports only the OpenTelemetry API; import this
// package in the program that configures the SDK.
package otelqueuesdk
