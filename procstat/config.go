package procstat

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelqueue/otelqueue/internal/nilcheck"
)

// Option configures Instrument.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	meterProvider metric.MeterProvider
	cachedObjects func() int64
	reader        *Reader // the package's Reader when nil; tests set another
	errs          []error
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
			c.errs = append(c.errs, fmt.Errorf("procstat: WithMeterProvider got a nil %T: pass a working one, or an untyped nil (or no option) for the global default", c.meterProvider))
		}
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.reader == nil {
		c.reader = &defaultReader
	}
	return c, errors.Join(c.errs...)
}

// WithMeterProvider sets the MeterProvider; the global one
// (otel.GetMeterProvider) at the time of Instrument by default, and when mp
// is nil. A nil pointer of a MeterProvider type (a typed nil) is an error
// from Instrument.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithCachedObjects reports the number of objects in the controller's
// informer caches, which only the program knows, as `otelqueue.cache.objects`:
// objects returns it, at every collection, from any goroutine. A cache's
// memory is most of a controller's heap, so it is what sizes the pod's
// memory. Without the option the metric is not reported; a nil objects is
// an error from Instrument.
func WithCachedObjects(objects func() int64) Option {
	return optionFunc(func(c *config) {
		if objects == nil {
			c.errs = append(c.errs, errors.New("procstat: WithCachedObjects got a nil func: pass one that returns the number of objects in the informer caches, or leave the option out"))
			return
		}
		c.cachedObjects = objects
	})
}
