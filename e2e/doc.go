// Package e2e runs otelqueue against the real observability stack, on
// loopback only: Jaeger v2 (memory storage), an OpenTelemetry Collector
// configured by example/collector/config.yaml, and Prometheus 3.16 with
// exemplar storage and native histograms.
//
// The Jaeger, collector and Prometheus binaries (and promtool, for make
// rules) are built from the modules in tools/ (each its own go.mod, so their
// dependency trees never meet the library's) and cached in .bin/ under a
// hash of their module content. [Start] builds, configures
// and starts all three on free 127.0.0.1 ports and waits until each is
// ready; [Stack.Stop] stops them. Their logs go to files whose tails
// [Stack.DumpLogs] prints when a test fails.
//
// The same tools/ hold kube-apiserver and etcd (see [ControlPlaneAssets]),
// which the control-plane suite in e2e/apiserver starts with envtest; make
// test-apiserver runs it apart from this package's tests. e2e/cpulimit runs
// the demo in a cgroup of half a core; make e2e runs it after this
// package's tests, alone on the machine.
//
// Environment:
//
//	OTELQUEUE_E2E_BIN_DIR     where built binaries are cached (default <e2e>/.bin)
//	OTELQUEUE_E2E_JAEGER      use this Jaeger binary instead of building one
//	OTELQUEUE_E2E_OTELCOL     use this collector binary instead of building one
//	OTELQUEUE_E2E_PROMETHEUS  use this Prometheus binary (3.x) instead of building one
//	OTELQUEUE_E2E_PROMTOOL    use this promtool instead of building one (make rules)
//	OTELQUEUE_E2E_KEEP=1      keep the temporary directory (configs, logs, TSDB)
//	OTELQUEUE_E2E_RESULTS     a directory where TestNativeHistograms writes its table of quantiles
package e2e
