package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/net/html"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// The queue inspector's page (otelqueue.Inspector) as a person sees it:
// loaded by a real browser, Debian's headless Chromium, from the demo
// during a congested run and during a run limited by its API client, and
// with a thousand keys waiting. The tests read what the page shows through
// the DOM Chromium built, and keep a screenshot of each state in
// OTELQUEUE_E2E_RESULTS/inspector (make e2e: e2e/.results/inspector).

// inspectorCase is a demo run and what its inspector page must show.
type inspectorCase struct {
	name  string
	class string
	args  []string
}

var inspectorCases = []inspectorCase{
	// One worker for 40 updates/s of 50 ms reconciles (TestBottleneck's
	// workers case).
	{"congested", "workers", []string{"-workers", "1", "-churn", "40", "-latency", "50ms"}},
	// Four workers behind a client limited to 5 requests/s.
	{"client-limited", "client-rate-limit", []string{"-workers", "4", "-kube-qps", "5", "-kube-burst", "1", "-churn", "40", "-latency", "1ms"}},
}

// resultsDir returns the directory the screenshots go to: under
// OTELQUEUE_E2E_RESULTS, else the test's temporary directory.
func resultsDir(t *testing.T, sub string) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("OTELQUEUE_E2E_RESULTS"); root != "" {
		dir = filepath.Join(root, sub)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// inspectedQueue is what the page shows of one queue.
type inspectedQueue struct {
	class, verdict, window string
	depth                  int
	oldest                 []string // keys, oldest first
	// triggers and sources are those of the oldest keys' rows: the event
	// and the kind it was about (empty when the add said none).
	triggers, sources []string
}

// readQueue reads the section of queue name from a page's DOM.
func readQueue(t *testing.T, doc *html.Node, name string) (inspectedQueue, error) {
	t.Helper()
	// The queue's section, not the pod size's line of its workers, which
	// names the queue too.
	isQueue := HasAttr("data-queue", name)
	sections := FindAll(doc, func(n *html.Node) bool { return n.Data == "section" && isQueue(n) })
	if len(sections) != 1 {
		return inspectedQueue{}, fmt.Errorf("%d sections of queue %q on the page, want 1", len(sections), name)
	}
	s := sections[0]
	field := func(f string) string {
		if n := FindAll(s, HasAttr("data-field", f)); len(n) == 1 {
			return Text(n[0])
		}
		return ""
	}
	q := inspectedQueue{class: field("bottleneck-class"), verdict: field("bottleneck-verdict"), window: field("bottleneck-window")}
	var err error
	if q.depth, err = strconv.Atoi(field("depth")); err != nil {
		return q, fmt.Errorf("the page's depth: %v", err)
	}
	for _, table := range FindAll(s, func(n *html.Node) bool { return n.Data == "table" && Attr(n, "class") == "oldest" }) {
		for _, row := range FindAll(table, func(n *html.Node) bool { return n.Data == "tr" && Attr(n, "data-key") != "" }) {
			q.oldest = append(q.oldest, Attr(row, "data-key"))
			trigger, source := "", ""
			if n := FindAll(row, HasAttr("data-field", "trigger")); len(n) == 1 {
				trigger = strings.Fields(Text(n[0]) + " ")[0]
			}
			if n := FindAll(row, HasAttr("data-field", "source")); len(n) == 1 {
				source = Text(n[0])
			}
			q.triggers, q.sources = append(q.triggers, trigger), append(q.sources, source)
		}
	}
	return q, nil
}

// TestInspectorPage loads the demo's /debug/queues in Chromium while the
// demo is congested and while its API client limits it: the page must name
// the class, and list the keys that waited longest, which the queue holds.
func TestInspectorPage(t *testing.T) {
	browser := NewBrowser(t)
	dir := resultsDir(t, "inspector")
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	apps := make([]*appRun, len(inspectorCases))
	for i, c := range inspectorCases {
		args := append([]string{"-burst-every", "0", "-latency-spread", "0", "-objects", "50", "-error-rate", "0"}, c.args...)
		apps[i] = startAppExporting(t, false, "e2e-inspector-"+c.name+"-"+suffix, args...)
	}
	var wg sync.WaitGroup
	for i, c := range inspectorCases {
		wg.Go(func() {
			t.Run(c.name, func(t *testing.T) {
				url := strings.TrimSuffix(apps[i].metrics, "/metrics") + "/debug/queues"
				var got inspectedQueue
				// Each look ends the inspector's window: every 10 s, a look
				// classifies the 10 s before it.
				Eventually(t, 3*time.Minute, 10*time.Second, func() error {
					doc, _ := browser.DOM(t, url)
					q, err := readQueue(t, doc, "configmaps")
					if err != nil {
						return err
					}
					got = q
					if q.class != c.class {
						return fmt.Errorf("the page shows class %q (%s), want %s", q.class, q.verdict, c.class)
					}
					if len(q.oldest) == 0 || q.depth == 0 {
						return fmt.Errorf("the page shows %d keys ready and %d waiting longest, want some", q.depth, len(q.oldest))
					}
					// Why each will run: the demo's informer events say
					// their kind (scheduler.AddOptions.Source).
					events := 0
					for i, tr := range q.triggers {
						switch tr {
						case "create", "update", "delete", "initial_list", "resync":
							events++
							if q.sources[i] != "ConfigMap" {
								return fmt.Errorf("the row of %s shows trigger %s from %q, want from ConfigMap", q.oldest[i], tr, q.sources[i])
							}
						}
					}
					if events == 0 {
						return fmt.Errorf("no key waiting longest shows an event for its trigger: %q", q.triggers)
					}
					return nil
				})
				shot := filepath.Join(dir, c.name+".png")
				browser.Screenshot(t, url, shot, 1400, 1400)
				t.Logf("%s: class %s (%s) over %s; %d ready, oldest %s; screenshot %s",
					c.name, got.class, got.verdict, got.window, got.depth, got.oldest[0], shot)
			})
		})
	}
	wg.Wait()
	for _, a := range apps {
		a.stop()
	}
}

// TestInspectorThousandKeys: a page with a thousand keys waiting, listed
// in full (Limit 1000), loads in Chromium with every row, oldest first,
// and the counts; the time it takes is reported against a page of one key
// loaded in the same run (a ratio; no duration is asserted).
func TestInspectorThousandKeys(t *testing.T) {
	browser := NewBrowser(t)
	dir := resultsDir(t, "inspector")
	name := "e2e-inspector-thousand-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	q := scheduler.New(scheduler.Config[string]{Name: name})
	defer q.ShutDown()
	inst, err := otelqueue.Instrument(q, otelqueue.WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inst.Stop() }()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("namespace-%02d/object-with-a-long-name-%04d", i%20, i)
		q.Add(keys[i])
	}
	big := httptest.NewServer(&otelqueue.Inspector{Limit: 1000}) // its most
	defer big.Close()
	small := httptest.NewServer(&otelqueue.Inspector{Limit: 1})
	defer small.Close()

	// Alternate the two pages, so that the machine's load falls on both.
	var bigTimes, smallTimes []time.Duration
	var doc *html.Node
	for range 3 {
		d, took := browser.DOM(t, big.URL)
		doc, bigTimes = d, append(bigTimes, took)
		_, took = browser.DOM(t, small.URL)
		smallTimes = append(smallTimes, took)
	}
	got, err := readQueue(t, doc, name)
	if err != nil {
		t.Fatal(err)
	}
	if got.depth != 1000 || !slices.Equal(got.oldest, keys) {
		t.Errorf("the page shows depth %d and %d keys waiting longest, want 1000 and the keys in the order added", got.depth, len(got.oldest))
	}
	shot := filepath.Join(dir, "thousand-keys.png")
	browser.Screenshot(t, big.URL, shot, 1400, 1400)
	med := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	size := len(otelqueuePageHTML(t, big.URL))
	t.Logf("a thousand keys: Chromium loads the page (%d bytes) in %v, median of 3, against %v for a page of one key (%.2fx); screenshot %s",
		size, med(bigTimes), med(smallTimes), float64(med(bigTimes))/float64(med(smallTimes)), shot)
}

// otelqueuePageHTML fetches the page's HTML as served.
func otelqueuePageHTML(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
