package kubebuilder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// What a manager's /metrics served, in the three formats a Prometheus may
// ask for: the Prometheus text format (families and series), OpenMetrics
// (the only text format with exemplars) and protobuf (the only one with
// native buckets).

// workqueueFamilies are controller-runtime's queue metrics: the scaffold's
// manager serves them from its own queue, the adopted one from otelqueue's.
var workqueueFamilies = []string{
	"workqueue_depth",
	"workqueue_adds_total",
	"workqueue_queue_duration_seconds",
	"workqueue_work_duration_seconds",
	"workqueue_unfinished_work_seconds",
	"workqueue_longest_running_processor_seconds",
	"workqueue_retries_total",
}

// otherBuckets are the histograms whose bucket bounds (le) are not
// compared: controller-runtime's are decades from 10 ns to 1000 s
// (prometheus.ExponentialBuckets(10e-9, 10, 12)), otelqueue's three a decade
// from 100 µs to 1000 s (otelqueue.DefaultBuckets), sized for a queue's
// waits (docs/metrics.md, "Differences from controller-runtime"). Their
// _bucket series are still compared, without le, and must have buckets.
// This is the one exclusion: every other label of every series is compared
// as it is.
var otherBuckets = map[string]bool{
	"workqueue_queue_duration_seconds": true,
	"workqueue_work_duration_seconds":  true,
}

// Accept headers as Prometheus sends them.
const (
	acceptText        = "text/plain;version=0.0.4"
	acceptOpenMetrics = "application/openmetrics-text;version=1.0.0"
	acceptProtobuf    = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
)

// scrape is one manager's /metrics, read in the three formats.
type scrape struct {
	families    map[string]*dto.MetricFamily // from the text format
	openMetrics string                       // the body answering acceptOpenMetrics
	omType      string                       // its media type
	native      map[string]int32             // histogram series with native buckets -> schema, from protobuf
}

// get returns the body of url for accept, and its media type.
func get(ctx context.Context, url, accept string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return b, mt, nil
}

// scrapeText reads url in the Prometheus text format.
func scrapeText(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	b, _, err := get(ctx, url, acceptText)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return nil, fmt.Errorf("parsing the text format of %s: %w", url, err)
	}
	return mfs, nil
}

// scrapeAll reads url in the three formats.
func scrapeAll(ctx context.Context, url string) (*scrape, error) {
	s := &scrape{native: map[string]int32{}}
	var err error
	if s.families, err = scrapeText(ctx, url); err != nil {
		return nil, err
	}
	b, mt, err := get(ctx, url, acceptOpenMetrics)
	if err != nil {
		return nil, err
	}
	s.openMetrics, s.omType = string(b), mt
	b, _, err = get(ctx, url, acceptProtobuf)
	if err != nil {
		return nil, err
	}
	dec := expfmt.NewDecoder(strings.NewReader(string(b)), expfmt.NewFormat(expfmt.TypeProtoDelim))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("decoding the protobuf format of %s: %w", url, err)
		}
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); h != nil && h.Schema != nil {
				s.native[seriesKey(mf.GetName(), m.GetLabel())] = h.GetSchema()
			}
		}
	}
	return s, nil
}

// seriesKey is name{a="x",b="y"} with the labels in name order, and any
// extra labels (le, quantile) last.
func seriesKey(name string, labels []*dto.LabelPair, extra ...string) string {
	var parts []string
	for _, l := range labels {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(parts)
	for i := 0; i+1 < len(extra); i += 2 {
		parts = append(parts, fmt.Sprintf("%s=%q", extra[i], extra[i+1]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// series returns the series of families as the text format names them
// (name_bucket{...,le="..."}, name_sum, name_count for a histogram), with
// the le of the families in noLE left out.
func series(families map[string]*dto.MetricFamily, noLE map[string]bool) map[string]bool {
	out := map[string]bool{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			l := m.GetLabel()
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				for _, b := range m.GetHistogram().GetBucket() {
					if noLE[name] {
						out[seriesKey(name+"_bucket", l)] = true
					} else {
						out[seriesKey(name+"_bucket", l, "le", formatFloat(b.GetUpperBound()))] = true
					}
				}
				out[seriesKey(name+"_sum", l)] = true
				out[seriesKey(name+"_count", l)] = true
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					out[seriesKey(name, l, "quantile", formatFloat(q.GetQuantile()))] = true
				}
				out[seriesKey(name+"_sum", l)] = true
				out[seriesKey(name+"_count", l)] = true
			default:
				out[seriesKey(name, l)] = true
			}
		}
	}
	return out
}

// exemplarLine matches an OpenMetrics bucket line with an exemplar.
var exemplarLine = regexp.MustCompile(`^(\w+)_bucket\{([^}]*)\} \S+ # \{([^}]*)\} `)

var traceID = regexp.MustCompile(`(?:^|,)trace_id="([0-9a-f]{32})"`)

// exemplars counts, per histogram of the queue named name, the bucket lines
// of an OpenMetrics scrape whose exemplar carries a valid trace_id.
func exemplars(openMetrics, name string) map[string]int {
	out := map[string]int{}
	for l := range strings.SplitSeq(openMetrics, "\n") {
		m := exemplarLine.FindStringSubmatch(l)
		if m == nil || !otherBuckets[m[1]] || !strings.Contains(","+m[2]+",", `,name="`+name+`",`) {
			continue
		}
		if id := traceID.FindStringSubmatch(m[3]); id != nil && strings.Trim(id[1], "0") != "" {
			out[m[1]]++
		}
	}
	return out
}

// withLabel returns the label sets of family's series that have
// label=value.
func withLabel(families map[string]*dto.MetricFamily, family, label, value string) int {
	n := 0
	for _, m := range families[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				n++
			}
		}
	}
	return n
}

