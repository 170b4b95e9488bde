package apiserver

import (
	"strings"
	"testing"
	"time"
)

// TestExampleMissingNamespace runs each example with -kubeconfig and
// -generate in a namespace that does not exist, which the fake cluster
// would have accepted: the example must stop at once with an error that
// names the namespace and says what to do, not run a controller that
// never sees an object.
func TestExampleMissingNamespace(t *testing.T) {
	kubeconfig := shared.kubeconfig(t, "otelqueue-example", "otelqueue:examples")
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			const absent = "otelqueue-absent"
			r := startExample(t, ex, shared.name, "-kubeconfig", kubeconfig, "-namespace", absent, "-generate")
			var err error
			select {
			case err = <-r.done:
				r.done <- err
			case <-time.After(time.Minute):
				t.Fatalf("%s still runs a minute after starting in a namespace that does not exist", ex.name)
			}
			out := strings.Join(r.log(), "\n")
			if err == nil || !strings.Contains(out, absent) || !strings.Contains(out, "kubectl create namespace "+absent) {
				t.Errorf("%s in a missing namespace exited with %v; want an error naming it and how to create it, got:\n%s", ex.name, err, out)
			}
		})
	}
}
