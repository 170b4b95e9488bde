package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The rules of example/prometheus/rules.yml on a real Prometheus, fed by the
// example app through the collector: a congested app must raise the
// saturation alert and be told to run more workers; an idle one neither.

// idleSpan is how long the idle app runs before its check: two windows
// and a hold, so that its rates cover full windows and an alert would have
// had time to fire.
const idleSpan = 45 * time.Second

// conditional are the recording rules of rules.yml whose series exist only
// under a condition the stack's apps do not meet, each with it: e2e/cpulimit
// runs the app under each.
var conditional = map[string]string{
	"process:cpu_throttled:ratio_rate5m":       "a cgroup CPU quota (otelqueue_cpu_*periods_total, which procstat reports only then)",
	"queue:process_cpu_throttled:ratio_rate5m": "a cgroup CPU quota",
	"process:cpu_maxprocs:ratio_rate5m":        "GOMAXPROCS below the cores the process may use",
	"queue:process_cpu_maxprocs:ratio_rate5m":  "GOMAXPROCS below the cores the process may use",
	"queue:workqueue_cpu_wait:share_rate5m":    "a run delay of a tenth of a core or more (a busy node)",
}

// startFastPrometheus starts a second Prometheus, beside the stack's, that
// scrapes the same collector and evaluates the fast copy of the rules. It is
// stopped when the test ends.
func startFastPrometheus(t *testing.T) *Prometheus {
	t.Helper()
	dir := t.TempDir()
	rules, err := FastRules(stack.RulesFile, dir)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(PrometheusConfig(stack.CollectorPromExporter, rules, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Process{
		Name: "prometheus-fast-rules",
		Path: stack.Prometheus.Path,
		Args: []string{
			"--config.file=" + cfg,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
		},
		Dir:     dir,
		LogPath: filepath.Join(dir, "prometheus.log"),
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", p.Name, p.Tail(30))
		}
		if err := p.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	})
	if err := waitReady(context.Background(), p, time.Minute, httpOK("http://"+addr+"/-/ready")); err != nil {
		t.Fatal(err)
	}
	return &Prometheus{BaseURL: "http://" + addr}
}

