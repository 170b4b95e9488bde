package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/inspect"

	"github.com/go-logr/logr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}

func TestParseFlagsRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-workers", "0"}, "-workers is 0"},
		{[]string{"-objects", "0"}, "-objects is 0"},
		{[]string{"-churn", "-1"}, "-churn is -1"},
		{[]string{"-latency", "-1s"}, "-latency is -1s"},
		{[]string{"-duration", "-1s"}, "-duration is -1s"},
		{[]string{"-metrics-addr", "9465"}, `-metrics-addr "9465"`},
		{[]string{"-nope"}, "flag provided but not defined: -nope (run with -h"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		// -workers (1 by default) is the adaptive pool's start.
		{[]string{"-adaptive-workers", "2:8"}, "-workers is 1, outside -adaptive-workers 2:8"},
		{[]string{"-churn-schedule", "10s:100", "-kubeconfig", "/k"}, "no workload runs"},
	} {
		if _, err := parseFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	cfg, err := parseFlags([]string{"-kubeconfig", "/nonexistent"})
	if err != nil || cfg.Generate {
		t.Errorf("with -kubeconfig the workload must be asked for: generate=%v, err=%v", cfg.Generate, err)
	}
}

// TestExampleOnFakeCluster runs the example on its embedded cluster and
// checks what a user would look at: the scrape (controller-runtime's
// series and otelqueue's, the depth by priority, exemplars) and the traces
// (an attempt with queued, reconcile and the reconciler's work span,
// linked to the workload's write).
func TestExampleOnFakeCluster(t *testing.T) {
	cfg, err := parseFlags([]string{"-metrics-addr", "127.0.0.1:0", "-objects", "40", "-churn", "20", "-latency", "5ms", "-summary-interval", "0"})
	if err != nil {
		t.Fatal(err)
	}
	sr := tracetest.NewSpanRecorder()
	cfg.spans = sr
	cfg.skipNameValidation = true // -count > 1 runs the controller again
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, ready) }()
	var url string
	select {
	case url = <-ready:
	case err := <-errc:
		t.Fatalf("run: %v", err)
	}

	want := map[string]*regexp.Regexp{
		"the initial list's depth at low priority": regexp.MustCompile(`^workqueue_depth\{controller="configmaps",name="configmaps",priority="-100"\} `),
		"the depth at priority 0":                  regexp.MustCompile(`^workqueue_depth\{controller="configmaps",name="configmaps",priority="0"\} `),
		"controller-runtime's reconcile count":     regexp.MustCompile(`^controller_runtime_reconcile_total\{controller="configmaps",result="success"\} [1-9]`),
		"an exemplar on the queue wait":            regexp.MustCompile(`^workqueue_queue_duration_seconds_bucket\{[^}]*name="configmaps"[^}]*\} \d+ # \{[^}]*trace_id="[0-9a-f]{32}"`),
		"an exemplar on the work":                  regexp.MustCompile(`^workqueue_work_duration_seconds_bucket\{[^}]*name="configmaps"[^}]*\} \d+ # \{[^}]*trace_id="[0-9a-f]{32}"`),
		"the configured workers":                   regexp.MustCompile(fmt.Sprintf(`^workqueue_workers\{controller="configmaps",name="configmaps"\} %d(\.0)?( |$)`, cfg.Workers)),
	}
	deadline := time.Now().Add(30 * time.Second)
	// pause waits between polls, failing at once if the example stopped.
	pause := func() {
		select {
		case err := <-errc:
			t.Fatalf("the example stopped early: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for missing := want; len(missing) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the scrape of %s still lacks %d series, e.g. %v", url, len(missing), missing)
		}
		pause()
		lines := scrape(t, url)
		missing = map[string]*regexp.Regexp{}
		for what, re := range want {
			found := false
			for _, l := range lines {
				found = found || re.MatchString(l)
			}
			if !found {
				missing[what] = re
			}
		}
	}

	// The queue inspector beside /metrics shows the controller's queue.
	inspector := strings.TrimSuffix(url, "/metrics") + "/debug/queues?format=json"
	resp, err := http.Get(inspector)
	if err != nil {
		t.Fatalf("the queue inspector: %v", err)
	}
	var page inspect.Page
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the queue inspector at %s: %s, %v", inspector, resp.Status, err)
	}
	if len(page.Queues) != 1 || page.Queues[0].Name != "configmaps" {
		t.Errorf("the queue inspector shows %+v, want the configmaps queue", page.Queues)
	}

	// A reconcile of an update: its root links to the workload's write and
	// holds queued and reconcile, the reconciler's work under reconcile.
	writes := map[trace.SpanID]bool{}
	linked := func() (sdktrace.ReadOnlySpan, bool) {
		spans := sr.Ended()
		for _, s := range spans {
			if s.Name() == "workload update" {
				writes[s.SpanContext().SpanID()] = true
			}
		}
		for _, s := range spans {
			if s.Name() != "process configmaps" {
				continue
			}
			for _, l := range s.Links() {
				if writes[l.SpanContext.SpanID()] {
					return s, true
				}
			}
		}
		return nil, false
	}
	var root sdktrace.ReadOnlySpan
	for ok := false; !ok; {
		if time.Now().After(deadline) {
			t.Fatal("no reconcile root links to a workload update")
		}
		pause()
		root, ok = linked()
	}
	children := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		if s.Parent().SpanID() == root.SpanContext().SpanID() {
			children[s.Name()] = s
		}
	}
	if children["queued"] == nil || children["reconcile"] == nil {
		t.Fatalf("root %v has children %v, want queued and reconcile", root.Name(), children)
	}
	work := false
	for _, s := range sr.Ended() {
		work = work || s.Name() == "work" && s.Parent().SpanID() == children["reconcile"].SpanContext().SpanID()
	}
	if !work {
		t.Error("the reconciler's work span is not a child of reconcile")
	}

	cancel()
	if err := <-errc; err != nil {
		t.Errorf("run: %v", err)
	}
}

func scrape(t *testing.T, url string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: %s: %s", resp.Status, body)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
