package exampletelemetry

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// samplers are the OTEL_TRACES_SAMPLER values the SDK builds a sampler for.
var samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// checkSDKEnv refuses the OTEL_* values that the SDK reads by itself and
// mishandles: a negative batch size makes its batch span processor panic
// (makeslice), an unknown sampler or a bad number is logged as a raw line
// and replaced by a default the user never chose. Each error names the
// variable, its value and what is accepted.
func checkSDKEnv() error {
	var errs []error
	integer := func(name string, least int, unit string) {
		v := getenv(name)
		if v == "" {
			return
		}
		if n, err := strconv.Atoi(v); err != nil || n < least {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number of %s, %d or more (unset: the SDK's default)", name, v, unit, least))
		}
	}
	integer("OTEL_BSP_MAX_QUEUE_SIZE", 1, "spans")
	integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, "spans")
	integer("OTEL_BSP_SCHEDULE_DELAY", 0, "milliseconds")
	integer("OTEL_BSP_EXPORT_TIMEOUT", 1, "milliseconds")
	integer("OTEL_METRIC_EXPORT_INTERVAL", 1, "milliseconds")
	integer("OTEL_METRIC_EXPORT_TIMEOUT", 1, "milliseconds")

	if s := strings.ToLower(getenv("OTEL_TRACES_SAMPLER")); s != "" {
		if !slices.Contains(samplers, s) {
			errs = append(errs, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: not a sampler this program has; use one of %s (unset: sample every attempt whose cause was sampled)", getenv("OTEL_TRACES_SAMPLER"), strings.Join(samplers, ", ")))
		} else if strings.HasSuffix(s, "traceidratio") {
			if a := getenv("OTEL_TRACES_SAMPLER_ARG"); a != "" {
				if r, err := strconv.ParseFloat(a, 64); err != nil || !(r >= 0 && r <= 1) {
					errs = append(errs, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q with OTEL_TRACES_SAMPLER=%s: want a ratio from 0 to 1 (unset: 1)", a, s))
				}
			}
		}
	}
	return errors.Join(errs...)
}
