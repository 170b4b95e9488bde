package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
)

// cannedTransport answers every request with the same ConfigMap, in
// memory: what is measured is client-go's request path and what the
// instrumentation adds to it, not a network.
type cannedTransport struct{ body []byte }

func (c cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": []string{"application/json"}},
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)), Request: req,
	}, nil
}

func newCannedTransport(tb testing.TB) cannedTransport {
	body, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo-0001", Namespace: "demo", ResourceVersion: "42"},
		Data:       map[string]string{"version": "7"}})
	if err != nil {
		tb.Fatal(err)
	}
	return cannedTransport{body: body}
}

// BenchmarkKubeClient is the cost of kubeclient.Instrument per API request:
// a clientset's Get of a ConfigMap served in memory, through client-go's
// REST client, with and without the instrumentation, outside any reconcile
// and inside a reconcile attempt (sampled or not). "limited" variants go
// through a token bucket that never makes them wait (1e9 requests/s), so
// that the limiter's own cost and the instrumentation's of it are in.
func BenchmarkKubeClient(b *testing.B) {
	rt := newCannedTransport(b)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	defer tp.Shutdown(context.Background())
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())

	sampledCtx, sampled := tp.Tracer("bench").Start(context.Background(), "reconcile")
	defer sampled.End()
	unsampledCtx := trace.ContextWithSpanContext(context.Background(), rootSpanContext(false))

	for _, tc := range []struct {
		name         string
		instrumented bool
		limited      bool
		ctx          context.Context
		attempt      bool
	}{
		{"bare", false, false, context.Background(), false},
		{"instrumented/outside", true, false, context.Background(), false},
		{"instrumented/attempt-unsampled", true, false, unsampledCtx, true},
		{"bare/sampled-span", false, false, sampledCtx, false},
		{"instrumented/attempt-sampled", true, false, sampledCtx, true},
		{"bare/limited", false, true, context.Background(), false},
		{"instrumented/limited/attempt-unsampled", true, true, unsampledCtx, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := &rest.Config{Host: "http://127.0.0.1:1", Transport: rt, QPS: -1}
			if tc.limited {
				cfg.QPS, cfg.Burst = 1e9, 1e9
			}
			if tc.instrumented {
				var err error
				cfg, err = kubeclient.Instrument(cfg, kubeclient.WithTracerProvider(tp), kubeclient.WithMeterProvider(mp))
				if err != nil {
					b.Fatal(err)
				}
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			cms := cs.CoreV1().ConfigMaps("demo")
			b.ReportAllocs()
			for b.Loop() {
				ctx := tc.ctx
				if tc.attempt {
					ctx = clientwork.NewContext(ctx, &clientwork.Work{})
				}
				if _, err := cms.Get(ctx, "demo-0001", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLifecycleClientAttribution is the cost, per attempt, of carrying
// a Work for kubeclient's attribution, which a queue instrumented
// otelqueue.WithClientTime pays: Lifecycle's scheduler-otel variants
// without (client=false) and with (client=true) the option, in the same
// run.
func BenchmarkLifecycleClientAttribution(b *testing.B) {
	keys := benchKeys(lifecycleKeys)
	for _, v := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: tracing off
		sampled bool
	}{
		{"scheduler-otel", nil, false},
		{"scheduler-otel-traced-unsampled", sdktrace.NeverSample(), false},
		{"scheduler-otel-traced-sampled", sdktrace.AlwaysSample(), true},
	} {
		for _, on := range []bool{false, true} {
			var opts []otelqueue.Option
			if on {
				opts = append(opts, otelqueue.WithClientTime())
			}
			b.Run(fmt.Sprintf("variant=%s/client=%v", v.name, on), func(b *testing.B) {
				step, stop := startSchedulerOTel(v.sampler, v.sampled, opts...)(b, queueName)
				defer stop()
				timeSteps(b, step, keys)
			})
		}
	}
}
