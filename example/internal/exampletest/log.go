// Package exampletest holds the test helpers of otelqueue's example
// controllers (example/app, example/controllerruntime) and of
// example/internal/examplecluster: the standard logger's output captured, and a wait
// for a line of it.
package exampletest

import (
	"bytes"
	"log"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Log is the standard logger's output during a test.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// CaptureLog sends the standard logger's output to a Log until the test
// ends.
func CaptureLog(t testing.TB) *Log {
	t.Helper()
	l := new(Log)
	prev := log.Writer()
	log.SetOutput(l)
	t.Cleanup(func() { log.SetOutput(prev) })
	return l
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// WaitFor returns the n-th line (from 1) logged that contains prefix and
// matches want, waiting for it. It fails the test after a minute, or at
// once when stopped yields (the program under test returned).
func (l *Log) WaitFor(t testing.TB, n int, prefix string, want *regexp.Regexp, stopped <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		seen := 0
		for _, line := range strings.Split(l.String(), "\n") {
			if strings.Contains(line, prefix) && want.MatchString(line) {
				if seen++; seen == n {
					return line
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line with %q matches %v within a minute:\n%s", prefix, want, l)
		}
		select {
		case err := <-stopped:
			t.Fatalf("stopped before a line with %q matched %v: %v\n%s", prefix, want, err, l)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var writesRE = regexp.MustCompile(`writes/s=([0-9.]+)/([0-9.]+)`)

// WritesRE matches the workload's "writes/s=done/requested" in a summary
// line.
func WritesRE() *regexp.Regexp { return writesRE }

// CheckBehind fails the test unless the summary line shows the workload
// doing fewer writes than requested and saying so with reason.
func CheckBehind(t testing.TB, line, reason string) {
	t.Helper()
	m := writesRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no writes/s in the summary line: %s", line)
	}
	done, _ := strconv.ParseFloat(m[1], 64)
	requested, _ := strconv.ParseFloat(m[2], 64)
	if done >= 0.9*requested {
		t.Fatalf("the workload kept up (%v of %v writes/s): %s", done, requested, line)
	}
	if !strings.Contains(line, "behind: "+reason) {
		t.Errorf("the workload does %v of %v writes/s and does not say \"behind: %s\": %s", done, requested, reason, line)
	}
}
