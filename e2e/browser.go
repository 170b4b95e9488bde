package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// Browser is Debian's headless Chromium (chromium-headless-shell, which
// make deps installs), run once per page: it loads a URL and prints the DOM
// it built, or writes a screenshot of it.
type Browser struct {
	path string
	// dir is the profile directory of its runs.
	dir string
}

// NewBrowser finds headless Chromium, failing the test with what to install
// when there is none.
func NewBrowser(tb testing.TB) *Browser {
	tb.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return &Browser{path: p, dir: tb.TempDir()}
		}
	}
	tb.Fatal("no headless Chromium on PATH: make deps installs Debian's chromium-headless-shell (apt-get install chromium-headless-shell)")
	return nil
}

// run runs Chromium on url with args, and returns what it printed and how
// long it took.
func (b *Browser) run(tb testing.TB, url string, args ...string) ([]byte, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --no-sandbox: the tests run as root in CI, where Chromium's sandbox
	// refuses to start; the pages are the tests' own, on loopback.
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + b.dir}, args...)
	cmd := exec.CommandContext(ctx, b.path, append(all, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", b.path, strings.Join(args, " "), err, Tail(stderr.String(), 20))
	}
	return stdout.Bytes(), took
}

// DOM loads url and returns the document Chromium built, and how long
// Chromium took from start to exit.
func (b *Browser) DOM(tb testing.TB, url string) (*html.Node, time.Duration) {
	tb.Helper()
	out, took := b.run(tb, url, "--dump-dom")
	doc, err := html.Parse(bytes.NewReader(out))
	if err != nil {
		tb.Fatalf("parsing the DOM of %s: %v", url, err)
	}
	return doc, took
}

// Screenshot loads url in a window width × height and writes it to path
// as PNG.
func (b *Browser) Screenshot(tb testing.TB, url, path string, width, height int) {
	tb.Helper()
	b.run(tb, url, "--screenshot="+path, fmt.Sprintf("--window-size=%d,%d", width, height), "--hide-scrollbars")
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		tb.Fatalf("Chromium wrote no screenshot of %s to %s: %v", url, path, err)
	}
}

// FindAll returns the elements under n, in document order, for which match
// holds.
func FindAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// Attr returns n's attribute key, "" when it has none.
func Attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// HasAttr returns a matcher of the elements whose attribute key is val.
func HasAttr(key, val string) func(*html.Node) bool {
	return func(n *html.Node) bool { return Attr(n, key) == val }
}

// Text returns the text under n, its runs of white space made one space.
func Text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}
