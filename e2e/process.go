package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a server started by the tests. Its stdout and stderr go to
// LogPath (appended to across restarts). It is killed with SIGKILL when the
// test process dies (Pdeathsig), so that a panic or a `go test` timeout does
// not leave servers behind.
type Process struct {
	Name    string
	Path    string
	Args    []string
	Env     []string // added to the test's environment
	Dir     string
	LogPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	starts  int
}

// Start starts the process. It fails if it is already running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.exitedLocked() {
		return fmt.Errorf("%s: already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.starts++
	fmt.Fprintf(logf, "==== e2e: %s start #%d at %s: %s %q\n", p.Name, p.starts, time.Now().Format(time.RFC3339Nano), p.Path, p.Args)
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: start: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.waitErr = cmd, done, nil
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "==== e2e: %s exited at %s: %v\n", p.Name, time.Now().Format(time.RFC3339Nano), exitDesc(err))
		logf.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func exitDesc(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (p *Process) exitedLocked() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.exitedLocked()
}

// Exited returns a channel closed when the current run exits (nil if never
// started) and, once closed, how it exited.
func (p *Process) Exited() (<-chan struct{}, func() error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.waitErr
	}
}

// Pid returns the pid of the current run, or 0.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.exitedLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it. Stopping a process that is not running is a no-op. It returns
// an error only if the process had to be killed.
func (p *Process) Stop(grace time.Duration) error {
	return p.signalAndWait(syscall.SIGTERM, grace)
}

// Kill sends SIGKILL (a crash, with no chance to flush) and waits for exit.
func (p *Process) Kill() error {
	return p.signalAndWait(syscall.SIGKILL, 10*time.Second)
}

func (p *Process) signalAndWait(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(grace):
	}
	_ = cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s: pid %d did not exit after SIGKILL", p.Name, cmd.Process.Pid)
	}
	if sig == syscall.SIGKILL {
		return nil
	}
	return fmt.Errorf("%s: did not exit within %s of %s; killed", p.Name, grace, sig)
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "(no log)"
		}
		return err.Error()
	}
	return Tail(string(b), n)
}
