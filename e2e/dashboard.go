package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// DashboardQuery is one query of a panel of the Grafana dashboard
// (example/grafana/dashboards/otelqueue.json), ready for Prometheus: its
// $queue is every queue and its $__rate_interval 1m.
type DashboardQuery struct {
	Panel string
	// Fleet says the panel is a sharded fleet's ("Fleet: ..."), which
	// has data only where replicas report workqueue_shard_share.
	Fleet bool
	Expr  string
}

// DashboardQueries returns every query of the dashboard's panels.
func DashboardQueries() ([]DashboardQuery, error) {
	path, err := exampleFile("Grafana dashboard", "grafana", "dashboards", "otelqueue.json")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	vars := strings.NewReplacer("$queue", ".*", "$__rate_interval", "1m")
	var out []DashboardQuery
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out = append(out, DashboardQuery{Panel: p.Title, Fleet: strings.HasPrefix(p.Title, "Fleet:"), Expr: vars.Replace(tg.Expr)})
		}
	}
	return out, nil
}
