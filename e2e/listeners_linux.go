package e2e

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listeners returns the local addresses of the TCP sockets that process pid
// listens on and of its bound UDP sockets, read from /proc.
func Listeners(pid int) ([]net.Addr, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []net.Addr
	for _, tab := range []struct {
		file, state string
		udp         bool
	}{
		{"tcp", "0A", false}, {"tcp6", "0A", false}, // LISTEN
		{"udp", "07", true}, {"udp6", "07", true}, // bound, unconnected
	} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, tab.file))
		if err != nil {
			continue // no IPv6
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != tab.state || !inodes[fields[9]] {
				continue
			}
			ip, port, err := parseProcAddr(fields[1])
			if err != nil {
				f.Close()
				return nil, err
			}
			if tab.udp {
				out = append(out, &net.UDPAddr{IP: ip, Port: port})
			} else {
				out = append(out, &net.TCPAddr{IP: ip, Port: port})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseProcAddr parses /proc/net/tcp's "0100007F:1F90": the address in
// host byte order, 32-bit word by word, then the port in hex.
func parseProcAddr(s string) (net.IP, int, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(b); i += 4 { // little-endian words
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("bad port in %q", s)
	}
	return net.IP(b), int(port), nil
}
