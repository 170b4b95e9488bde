package shard

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/internal/semconv"
)

// Attributes returns the shard as OpenTelemetry attributes:
// workqueue.shard.by, and for a shard of New workqueue.shard.ordinal and
// workqueue.shard.total. Put them on the replica's resource
// (resource.WithAttributes) so that its spans and metrics carry the
// shard; nil for a nil Shard.
func (s *Shard) Attributes() []attribute.KeyValue {
	if s == nil {
		return nil
	}
	attrs := []attribute.KeyValue{semconv.AttrShardBy.String(s.By())}
	if s.total > 0 {
		attrs = append(attrs, semconv.AttrShardOrdinal.Int(s.ordinal), semconv.AttrShardTotal.Int(s.total))
	}
	return attrs
}

// Instrument reports the shard on mp (nil: the global MeterProvider) as
// the gauge workqueue.shard.share, the part of the hash space it covers,
// with its Attributes: one series per replica, which the fleet's rules sum
// (below 1: objects with no owner; above 1: objects with two) and count by
// ordinal. Unregister the Registration to stop.
func (s *Shard) Instrument(mp metric.MeterProvider) (metric.Registration, error) {
	if s == nil {
		return nil, errors.New("shard: Instrument on a nil Shard: there is no shard to report")
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(semconv.ScopeShard, metric.WithInstrumentationVersion(semconv.Version))
	g, err := m.Float64ObservableGauge(semconv.MetricShardShare,
		metric.WithDescription("The part of the hash space the replica's shard covers, 0 to 1: summed over the live replicas, 1 when every object has one owner."))
	if err != nil {
		return nil, fmt.Errorf("shard: creating %s: %w", semconv.MetricShardShare, err)
	}
	share, set := s.Share(), metric.WithAttributeSet(attribute.NewSet(s.Attributes()...))
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveFloat64(g, share, set)
		return nil
	}, g)
	if err != nil {
		return nil, fmt.Errorf("shard: registering %s: %w", semconv.MetricShardShare, err)
	}
	return reg, nil
}
