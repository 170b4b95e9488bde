package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nativeGrowth is the ratio of two neighbouring bucket boundaries of a
// schema 3 native histogram, 2^(1/8): the native resolution.
var nativeGrowth = math.Pow(2, 1.0/8)

// TestNativeHistograms runs the example with -native-histograms (its
// default) and has the stack's Prometheus 3.16 take its histograms two
// ways at once: by scraping the app's /metrics (job "app"), where classic
// and native buckets are one histogram (otelqueuesdk.MergeNativeHistograms,
// the protobuf exposition), and by OTLP through the collector, whose
// prometheus exporter serves the native half as a metric of its own that
// the scrape config renames (job = the service). For both, and for queue
// wait and work duration, it checks on the same samples that:
//
//   - the native series and the _bucket series exist and count the same
//     observations (exactly by scrape; by OTLP the two streams are
//     collected one after the other, so within a few records);
//   - at the classic boundaries that are native ones too (0.25, 0.5 and
//     1 s are powers of two) the share of observations below is the same
//     from both (exactly by scrape);
//   - histogram_quantile over each gives quantiles that agree as closely as
//     the two resolutions allow: the native estimate lies in the classic
//     bucket that holds the quantile, widened by one native bucket
//     (2^(1/8)) each side (the classic interpolation lies in it by
//     construction), and the table of both is logged;
//   - the exemplars of the scraped histogram, on its classic buckets and
//     on its native part, resolve to traces in Jaeger whose queued span
//     they name.
func TestNativeHistograms(t *testing.T) {
	service := "e2e-native-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// One worker for 20 updates a second of reconciles of 40 ms (median;
	// log-normal, sigma 0.25): utilization about 0.8, so waits spread from
	// nothing to tens of milliseconds.
	app := startApp(t, service, "-native-histograms", "-workers", "1", "-churn", "20", "-latency", "40ms", "-latency-spread", "0.25",
		"-error-rate", "0", "-burst-every", "0", "-objects", "200")
	u, err := url.Parse(app.metrics)
	if err != nil {
		t.Fatal(err)
	}
	if err := stack.ScrapeApp(u.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stack.ScrapeApp(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	p := stack.PrometheusAPI

	sources := []struct{ name, selector string }{
		{"scrape", `job="app"`},
		{"OTLP", fmt.Sprintf(`job=%q`, service)},
	}
	// Both sources have native and classic samples for 30 s.
	const window = "30s"
	for _, src := range sources {
		for _, m := range []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
			native := fmt.Sprintf(`histogram_count(sum(increase(%s{%s}[%s])))`, m, src.selector, window)
			Eventually(t, 90*time.Second, time.Second, func() error {
				s, err := p.Query(ctx, native)
				if err != nil {
					return err
				}
				if len(s) == 0 || s[0].Value < 100 {
					return fmt.Errorf("%s: %s: %v, want a native histogram counting 100 or more", src.name, native, s)
				}
				return nil
			})
		}
	}
	time.Sleep(30 * time.Second) // a full window of both kinds
	at := time.Now().Add(-2 * time.Second)
	app.stop()

	scalar := func(q string) float64 {
		t.Helper()
		s, err := p.QueryAt(ctx, q, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 1 {
			t.Fatalf("%s: %d samples (%v), want 1", q, len(s), s)
		}
		return s[0].Value
	}
	var report strings.Builder
	fmt.Fprintf(&report, "| source | histogram | count (classic / native) | q | classic | native | native/classic | classic bucket |\n|---|---|---|---|---|---|---|---|\n")
	for _, src := range sources {
		for _, m := range []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
			sel := src.selector
			bounds := classicBounds(t, p, fmt.Sprintf(`count by (le) (%s_bucket{%s})`, m, sel), at)
			classicCount := scalar(fmt.Sprintf(`sum(increase(%s_count{%s}[%s]))`, m, sel, window))
			nativeCount := scalar(fmt.Sprintf(`histogram_count(sum(increase(%s{%s}[%s])))`, m, sel, window))
			switch {
			case src.name == "scrape" && math.Abs(classicCount-nativeCount) > 1e-9*classicCount:
				t.Errorf("%s %s: %v observations in the classic buckets, %v in the native ones: one histogram must count the same", src.name, m, classicCount, nativeCount)
			case math.Abs(classicCount-nativeCount) > 0.01*classicCount:
				t.Errorf("%s %s: %v observations in the classic stream, %v in the native one: more apart than records between two collections", src.name, m, classicCount, nativeCount)
			}
			// The shares below the boundaries both kinds have.
			for _, le := range []string{"0.25", "0.5", "1"} {
				classic := scalar(fmt.Sprintf(`sum(increase(%s_bucket{%s,le=~"%s|%s.0"}[%s])) / sum(increase(%s_count{%s}[%s]))`, m, sel, le, le, window, m, sel, window))
				native := scalar(fmt.Sprintf(`histogram_fraction(0, %s, sum(increase(%s{%s}[%s])))`, le, m, sel, window))
				tol := 1e-9
				if src.name == "OTLP" {
					tol = 0.01
				}
				if math.Abs(classic-native) > tol {
					t.Errorf("%s %s: share at or below %s s: classic %v, native %v", src.name, m, le, classic, native)
				}
			}
			for _, q := range []float64{0.5, 0.9, 0.99} {
				classic := scalar(fmt.Sprintf(`histogram_quantile(%v, sum by (le) (increase(%s_bucket{%s}[%s])))`, q, m, sel, window))
				native := scalar(fmt.Sprintf(`histogram_quantile(%v, sum(increase(%s{%s}[%s])))`, q, m, sel, window))
				lo, hi := classicBucket(bounds, classic)
				fmt.Fprintf(&report, "| %s | %s | %.0f / %.0f | %v | %.4g s | %.4g s | %.3f | (%g, %g] |\n",
					src.name, strings.TrimPrefix(m, "workqueue_"), classicCount, nativeCount, q, classic, native, native/classic, lo, hi)
				if math.IsNaN(classic) || math.IsNaN(native) {
					t.Errorf("%s %s: p%v classic %v, native %v", src.name, m, q*100, classic, native)
					continue
				}
				if native < lo/nativeGrowth || native > hi*nativeGrowth {
					t.Errorf("%s %s: p%v from the native buckets is %v s, from the classic ones %v s, whose bucket is (%g, %g]: "+
						"the native estimate must lie within one native bucket (x%.4f) of it", src.name, m, q*100, native, classic, lo, hi, nativeGrowth)
				}
			}
		}
	}
	t.Logf("quantiles over the %s before %s:\n%s", window, at.Format(time.RFC3339), report.String())
	if dir := os.Getenv("OTELQUEUE_E2E_RESULTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "native-histograms.md"), []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}

	// The scraped histogram's exemplars, classic and native, lead to the
	// traces of the attempts they were recorded in.
	for _, q := range []string{`workqueue_queue_duration_seconds_bucket{job="app"}`, `workqueue_queue_duration_seconds{job="app"}`} {
		t.Run("exemplars of "+q, func(t *testing.T) {
			var exemplars []Exemplar
			Eventually(t, 30*time.Second, time.Second, func() error {
				series, err := p.QueryExemplars(ctx, q, at.Add(-5*time.Minute), time.Now())
				if err != nil {
					return err
				}
				exemplars = exemplars[:0]
				for _, s := range series {
					exemplars = append(exemplars, s.Exemplars...)
				}
				if len(exemplars) == 0 {
					return errors.New("no exemplars yet")
				}
				return nil
			})
			sort.Slice(exemplars, func(i, j int) bool { return exemplars[i].Timestamp.Before(exemplars[j].Timestamp) })
			checked := 0
			for _, e := range exemplars[:min(5, len(exemplars))] {
				var tr Trace
				err := poll(ctx, 30*time.Second, 200*time.Millisecond, func() error {
					var err error
					tr, err = stack.JaegerAPI.GetTrace(ctx, e.TraceID())
					return err
				})
				if err != nil {
					t.Errorf("exemplar trace %s: %v", e.TraceID(), err)
					continue
				}
				qs := tr.SpansNamed("queued")
				if len(qs) != 1 || qs[0].SpanID != e.SpanID() {
					t.Errorf("exemplar %v: trace %s has queued spans %v, want the exemplar's span", e.Labels, tr.TraceID, qs)
					continue
				}
				checked++
			}
			t.Logf("%d exemplars, %d of the oldest 5 resolved to their queued span in Jaeger", len(exemplars), checked)
			if checked == 0 {
				t.Fatal("no exemplar resolved in Jaeger")
			}
		})
	}
}

// TestNativeHistogramsPrometheusOTLP sends the example's metrics over OTLP
// straight to Prometheus's own OTLP receiver (its traces still go to the
// collector and on to Jaeger): the classic stream is stored as _bucket
// series, the native one as a native histogram under the stream's own name,
// workqueue_queue_duration_native_seconds (Prometheus relabels no OTLP
// input), and the native histogram's exemplars resolve in Jaeger
// (docs/metrics.md#native-histograms says so).
func TestNativeHistogramsPrometheusOTLP(t *testing.T) {
	service := "e2e-native-otlp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	env := append(stack.OTelEnv(),
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="+stack.PrometheusOTLPMetricsURL(),
		"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf")
	app := startAppEnv(t, env, service, "-native-histograms", "-workers", "1", "-churn", "20", "-latency", "40ms", "-latency-spread", "0.25",
		"-error-rate", "0", "-burst-every", "0", "-objects", "200")
	ctx := context.Background()
	p := stack.PrometheusAPI
	sel := fmt.Sprintf(`job=%q`, service)
	for _, q := range []string{
		fmt.Sprintf(`histogram_count(sum(increase(workqueue_queue_duration_native_seconds{%s}[30s])))`, sel),
		fmt.Sprintf(`histogram_count(sum(increase(workqueue_work_duration_native_seconds{%s}[30s])))`, sel),
		fmt.Sprintf(`sum(increase(workqueue_queue_duration_seconds_bucket{%s,le="+Inf"}[30s]))`, sel),
	} {
		Eventually(t, 90*time.Second, time.Second, func() error {
			s, err := p.Query(ctx, q)
			if err != nil {
				return err
			}
			if len(s) == 0 || s[0].Value < 100 {
				return fmt.Errorf("%s: %v, want 100 or more observations", q, s)
			}
			return nil
		})
	}
	app.stop()
	var exemplars []Exemplar
	Eventually(t, 30*time.Second, time.Second, func() error {
		series, err := p.QueryExemplars(ctx, fmt.Sprintf(`workqueue_queue_duration_native_seconds{%s}`, sel), time.Now().Add(-5*time.Minute), time.Now())
		if err != nil {
			return err
		}
		exemplars = exemplars[:0]
		for _, s := range series {
			exemplars = append(exemplars, s.Exemplars...)
		}
		if len(exemplars) == 0 {
			return errors.New("no exemplars on the native histogram yet")
		}
		return nil
	})
	e := exemplars[0]
	var tr Trace
	if err := poll(ctx, 30*time.Second, 200*time.Millisecond, func() error {
		var err error
		tr, err = stack.JaegerAPI.GetTrace(ctx, e.TraceID())
		return err
	}); err != nil {
		t.Fatalf("exemplar trace %s: %v", e.TraceID(), err)
	}
	if qs := tr.SpansNamed("queued"); len(qs) != 1 || qs[0].SpanID != e.SpanID() {
		t.Errorf("exemplar %v: trace %s has queued spans %v, want the exemplar's span", e.Labels, tr.TraceID, qs)
	}
	t.Logf("%d exemplars on the native histogram from Prometheus's OTLP receiver; the first resolved in Jaeger", len(exemplars))
}

// classicBounds returns the finite upper bounds of the classic buckets
// that query (a count by (le)) finds, in increasing order.
func classicBounds(t *testing.T, p *Prometheus, query string, at time.Time) []float64 {
	t.Helper()
	s, err := p.QueryAt(context.Background(), query, at)
	if err != nil {
		t.Fatal(err)
	}
	var bounds []float64
	for _, x := range s {
		b, err := strconv.ParseFloat(x.Metric["le"], 64)
		if err != nil {
			t.Fatalf("%s: le %q: %v", query, x.Metric["le"], err)
		}
		if !math.IsInf(b, 1) {
			bounds = append(bounds, b)
		}
	}
	if len(bounds) < 10 {
		t.Fatalf("%s: %d classic bounds (%v)", query, len(bounds), bounds)
	}
	sort.Float64s(bounds)
	return bounds
}

// classicBucket returns the bounds (lo, hi] of the classic bucket of
// bounds that holds v: 0 below the first, +Inf above the last.
func classicBucket(bounds []float64, v float64) (lo, hi float64) {
	i := sort.SearchFloat64s(bounds, v) // the first bound >= v
	if i > 0 {
		lo = bounds[i-1]
	}
	hi = math.Inf(1)
	if i < len(bounds) {
		hi = bounds[i]
	}
	return lo, hi
}
