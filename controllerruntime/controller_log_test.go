package controllerruntime_test

import (
	"context"
	"strings"
	"testing"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/otelqueue/otelqueue/otelqueue"
)

// TestManagerReconcilerLogger checks that the wrapped reconciler's logr
// logger (logf.FromContext) carries the trace_id and span_id of the
// attempt's "reconcile" span, beside controller-runtime's own values.
func TestManagerReconcilerLogger(t *testing.T) {
	noErrors(t)
	tel := newTelemetry(t)
	const name = "logging"
	done := make(chan struct{}, 1)
	run := startController(t, tel, name, reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		logf.FromContext(ctx).Info("reconciled by the test")
		done <- struct{}{}
		return reconcile.Result{}, nil
	}))
	cm, _ := writeConfigMap(t, tel, "logged")
	run.send(t, cm)
	receive(t, done, "the reconcile")
	waitFor(t, "the attempt's reconcile span", func() bool {
		return len(spansNamed(tel.sr.Ended(), otelqueue.SpanReconcile)) == 1
	})
	rec := oneSpan(t, tel.sr.Ended(), otelqueue.SpanReconcile)
	line, ok := run.logs.find("reconciled by the test")
	if !ok {
		t.Fatal("the reconciler's log line is missing")
	}
	for _, want := range []string{
		`"trace_id"="` + rec.SpanContext().TraceID().String() + `"`,
		`"span_id"="` + rec.SpanContext().SpanID().String() + `"`,
		`"controller"="` + name + `"`,
		`"reconcileID"=`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %s\nlacks %s", line, want)
		}
	}
}