// ruleState is one rule of /api/v1/rules.
type ruleState struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// rules returns the rules Prometheus has loaded, by group.
func (p *Prometheus) rules(ctx context.Context) (map[string][]ruleState, error) {
	var data struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []ruleState `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(ctx, "/api/v1/rules", url.Values{}, &data); err != nil {
		return nil, err
	}
	out := map[string][]ruleState{}
	for _, g := range data.Groups {
		out[g.Name] = g.Rules
	}
	return out, nil
}

// queryOne returns the value of a query that must select exactly one series.
func queryOne(ctx context.Context, p *Prometheus, query string) (float64, error) {
	s, err := p.Query(ctx, query)
	if err != nil {
		return 0, err
	}
	if len(s) != 1 {
		return 0, fmt.Errorf("%s: %d series, want 1", query, len(s))
	}
	return s[0].Value, nil
}

// TestRules checks the rules on a real Prometheus: the stack's loads
// rules.yml as shipped and evaluates every rule without error; a second one
// evaluates a copy with short windows and holds (FastRules) so that a
// congested app's saturation alert fires within seconds rather than 15
// minutes.
func TestRules(t *testing.T) {
	ctx := context.Background()
	fast := startFastPrometheus(t)

	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	congested, idle := "e2e-rules-congested-"+suffix, "e2e-rules-idle-"+suffix
	// Congested: one worker of 50 ms reconciles (at most 20/s) for 40
	// updates/s over 50 objects. Idle: 4 workers of 2 ms reconciles for 5
	// updates/s.
	c := startApp(t, congested, "-workers", "1", "-churn", "40", "-latency", "50ms", "-latency-spread", "0",
		"-error-rate", "0", "-burst-every", "0", "-objects", "50")
	i := startApp(t, idle, "-workers", "4", "-churn", "5", "-latency", "2ms", "-latency-spread", "0",
		"-error-rate", "0", "-burst-every", "0", "-objects", "20")
	start := time.Now()

	sel := func(job string) string { return fmt.Sprintf(`{job=%q}`, job) }

	t.Run("congested: saturation alert fires, more workers recommended", func(t *testing.T) {
		Eventually(t, 2*time.Minute, time.Second, func() error {
			s, err := fast.Query(ctx, fmt.Sprintf(`ALERTS{alertname="WorkqueueSaturated",alertstate="firing",job=%q}`, congested))
			if err != nil {
				return err
			}
			if len(s) == 0 {
				u, _ := queryOne(ctx, fast, "queue:workqueue_utilization:ratio_rate5m"+sel(congested))
				return fmt.Errorf("WorkqueueSaturated is not firing for %s (utilization %.3f)", congested, u)
			}
			return nil
		})
		t.Logf("WorkqueueSaturated firing for the congested app %s after it started", time.Since(start).Round(time.Second))
		var rec, workers, util, arrivals float64
		Eventually(t, 30*time.Second, time.Second, func() (err error) {
			if rec, err = queryOne(ctx, fast, "queue:workqueue_recommended_workers:littles_law"+sel(congested)); err != nil {
				return err
			}
			if workers, err = queryOne(ctx, fast, "queue:workqueue_workers:sum"+sel(congested)); err != nil {
				return err
			}
			if util, err = queryOne(ctx, fast, "queue:workqueue_utilization:ratio_rate5m"+sel(congested)); err != nil {
				return err
			}
			arrivals, err = queryOne(ctx, fast, "queue:workqueue_arrivals:rate5m"+sel(congested))
			return err
		})
		t.Logf("congested: configured %v workers, utilization %.3f, arrivals %.1f/s, recommended %v workers", workers, util, arrivals, rec)
		if workers != 1 {
			t.Errorf("configured workers %v, want 1 (the app's -workers)", workers)
		}
		if rec <= workers {
			t.Errorf("recommended %v workers for a saturated queue with %v: want more", rec, workers)
		}
	})

	t.Run("idle: no saturation alert, no more workers recommended", func(t *testing.T) {
		// At no evaluation since the idle app started may its alert have
		// been pending or firing.
		time.Sleep(time.Until(start.Add(idleSpan)))
		window := fmt.Sprintf("[%ds]", int(time.Since(start).Seconds())+1)
		var util, rec, workers float64
		Eventually(t, 30*time.Second, time.Second, func() (err error) {
			if util, err = queryOne(ctx, fast, "max_over_time(queue:workqueue_utilization:ratio_rate5m"+sel(idle)+window+")"); err != nil {
				return err
			}
			if rec, err = queryOne(ctx, fast, "max_over_time(queue:workqueue_recommended_workers:littles_law"+sel(idle)+window+")"); err != nil {
				return err
			}
			workers, err = queryOne(ctx, fast, "queue:workqueue_workers:sum"+sel(idle))
			return err
		})
		s, err := fast.Query(ctx, fmt.Sprintf(`count_over_time(ALERTS{alertname="WorkqueueSaturated",job=%q}%s)`, idle, window))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("idle: configured %v workers, highest utilization %.4f and recommendation %v over %s", workers, util, rec, window)
		if len(s) > 0 {
			t.Errorf("WorkqueueSaturated was pending or firing for the idle app: %v", s)
		}
		if util >= 0.9 {
			t.Errorf("idle app utilization reached %.3f", util)
		}
		if rec > workers {
			t.Errorf("recommended %v workers for the idle app, which has %v", rec, workers)
		}
	})

	t.Run("the stack's Prometheus evaluates rules.yml as shipped", func(t *testing.T) {
		Eventually(t, 30*time.Second, time.Second, func() error {
			groups, err := stack.PrometheusAPI.rules(ctx)
			if err != nil {
				return err
			}
			n := 0
			for g, rs := range groups {
				for _, r := range rs {
					n++
					if r.Health != "ok" {
						return fmt.Errorf("rule %s/%s: health %q %s", g, r.Name, r.Health, r.LastError)
					}
				}
			}
			if len(groups["otelqueue.recording"]) == 0 || len(groups["otelqueue.alerts"]) == 0 {
				return fmt.Errorf("groups loaded: %v, want otelqueue.recording and otelqueue.alerts", groups)
			}
			// Its 5m windows hold only a minute of data yet, but every
			// recording rule has a series for the congested app, but
			// the conditional ones.
			for _, r := range groups["otelqueue.recording"] {
				if conditional[r.Name] != "" {
					continue
				}
				if _, err := queryOne(ctx, stack.PrometheusAPI, r.Name+sel(congested)); err != nil {
					return err
				}
			}
			for name := range conditional {
				if !slices.ContainsFunc(groups["otelqueue.recording"], func(r ruleState) bool { return r.Name == name }) {
					return fmt.Errorf("no recording rule %s: update conditional", name)
				}
			}
			return nil
		})
	})

	c.stop()
	i.stop()
}
