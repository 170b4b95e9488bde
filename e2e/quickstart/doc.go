// Package quickstart builds the README's client-go quick start, exactly as
// the README has it (its Go blocks, one after the other, in a module of
// their own that points at this checkout as the README says), and runs it
// against the embedded API server of the demo (example/app), through the
// kubeconfig the demo logs: the user's first program, tried as a user
// would. TestQuickStart checks that it reconciles the demo's ConfigMaps,
// that its inspector shows the queue and the size of the pod without a
// collector, that without OTEL_EXPORTER_OTLP_ENDPOINT it says so once and
// logs no export error, and that a Ctrl-C (SIGINT) ends it within 2 s.
//
// The controller-runtime quick start is the adoption of otelqueue into a
// kubebuilder scaffold, whose own kind needs a real API server: package
// e2e/kubebuilder tests it on one.
package quickstart
