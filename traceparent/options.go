package traceparent

import (
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
)

// InjectOption configures Inject.
type InjectOption interface {
	applyInject(*injectConfig)
}

// ReaderOption configures NewReader.
type ReaderOption interface {
	applyReader(*readerConfig)
}

// Option configures both Inject and NewReader.
type Option interface {
	InjectOption
	ReaderOption
}

type injectConfig struct {
	propagators propagation.TextMapPropagator
	key         string // Annotation by default
}

type readerConfig struct {
	propagators   propagation.TextMapPropagator
	meterProvider metric.MeterProvider
	trust         bool
	keys          []string // WithAnnotations
	keysSet       bool
}

// propagatorsOption is WithPropagators: an Option of both.
type propagatorsOption struct{ p propagation.TextMapPropagator }

func (o propagatorsOption) applyInject(c *injectConfig) { c.propagators = o.p }
func (o propagatorsOption) applyReader(c *readerConfig) { c.propagators = o.p }

type readerOptionFunc func(*readerConfig)

func (f readerOptionFunc) applyReader(c *readerConfig) { f(c) }

// WithPropagators sets the propagators that format and parse the
// annotation's value; the global TextMapPropagator by default, and when p is
// nil (a typed nil is reported to otel.Handle). When they write or read no traceparent (the global default before
// otel.SetTextMapPropagator is called, or Baggage alone), W3C trace context
// is used.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return propagatorsOption{p: p}
}

// WithMeterProvider sets the MeterProvider through which a Reader counts
// invalid annotations (`workqueue.traceparent.invalid`); the global one by default, and when
// mp is nil (a typed nil is reported to otel.Handle).
func WithMeterProvider(mp metric.MeterProvider) ReaderOption {
	return readerOptionFunc(func(c *readerConfig) { c.meterProvider = mp })
}

// Trust keeps the sampled flag of the annotations' contexts, so that with
// otelqueuesdk.LinkSampled a sampled writer makes its reconcile sampled.
// Use it only when every writer of the objects is trusted.
func Trust() ReaderOption {
	return readerOptionFunc(func(c *readerConfig) { c.trust = true })
}

func propagatorsOrGlobal(p propagation.TextMapPropagator) propagation.TextMapPropagator {
	if nilcheck.IsNil(p) {
		if p != nil {
			otel.Handle(typedNil("WithPropagators", p))
		}
		return otel.GetTextMapPropagator()
	}
	return p
}

// typedNil is the error for a typed nil v given to option, which then
// means the global one.
func typedNil(option string, v any) error {
	return fmt.Errorf("traceparent: %s was given a nil %T; the global one is used: pass one, or leave the option out", option, v)
}
