package exampletelemetry

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// listenMetrics listens on addr (the -metrics-addr flag) for the
// Prometheus endpoint. A failure says what went wrong and what to do about
// that particular failure.
func listenMetrics(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr %s: %w (%s)", addr, err, listenHint(err))
	}
	return ln, nil
}

// listenHint returns advice for a listen error.
func listenHint(err error) string {
	var dnsErr *net.DNSError
	var addrErr *net.AddrError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return "address in use: is another instance running? Pick another port, or -metrics-addr '' to serve no metrics"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no interface of this host has that address: use 127.0.0.1:<port>, or an address of this host"
	case errors.Is(err, syscall.EACCES):
		return "permission denied: ports below 1024 need privileges, pick a port above 1023"
	case errors.As(err, &dnsErr):
		return "the host name does not resolve: use an IP address such as 127.0.0.1"
	case errors.As(err, &addrErr):
		return "not a usable host:port: use e.g. 127.0.0.1:9464"
	default:
		return "check -metrics-addr, or pass -metrics-addr '' to serve no metrics"
	}
}

// exposureWarning returns a warning when the Prometheus endpoint bound to
// addr can be reached from other hosts, and "" on loopback.
func exposureWarning(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return ""
	}
	local := net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	if tcp.IP.IsUnspecified() {
		return fmt.Sprintf("warning: /metrics is served on every network interface (%s): anyone who can reach this host can read it; -metrics-addr %s keeps it local", addr, local)
	}
	return fmt.Sprintf("warning: /metrics is served on %s, which other hosts may reach; -metrics-addr %s keeps it local", addr, local)
}