// sumOf adds the values of family's gauges and counters with label=value.
func sumOf(families map[string]*dto.MetricFamily, family, label, value string) float64 {
	var sum float64
	for _, m := range families[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				sum += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			}
		}
	}
	return sum
}

// comparison is what the adopted manager no longer serves of what the
// scaffold's served.
type comparison struct {
	families []string // metric families
	series   []string // series, by label set
	native   []string // histogram series that had native buckets and have none, or another schema
}

func (c comparison) ok() bool { return len(c.families)+len(c.series)+len(c.native) == 0 }

// compare lists what of before is missing from after.
func compare(before, after *scrape) comparison {
	var c comparison
	for name := range before.families {
		if _, ok := after.families[name]; !ok {
			c.families = append(c.families, name)
		}
	}
	a := series(after.families, otherBuckets)
	for s := range series(before.families, otherBuckets) {
		name := s[:strings.Index(s, "{")]
		family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if _, ok := after.families[family]; !ok && before.families[family] != nil {
			continue // the family is missing: said once, above
		}
		if !a[s] {
			c.series = append(c.series, s)
		}
	}
	for s, schema := range before.native {
		if got, ok := after.native[s]; !ok {
			c.native = append(c.native, s+": no native buckets")
		} else if got != schema {
			c.native = append(c.native, fmt.Sprintf("%s: schema %d, was %d", s, got, schema))
		}
	}
	slices.Sort(c.families)
	slices.Sort(c.series)
	slices.Sort(c.native)
	return c
}

// TestCompare: the comparison finds a missing family, a missing label set
// and lost native buckets, and tolerates other bucket bounds only on the
// two workqueue histograms.
func TestCompare(t *testing.T) {
	parse := func(text string) map[string]*dto.MetricFamily {
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return mfs
	}
	before := &scrape{families: parse(`# TYPE workqueue_depth gauge
workqueue_depth{controller="greeting",name="greeting",priority="0"} 0
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{controller="greeting",name="greeting",le="1e-08"} 0
workqueue_queue_duration_seconds_bucket{controller="greeting",name="greeting",le="+Inf"} 3
workqueue_queue_duration_seconds_sum{controller="greeting",name="greeting"} 0.1
workqueue_queue_duration_seconds_count{controller="greeting",name="greeting"} 3
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="greeting",le="0.005"} 1
controller_runtime_reconcile_time_seconds_bucket{controller="greeting",le="+Inf"} 3
controller_runtime_reconcile_time_seconds_sum{controller="greeting"} 0.1
controller_runtime_reconcile_time_seconds_count{controller="greeting"} 3
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",method="GET"} 4
rest_client_requests_total{code="201",method="POST"} 4
`), native: map[string]int32{`workqueue_queue_duration_seconds{controller="greeting",name="greeting"}`: 3}}
	after := &scrape{families: parse(`# TYPE workqueue_depth gauge
workqueue_depth{controller="greeting",name="greeting",priority="0"} 0
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{controller="greeting",name="greeting",le="0.0001"} 0
workqueue_queue_duration_seconds_bucket{controller="greeting",name="greeting",le="+Inf"} 3
workqueue_queue_duration_seconds_sum{controller="greeting",name="greeting"} 0.1
workqueue_queue_duration_seconds_count{controller="greeting",name="greeting"} 3
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="greeting",le="0.01"} 1
controller_runtime_reconcile_time_seconds_bucket{controller="greeting",le="+Inf"} 3
controller_runtime_reconcile_time_seconds_sum{controller="greeting"} 0.1
controller_runtime_reconcile_time_seconds_count{controller="greeting"} 3
# TYPE target_info gauge
target_info{service_name="manager"} 1
`), native: map[string]int32{}}
	c := compare(before, after)
	if want := []string{"rest_client_requests_total"}; !slices.Equal(c.families, want) {
		t.Errorf("missing families %q, want %q", c.families, want)
	}
	if want := []string{`controller_runtime_reconcile_time_seconds_bucket{controller="greeting",le="0.005"}`}; !slices.Equal(c.series, want) {
		t.Errorf("missing series %q, want %q (only the workqueue histograms' bounds may differ)", c.series, want)
	}
	if len(c.native) != 1 || !strings.Contains(c.native[0], "no native buckets") {
		t.Errorf("lost native buckets: %q", c.native)
	}
	if c := compare(before, before); !c.ok() {
		t.Errorf("a scrape compared with itself: %+v", c)
	}
	if n := withLabel(after.families, "workqueue_depth", "name", "greeting"); n != 1 {
		t.Errorf("withLabel = %d", n)
	}
	om := `workqueue_work_duration_seconds_bucket{controller="greeting",name="greeting",le="0.01"} 7 # {span_id="00f067aa0ba902b7",trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.004 1.7e+09
workqueue_work_duration_seconds_bucket{controller="greeting",name="greeting",le="0.1"} 7 # {trace_id="00000000000000000000000000000000"} 0.04 1.7e+09
workqueue_queue_duration_seconds_bucket{controller="other",name="other",le="0.01"} 7 # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.004 1.7e+09
controller_runtime_reconcile_time_seconds_bucket{controller="greeting",le="0.01"} 7 # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.004 1.7e+09
`
	if got := exemplars(om, "greeting"); len(got) != 1 || got["workqueue_work_duration_seconds"] != 1 {
		t.Errorf("exemplars = %v, want one, on workqueue_work_duration_seconds", got)
	}
	if got := slices.Collect(maps.Keys(exemplars(om, "other"))); !slices.Equal(got, []string{"workqueue_queue_duration_seconds"}) {
		t.Errorf("exemplars of the queue other: %v", got)
	}
}
