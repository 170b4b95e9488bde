package otelqueuesdk

import (
	"github.com/otelqueue/otelqueue/internal/semconv"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// ExponentialHistograms returns views that aggregate otelqueue's queue-wait
// and work-duration histograms as base-2 exponential histograms with at most
// maxSize buckets (160 when maxSize is not positive), which the Prometheus
// exporter exposes as native histograms. Pass them to
// sdkmetric.NewMeterProvider with sdkmetric.WithView.
func ExponentialHistograms(maxSize int32) []sdkmetric.View {
	if maxSize <= 0 {
		maxSize = 160
	}
	agg := sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: maxSize, MaxScale: 20}
	views := make([]sdkmetric.View, 0, 2)
	for _, name := range []string{semconv.MetricQueueDuration, semconv.MetricWorkDuration} {
		views = append(views, sdkmetric.NewView(
			sdkmetric.Instrument{Name: name, Scope: instrumentationScope()},
			sdkmetric.Stream{Aggregation: agg},
		))
	}
	return views
}

func instrumentationScope() instrumentation.Scope {
	return instrumentation.Scope{Name: semconv.ScopeOtelqueue}
}
