package controllerruntime_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/otelqueue/otelqueue/internal/semconv"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/controllerruntime"
	"github.com/otelqueue/otelqueue/internal/testutil"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// reconcileOnce starts a controller named name with r, sends it one
// ConfigMap, and returns the controller and the "reconcile" span of the
// first attempt, once it ended.
func reconcileOnce(t *testing.T, name string, r reconcile.Func) (*running, sdktrace.ReadOnlySpan) {
	t.Helper()
	tel := newTelemetry(t)
	run := startController(t, tel, name, r)
	cm, _ := writeConfigMap(t, tel, name)
	run.send(t, cm)
	testutil.WaitFor(t, "the attempt's reconcile span", func() bool {
		return len(testutil.SpansNamed(tel.sr.Ended(), semconv.SpanReconcile)) >= 1
	})
	return run, testutil.SpansNamed(tel.sr.Ended(), semconv.SpanReconcile)[0]
}

// TestManagerReconcilerLogger checks that the wrapped reconciler's logr
// logger (logf.FromContext) carries the trace_id and span_id of the
// attempt's "reconcile" span, beside controller-runtime's own values, and
// that the span has the reconcileID those values include.
func TestManagerReconcilerLogger(t *testing.T) {
	testutil.NoOTelErrors(t)
	const name = "logging"
	run, rec := reconcileOnce(t, name, func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		logf.FromContext(ctx).Info("reconciled by the test")
		return reconcile.Result{}, nil
	})
	line, ok := run.logs.find("reconciled by the test")
	if !ok {
		t.Fatal("the reconciler's log line is missing")
	}
	id := attr(rec, string(controllerruntime.AttrReconcileID))
	if id == "" {
		t.Error("the reconcile span has no reconcileID")
	}
	for _, want := range []string{
		`"reconcileID"="` + id + `"`, // controller-runtime's lines lead to the span too
		// the keys of otelqueue's Runner (semconv/registry.yaml)
		`"` + semconv.LogTraceID + `"="` + rec.SpanContext().TraceID().String() + `"`,
		`"` + semconv.LogSpanID + `"="` + rec.SpanContext().SpanID().String() + `"`,
		`"` + semconv.LogTraceSampled + `"=true`,
		`"controller"="` + name + `"`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %s\nlacks %s", line, want)
		}
	}
}

// TestManagerGoexit: a reconciler that calls runtime.Goexit is recorded as
// a panic whose cause says so (not a nil panic), and the wrapper does not
// turn it into a panic of its own: controller-runtime sees the Goexit, as
// it would without the wrapper.
func TestManagerGoexit(t *testing.T) {
	testutil.NoOTelErrors(t)
	var once sync.Once
	run, rec := reconcileOnce(t, "goexits", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		once.Do(runtime.Goexit)
		return reconcile.Result{}, nil
	})
	if got := attr(rec, string(semconv.AttrResult)); got != otelqueue.OutcomePanic.String() {
		t.Errorf("result %q, want panic", got)
	}
	if st := rec.Status(); st.Code != codes.Error || !strings.Contains(st.Description, "runtime.Goexit") {
		t.Errorf("status %+v, want an error that names runtime.Goexit", st)
	}
	if line, ok := run.logs.find("Observed a panic"); ok {
		t.Errorf("controller-runtime saw a panic: %s", line)
	}
}
