package semconv

// NativeSuffix ends the name of the second stream otelqueuesdk's
// NativeHistograms adds to each of otelqueue's two duration histograms:
// "workqueue.queue.duration" gets a twin "workqueue.queue.duration.native"
// that aggregates the same measurements as a base-2 exponential histogram.
const NativeSuffix = ".native"
