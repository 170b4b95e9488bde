package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// bottleneckCase is a demo run whose flags provoke one bottleneck class.
type bottleneckCase struct {
	class   string
	workers int
	args    []string
}

// bottleneckCases are the demo's flags for each class (docs/tuning.md).
var bottleneckCases = []bottleneckCase{
	// 40 updates/s of 1 ms reconciles, one write each, through a client
	// limited to 5 requests/s.
	{"client-rate-limit", 4, []string{"-kube-qps", "5", "-kube-burst", "1", "-churn", "40", "-latency", "1ms", "-error-rate", "0"}},
	// The embedded API server takes 3 requests/s from the controller and
	// answers the rest 429 with Retry-After: 1.
	{"server-throttling", 4, []string{"-server-qps", "3", "-churn", "40", "-latency", "1ms", "-error-rate", "0"}},
	// 80% of the reconciles fail.
	{"errors", 4, []string{"-error-rate", "0.8", "-churn", "20", "-latency", "1ms"}},
	// One worker for 40 updates/s of 50 ms reconciles.
	{"workers", 1, []string{"-churn", "40", "-latency", "50ms", "-error-rate", "0"}},
	{"none", 4, []string{"-churn", "10", "-latency", "1ms", "-error-rate", "0"}},
}

// TestBottleneck runs the demo once per bottleneck class, all at once, on
// the stack's collector and a Prometheus that evaluates the rules with short
// windows (fastRules): each queue's queue:workqueue_bottleneck:rate5m must
// settle on its class and stay there for a window, the demo's own summary
// line must say the same, and for every class but workers the recommended
// workers must never exceed the configured count once the class shows.
func TestBottleneck(t *testing.T) {
	ctx := context.Background()
	fast := startFastPrometheus(t)
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	apps := make([]*appRun, len(bottleneckCases))
	for i, c := range bottleneckCases {
		args := append([]string{"-workers", strconv.Itoa(c.workers), "-burst-every", "0", "-latency-spread", "0", "-objects", "50"}, c.args...)
		apps[i] = startApp(t, "e2e-bottleneck-"+c.class+"-"+suffix, args...)
	}
	var wg sync.WaitGroup
	for i, c := range bottleneckCases {
		wg.Go(func() {
			t.Run(c.class, func(t *testing.T) {
				checkBottleneck(ctx, t, fast, apps[i], c)
			})
		})
	}
	wg.Wait()
	for _, a := range apps {
		a.stop()
	}
}

func checkBottleneck(ctx context.Context, t *testing.T, p *Prometheus, app *appRun, c bottleneckCase) {
	sel := fmt.Sprintf(`{job=%q}`, app.service)
	var shownAt time.Time
	Eventually(t, 3*time.Minute, time.Second, func() error {
		s, err := p.Query(ctx, "queue:workqueue_bottleneck:rate5m"+sel)
		if err != nil {
			return err
		}
		if len(s) != 1 {
			return fmt.Errorf("%d bottleneck series for %s, want 1: %v", len(s), app.service, s)
		}
		if got := s[0].Metric["bottleneck"]; got != c.class {
			return fmt.Errorf("bottleneck=%s (%v) for %s, want %s", got, s[0].Value, app.service, c.class)
		}
		shownAt = time.Now()
		return nil
	})
	// One window more: the class holds, and no recommendation above the
	// configured count for a class other than workers.
	time.Sleep(time.Until(shownAt.Add(25 * time.Second)))
	window := fmt.Sprintf("[%ds]", int(time.Since(shownAt).Seconds()))
	other, err := p.Query(ctx, fmt.Sprintf(`count_over_time(queue:workqueue_bottleneck:rate5m{job=%q,bottleneck!=%q}%s)`, app.service, c.class, window))
	if err != nil {
		t.Fatal(err)
	}
	if len(other) > 0 {
		t.Errorf("the class changed within a window of showing %s: %v", c.class, other)
	}
	figures := map[string]string{}
	for name, q := range map[string]string{
		"utilization":      "queue:workqueue_utilization:ratio_rate5m",
		"p99 wait":         "queue:workqueue_queue_duration_seconds:p99_rate5m",
		"own":              "queue:workqueue_own:share_rate5m",
		"limiter":          "queue:workqueue_client_rate_limiter:share_rate5m",
		"api":              "queue:workqueue_client_request:share_rate5m",
		"retry-after":      "queue:workqueue_client_retry_after:share_rate5m",
		"retries/adds":     "queue:workqueue_retries:ratio_rate5m",
		"recommended":      "queue:workqueue_recommended_workers:littles_law",
		"max recommended":  "max_over_time(queue:workqueue_recommended_workers:littles_law" + sel + window + ")",
		"configured":       "queue:workqueue_workers:sum",
		"bottleneck value": "queue:workqueue_bottleneck:rate5m",
	} {
		if !strings.Contains(q, "{") {
			q += sel
		}
		v, err := queryOne(ctx, p, q)
		if err != nil {
			figures[name] = "absent"
			continue
		}
		figures[name] = strconv.FormatFloat(v, 'g', 3, 64)
		if name == "max recommended" && c.class != "workers" && c.class != "none" && v > float64(c.workers) {
			t.Errorf("recommended up to %v workers under %s with %d configured: more workers for a downstream limit or errors", v, c.class, c.workers)
		}
	}
	t.Logf("%s: %v", c.class, figures)

	// The demo's summary line, from the same process, says the same: the
	// last line and most lines since the class showed.
	lines, agree := 0, 0
	var last string
	for _, l := range strings.Split(app.output(), "\n") {
		if !strings.Contains(l, "queue configmaps:") || !strings.Contains(l, "bottleneck=") {
			continue
		}
		lines++
		last = l
		if strings.Contains(l, "bottleneck="+c.class+" ") {
			agree++
		}
	}
	if lines == 0 || agree*2 < lines {
		t.Errorf("the summary said bottleneck=%s in %d of its %d lines; the last: %s", c.class, agree, lines, last)
	}
}
