// Package kubebuilder adopts otelqueue into a kubebuilder v4 operator by
// exactly the steps of the README's "Quick start: controller-runtime", and
// checks that the operator's dashboards keep working.
//
// testdata/scaffold is a kubebuilder v4.16.0 project (controller-runtime
// v0.25.0) whose controller keeps a ConfigMap per Greeting; testdata/README.md
// says how it was generated and what was written by hand. TestAdoption
//
//   - builds its manager as generated and runs it against a real
//     kube-apiserver and etcd (envtest, from KUBEBUILDER_ASSETS, with the
//     scaffold's CRDs), metrics over plain HTTP on 127.0.0.1
//     (--metrics-bind-address, --metrics-secure=false), on 50 Greetings
//     created before it starts (its initial list), then a change of each;
//     waits until the ConfigMaps hold what the Greetings say, and scrapes
//     /metrics (Prometheus text, OpenMetrics, protobuf);
//   - in a fresh copy, runs the README section's commands in order (go get
//     of otelqueue's own modules replaced by the -replace lines of "A
//     checkout rather than a release", pointing at this checkout) and applies
//     its ```diff blocks with git apply; checks its table of raised
//     requirements against go.mod; runs go build, go vet and the scaffold's own
//     tests (go test -race, on envtest, as its Makefile's test target does);
//   - runs the adopted manager the same way, on the same workload, and fails
//     unless the same objects converge, every metric family served before is
//     still served, every series of it (its label set) is still there (but
//     the bucket bounds of the two workqueue histograms, whose buckets are
//     otelqueue's), the seven workqueue_* families carry the controller's
//     name, the native buckets served before still are, and an OpenMetrics
//     scrape shows exemplars with trace ids on the workqueue histograms.
//
// It prints a table of both runs to stderr (shown with -v or on a failure)
// and, with OTELQUEUE_E2E_REPORT set, writes it to that file, which make
// test-apiserver prints.
//
// make test-apiserver runs it (make test does too). Environment:
//
//	KUBEBUILDER_ASSETS            the directory of kube-apiserver and etcd
//	                              (make test-apiserver sets it); without it the
//	                              test skips, saying how to get them
//	OTELQUEUE_REQUIRE_APISERVER=1 a missing KUBEBUILDER_ASSETS fails the test
//	OTELQUEUE_E2E_README          read the steps from this file instead of the
//	                              checkout's README.md (to see a wrong step fail)
//	OTELQUEUE_E2E_REPORT          also write the table to this file
//	OTELQUEUE_E2E_KEEP=1          keep the temporary directory (both copies of
//	                              the scaffold, logs, kubeconfig)
package kubebuilder
