package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Prometheus queries Prometheus's HTTP API.
type Prometheus struct {
	// BaseURL is e.g. http://127.0.0.1:9090.
	BaseURL string
	Client  *http.Client
}

// Sample is one series of an instant vector.
type Sample struct {
	Metric map[string]string
	Time   time.Time
	// Value is the float value, or a native histogram's count.
	Value float64
	// Histogram says the sample is a native histogram (whose sum is Sum).
	Histogram bool
	Sum       float64
}

// ExemplarSeries is one series of a query_exemplars answer.
type ExemplarSeries struct {
	SeriesLabels map[string]string `json:"seriesLabels"`
	Exemplars    []Exemplar        `json:"exemplars"`
}

// Exemplar is one exemplar. The collector's prometheus exporter puts the
// trace and span IDs (lowercase hex) in the labels trace_id and span_id.
type Exemplar struct {
	Labels    map[string]string `json:"labels"`
	Value     float64           `json:"-"`
	Timestamp time.Time         `json:"-"`
}

// TraceID returns the exemplar's trace_id label.
func (e Exemplar) TraceID() string { return e.Labels["trace_id"] }

// SpanID returns the exemplar's span_id label.
func (e Exemplar) SpanID() string { return e.Labels["span_id"] }

func (e *Exemplar) UnmarshalJSON(b []byte) error {
	var raw struct {
		Labels    map[string]string `json:"labels"`
		Value     string            `json:"value"`
		Timestamp float64           `json:"timestamp"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	v, err := strconv.ParseFloat(raw.Value, 64)
	if err != nil {
		return fmt.Errorf("exemplar value %q: %w", raw.Value, err)
	}
	e.Labels, e.Value = raw.Labels, v
	e.Timestamp = time.UnixMilli(int64(raw.Timestamp * 1000))
	return nil
}

// Target is one scrape target from /api/v1/targets.
type Target struct {
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	Labels     map[string]string `json:"labels"`
	LastScrape time.Time         `json:"lastScrape"`
}

type promResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

func (p *Prometheus) get(ctx context.Context, path string, q url.Values, into any) error {
	u, resp, body, err := httpGet(ctx, p.Client, p.BaseURL, path, q)
	if err != nil {
		return err
	}
	var r promResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s: %s", u, resp.Status, r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, into)
}

// Query evaluates an instant PromQL query whose result is a vector, now.
func (p *Prometheus) Query(ctx context.Context, query string) ([]Sample, error) {
	return p.QueryAt(ctx, query, time.Time{})
}

// QueryAt evaluates an instant PromQL query whose result is a vector at
// time at (the zero time: now). Queries at one time see the same samples.
func (p *Prometheus) QueryAt(ctx context.Context, query string, at time.Time) ([]Sample, error) {
	q := url.Values{"query": {query}}
	if !at.IsZero() {
		q.Set("time", formatPromTime(at))
	}
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric    map[string]string `json:"metric"`
			Value     [2]any            `json:"value"`
			Histogram *[2]any           `json:"histogram"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", q, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", query, data.ResultType)
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		if r.Histogram != nil { // a native histogram: {"count": "N", "sum": "S", "buckets": [...]}
			ts, _ := r.Histogram[0].(float64)
			h, _ := r.Histogram[1].(map[string]any)
			cs, _ := h["count"].(string)
			ss, _ := h["sum"].(string)
			count, err := strconv.ParseFloat(cs, 64)
			if err != nil {
				return nil, fmt.Errorf("query %q: histogram count %v: %w", query, h["count"], err)
			}
			sum, err := strconv.ParseFloat(ss, 64)
			if err != nil {
				return nil, fmt.Errorf("query %q: histogram sum %v: %w", query, h["sum"], err)
			}
			out = append(out, Sample{Metric: r.Metric, Time: time.UnixMilli(int64(ts * 1000)), Value: count, Histogram: true, Sum: sum})
			continue
		}
		ts, _ := r.Value[0].(float64)
		vs, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", query, r.Value[1], err)
		}
		out = append(out, Sample{Metric: r.Metric, Time: time.UnixMilli(int64(ts * 1000)), Value: v})
	}
	return out, nil
}

// QueryExemplars returns the exemplars of the series selected by query
// between start and end (/api/v1/query_exemplars). Prometheus keeps them only
// with --enable-feature=exemplar-storage and an OpenMetrics scrape.
func (p *Prometheus) QueryExemplars(ctx context.Context, query string, start, end time.Time) ([]ExemplarSeries, error) {
	q := url.Values{
		"query": {query},
		"start": {formatPromTime(start)},
		"end":   {formatPromTime(end)},
	}
	var out []ExemplarSeries
	err := p.get(ctx, "/api/v1/query_exemplars", q, &out)
	return out, err
}

// Targets returns the active scrape targets.
func (p *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	var data struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	err := p.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets, err
}

func formatPromTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}
