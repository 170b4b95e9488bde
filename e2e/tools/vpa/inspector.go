package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// inspectorPath is the demo's inspector, in JSON.
const inspectorPath = "/debug/queues?format=json"

// inspectorPage is the part of the inspector's JSON the comparison reads:
// its time and otelqueue's recommendation (package bottleneck's type, so
// that its JSON tags are the library's own).
type inspectorPage struct {
	At             time.Time                  `json:"at"`
	Recommendation *bottleneck.Recommendation `json:"recommendation"`
}

// decodeInspector decodes an inspector page and returns its
// recommendation; a page without one is an error (a demo built before the
// inspector served it).
func decodeInspector(b []byte) (bottleneck.Recommendation, error) {
	var p inspectorPage
	if err := json.Unmarshal(b, &p); err != nil {
		return bottleneck.Recommendation{}, fmt.Errorf("decoding the inspector's JSON: %v", err)
	}
	if p.Recommendation == nil {
		return bottleneck.Recommendation{}, errors.New(`the inspector's JSON has no "recommendation" (a demo built before it served one?)`)
	}
	return *p.Recommendation, nil
}

// fetchInspector reads the inspector at addr (host:port) and returns its
// body and recommendation.
func fetchInspector(ctx context.Context, addr string) ([]byte, bottleneck.Recommendation, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+inspectorPath, nil)
	if err != nil {
		return nil, bottleneck.Recommendation{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, bottleneck.Recommendation{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, bottleneck.Recommendation{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, bottleneck.Recommendation{}, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	r, err := decodeInspector(b)
	return b, r, err
}
