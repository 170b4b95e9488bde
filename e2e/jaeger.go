package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound is returned when Jaeger does not (yet) have the trace.
var ErrNotFound = errors.New("not found")

// Jaeger queries Jaeger's HTTP API (the one its UI uses, /api/...). The
// query service applies its adjusters to what it returns; with
// max_clock_skew_adjust: 0s (set by the stack) a child that starts before its
// parent on another host shows up as a span warning instead of being moved.
type Jaeger struct {
	// BaseURL is e.g. http://127.0.0.1:16686.
	BaseURL string
	Client  *http.Client
}

// Trace is a trace as returned by /api/traces.
type Trace struct {
	TraceID   string                  `json:"traceID"`
	Spans     []Span                  `json:"spans"`
	Processes map[string]TraceProcess `json:"processes"`
	Warnings  []string                `json:"warnings"`
}

// Span is one span of a Trace. Times are in microseconds.
type Span struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []Reference `json:"references"`
	StartTimeUS   int64       `json:"startTime"`
	DurationUS    int64       `json:"duration"`
	Tags          []KeyValue  `json:"tags"`
	Logs          []SpanLog   `json:"logs"`
	ProcessID     string      `json:"processID"`
	Warnings      []string    `json:"warnings"`
}

// Reference is a parent (CHILD_OF) or a link (FOLLOWS_FROM, which is what an
// OpenTelemetry span link becomes).
type Reference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// KeyValue is a tag (attribute). Value keeps its JSON type.
type KeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// SpanLog is a span event.
type SpanLog struct {
	TimestampUS int64      `json:"timestamp"`
	Fields      []KeyValue `json:"fields"`
}

// TraceProcess is the resource a span came from.
type TraceProcess struct {
	ServiceName string     `json:"serviceName"`
	Tags        []KeyValue `json:"tags"`
}

// Start returns the span's start time.
func (s Span) Start() time.Time { return time.UnixMicro(s.StartTimeUS) }

// End returns the span's end time.
func (s Span) End() time.Time { return time.UnixMicro(s.StartTimeUS + s.DurationUS) }

// ParentSpanID returns the span ID of the CHILD_OF reference, or "".
func (s Span) ParentSpanID() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Links returns the FOLLOWS_FROM references.
func (s Span) Links() []Reference {
	var out []Reference
	for _, r := range s.References {
		if r.RefType == "FOLLOWS_FROM" {
			out = append(out, r)
		}
	}
	return out
}

// Tag returns the value of the tag named key.
func (s Span) Tag(key string) (any, bool) { return tagValue(s.Tags, key) }

// Tag returns the value of the resource attribute named key.
func (p TraceProcess) Tag(key string) (any, bool) { return tagValue(p.Tags, key) }

func tagValue(kvs []KeyValue, key string) (any, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// SpansNamed returns the spans whose operation name is name.
func (t Trace) SpansNamed(name string) []Span {
	var out []Span
	for _, s := range t.Spans {
		if s.OperationName == name {
			out = append(out, s)
		}
	}
	return out
}

// Span returns the span with the given ID.
func (t Trace) Span(spanID string) (Span, bool) {
	for _, s := range t.Spans {
		if s.SpanID == spanID {
			return s, true
		}
	}
	return Span{}, false
}

// AllWarnings returns the trace's warnings and every span's, prefixed by the
// span's name.
func (t Trace) AllWarnings() []string {
	out := append([]string(nil), t.Warnings...)
	for _, s := range t.Spans {
		for _, w := range s.Warnings {
			out = append(out, s.OperationName+" "+s.SpanID+": "+w)
		}
	}
	return out
}

type jaegerResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

func (j *Jaeger) get(ctx context.Context, path string, q url.Values, into any) error {
	u, resp, body, err := httpGet(ctx, j.Client, j.BaseURL, path, q)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("GET %s: %w", u, ErrNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	var r jaegerResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("GET %s: %s", u, r.Errors[0].Msg)
	}
	return json.Unmarshal(r.Data, into)
}

// httpGet GETs base+path?q with c (http.DefaultClient when nil) and returns
// the URL, the response (its body already read and closed) and the body.
func httpGet(ctx context.Context, c *http.Client, base, path string, q url.Values) (string, *http.Response, []byte, error) {
	u := strings.TrimRight(base, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return u, nil, nil, err
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return u, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return u, resp, body, err
}

// GetTrace returns one trace by its 32-hex-digit ID, or an error wrapping
// ErrNotFound.
func (j *Jaeger) GetTrace(ctx context.Context, traceID string) (Trace, error) {
	var ts []Trace
	if err := j.get(ctx, "/api/traces/"+url.PathEscape(traceID), nil, &ts); err != nil {
		return Trace{}, err
	}
	if len(ts) == 0 {
		return Trace{}, fmt.Errorf("trace %s: %w", traceID, ErrNotFound)
	}
	return ts[0], nil
}

// TraceQuery selects traces for FindTraces.
type TraceQuery struct {
	Service   string            // required
	Operation string            // optional span name
	Tags      map[string]string // optional span tags, all must match
	Lookback  time.Duration     // default 1h
	Limit     int               // default 100
}

// FindTraces searches traces (/api/traces?service=...).
func (j *Jaeger) FindTraces(ctx context.Context, tq TraceQuery) ([]Trace, error) {
	if tq.Lookback == 0 {
		tq.Lookback = time.Hour
	}
	if tq.Limit == 0 {
		tq.Limit = 100
	}
	now := time.Now()
	q := url.Values{
		"service": {tq.Service},
		"start":   {strconv.FormatInt(now.Add(-tq.Lookback).UnixMicro(), 10)},
		"end":     {strconv.FormatInt(now.Add(time.Minute).UnixMicro(), 10)},
		"limit":   {strconv.Itoa(tq.Limit)},
	}
	if tq.Operation != "" {
		q.Set("operation", tq.Operation)
	}
	if len(tq.Tags) > 0 {
		b, err := json.Marshal(tq.Tags)
		if err != nil {
			return nil, err
		}
		q.Set("tags", string(b))
	}
	var ts []Trace
	err := j.get(ctx, "/api/traces", q, &ts)
	return ts, err
}

// Services lists the services Jaeger has seen.
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	var s []string
	err := j.get(ctx, "/api/services", nil, &s)
	return s, err
}
