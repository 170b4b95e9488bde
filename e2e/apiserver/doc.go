// Package apiserver runs otelqueue's two example controllers against a real
// Kubernetes control plane: kube-apiserver and etcd, built from the Go module
// proxy by [e2e.ControlPlaneAssets] (or taken from KUBEBUILDER_ASSETS) and
// started on 127.0.0.1 by controller-runtime's envtest.
//
// Its tests check, on the real API server, what the examples' fake-cluster
// tests check (reconciles succeed, the workload's writes keep their rate,
// the traceparent annotation reaches the objects and the attempts link to
// it, exemplars carry trace ids, a stop logs no error); run each example
// with the same flags on its embedded fake cluster and report both side by
// side; and start a second API server whose API Priority and Fairness
// rejects the example's requests with 429, to record what the example and
// otelqueue's signals show then; and run both examples with an adaptive
// worker pool (-adaptive-workers) against a client limit and against that
// throttling server, where the pool must not grow, and on the embedded
// cluster through a surge of load, where it must grow and come back down;
// and, on a control plane of its own, run four examples at once (both, fixed
// and adaptive) through faults (TestControlPlaneFaults): kube-apiserver
// killed and restarted on its port, certificates and etcd; etcd stopped for
// 15 s; etcd killed and restarted on its data dir; a validating webhook that
// answers each write in 500 ms; checking that they exit 0, converge, resume,
// name the control plane as the class, recommend no more workers than run
// and do not grow an adaptive pool during a fault.
// The table of those runs goes to stderr
// (which go test shows with -v or on a failure) and, with
// OTELQUEUE_E2E_REPORT set, to that file, which make test-apiserver prints.
//
// make test-apiserver runs it (make test does too). Environment:
//
//	KUBEBUILDER_ASSETS        use the kube-apiserver and etcd in this directory
//	OTELQUEUE_E2E_BIN_DIR     where built binaries are cached (default <e2e>/.bin)
//	OTELQUEUE_E2E_REPORT      also write the fake-versus-real table to this file
//	OTELQUEUE_E2E_KEEP=1      keep the temporary directory (kubeconfigs, logs)
package apiserver
