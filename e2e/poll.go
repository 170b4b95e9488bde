package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// Eventually calls check every interval until it returns nil, and fails the
// test with check's last error if that does not happen within timeout.
func Eventually(tb testing.TB, timeout, interval time.Duration, check func() error) {
	tb.Helper()
	if err := poll(context.Background(), timeout, interval, check); err != nil {
		tb.Fatal(err)
	}
}

// poll is Eventually without a test: it returns the last error after
// timeout, or ctx's error.
func poll(ctx context.Context, timeout, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = check(); err == nil {
			return nil
		}
		var fe *fatalError
		if errors.As(err, &fe) {
			return fe.error
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not true after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}

// waitReady polls check until it passes, failing early if p exits.
func waitReady(ctx context.Context, p *Process, timeout time.Duration, check func() error) error {
	exited, exitErr := p.Exited()
	err := poll(ctx, timeout, 100*time.Millisecond, func() error {
		select {
		case <-exited:
			return &fatalError{fmt.Errorf("%s exited during startup: %v", p.Name, exitDesc(exitErr()))}
		default:
		}
		return check()
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w\n--- %s log (%s):\n%s", p.Name, err, p.Name, p.LogPath, p.Tail(40))
	}
	return nil
}

// fatalError makes poll give up at once.
type fatalError struct{ error }

// httpOK checks that GET url answers 200.
func httpOK(url string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// tcpOpen checks that something accepts connections on addr.
func tcpOpen(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// all runs checks in order and returns the first error.
func all(checks ...func() error) func() error {
	return func() error {
		for _, c := range checks {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1. All listeners are
// held until every port is chosen, so the ports differ from each other.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
