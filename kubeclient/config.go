package kubeclient

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
)

// waitSpanThreshold is the shortest rate-limiter wait that becomes a span: a
// token taken at once costs microseconds, and a span per request for it
// would only clutter the trace. Every wait is recorded in the metrics.
const waitSpanThreshold = time.Millisecond

// Option configures Instrument.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	propagators    propagation.TextMapPropagator
	errs           []error
}

// WithMeterProvider sets the meter provider; the default is the global one
// (otel.GetMeterProvider) at the time of Instrument.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithTracerProvider sets the tracer provider; the default is the global one
// (otel.GetTracerProvider) at the time of Instrument.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithPropagators sets the propagators that write the request span's
// context into the request's headers; the default is the global
// propagators (otel.GetTextMapPropagator) at the time of Instrument.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagators = p })
}

func newConfig(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if nilcheck.IsNil(c.meterProvider) {
		if c.meterProvider != nil {
			c.errs = append(c.errs, typedNil("WithMeterProvider", c.meterProvider))
		}
		c.meterProvider = otel.GetMeterProvider()
	}
	if nilcheck.IsNil(c.tracerProvider) {
		if c.tracerProvider != nil {
			c.errs = append(c.errs, typedNil("WithTracerProvider", c.tracerProvider))
		}
		c.tracerProvider = otel.GetTracerProvider()
	}
	if nilcheck.IsNil(c.propagators) {
		if c.propagators != nil {
			c.errs = append(c.errs, typedNil("WithPropagators", c.propagators))
		}
		c.propagators = otel.GetTextMapPropagator()
	}
	return c, errors.Join(c.errs...)
}

// typedNil is the error for a typed nil v given to option.
func typedNil(option string, v any) error {
	return fmt.Errorf("kubeclient: %s was given a nil %T: pass a provider, or leave the option out for the global one", option, v)
}
