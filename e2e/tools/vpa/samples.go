package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Sample is one reading of the demo's process, as metrics-server would
// serve it: its CPU rate over the window that ends at At, and its memory
// at At.
type Sample struct {
	At     time.Time
	Window time.Duration
	// Ticks is the process's utime+stime at At, in clock ticks (USER_HZ,
	// 100 a second on Linux), from /proc/PID/stat; CPU the cores it used
	// over the window.
	Ticks uint64
	CPU   float64
	// RSS is the process's resident set at At, in bytes (/proc/PID/status
	// VmRSS), the closest a single process has to the working set
	// metrics-server serves for a container; RSSAnon and RSSFile are its
	// anonymous and file-backed parts (RssAnon, RssFile: the heap and
	// stacks, and the pages of the executable and other files mapped).
	RSS, RSSAnon, RSSFile uint64
}

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// the kernel fixes at 100 for user space whatever its own HZ.
const userHZ = 100

// reading is the CPU ticks and resident set of a process at one time.
type reading struct {
	at    time.Time
	ticks uint64
	mem   memory
}

// memory is the resident set of a process and its parts, in bytes.
type memory struct{ rss, anon, file uint64 }

// readProc reads the process pid: its utime+stime (fields 14 and 15 of
// /proc/PID/stat, its own threads', not its children's) and its resident
// set (/proc/PID/status).
func readProc(proc string, pid int) (reading, error) {
	// Wall clock only (no monotonic reading): the times written to the CSV
	// and read back must subtract as these do.
	at := time.Now().Round(0)
	stat, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", proc, pid))
	if err != nil {
		return reading{}, err
	}
	ticks, err := parseStatTicks(string(stat))
	if err != nil {
		return reading{}, fmt.Errorf("%s/%d/stat: %v", proc, pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("%s/%d/status", proc, pid))
	if err != nil {
		return reading{}, err
	}
	mem, err := parseStatus(string(status))
	if err != nil {
		return reading{}, fmt.Errorf("%s/%d/status: %v", proc, pid, err)
	}
	return reading{at: at, ticks: ticks, mem: mem}, nil
}

// parseStatTicks returns utime+stime of a /proc/PID/stat line. The command
// (field 2) is in parentheses and may hold spaces: the fields are counted
// from the last ')'.
func parseStatTicks(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command, want at least 13", len(f))
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %v", err)
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %v", err)
	}
	return utime + stime, nil
}

// parseStatus returns the VmRSS, RssAnon and RssFile of a
// /proc/PID/status, in bytes.
func parseStatus(status string) (memory, error) {
	var m memory
	found := 0
	for line := range strings.SplitSeq(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		var dst *uint64
		switch k {
		case "VmRSS":
			dst = &m.rss
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		}
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("%s line %q, want <n> kB", k, line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %v", k, err)
		}
		*dst = kb * 1024
		found++
	}
	if found != 3 {
		return m, errors.New("no VmRSS, RssAnon and RssFile (a zombie process has none)")
	}
	return m, nil
}

// sampleOf is the sample of the window from prev to cur.
func sampleOf(prev, cur reading) Sample {
	w := cur.at.Sub(prev.at)
	s := Sample{At: cur.at, Window: w, Ticks: cur.ticks, RSS: cur.mem.rss, RSSAnon: cur.mem.anon, RSSFile: cur.mem.file}
	if w > 0 && cur.ticks >= prev.ticks {
		s.CPU = float64(cur.ticks-prev.ticks) / userHZ / w.Seconds()
	}
	return s
}

// The samples' CSV: comment lines (#) with the run's parameters, as
// key=value, then a header and one line per sample.
var csvHeader = []string{"at", "elapsed_s", "window_s", "cpu_ticks", "cpu_cores", "rss_bytes", "rss_anon_bytes", "rss_file_bytes"}

// Meta is what the CSV's comment lines hold: enough to replay it.
type Meta struct {
	Start      time.Time
	Resolution time.Duration
	// Command is the demo's command line; Cgroup the quota it ran under,
	// if any.
	Command string
	Cgroup  string
}

// csvWriter writes samples as they come, flushed after each.
type csvWriter struct {
	w     io.Writer
	c     *csv.Writer
	start time.Time
}

func newCSVWriter(w io.Writer, m Meta) (*csvWriter, error) {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# start=%s\n", m.Start.Format(time.RFC3339Nano))
	fmt.Fprintf(bw, "# resolution=%s\n", m.Resolution)
	fmt.Fprintf(bw, "# command=%s\n", strings.ReplaceAll(m.Command, "\n", " "))
	if m.Cgroup != "" {
		fmt.Fprintf(bw, "# cgroup=%s\n", m.Cgroup)
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	c := csv.NewWriter(w)
	if err := c.Write(csvHeader); err != nil {
		return nil, err
	}
	c.Flush()
	return &csvWriter{w: w, c: c, start: m.Start}, c.Error()
}

func (cw *csvWriter) write(s Sample) error {
	cw.c.Write([]string{
		s.At.Format(time.RFC3339Nano),
		strconv.FormatFloat(s.At.Sub(cw.start).Seconds(), 'f', 3, 64),
		strconv.FormatFloat(s.Window.Seconds(), 'f', 9, 64),
		strconv.FormatUint(s.Ticks, 10),
		strconv.FormatFloat(s.CPU, 'g', -1, 64), // exact: the replay must give the run's answer
		strconv.FormatUint(s.RSS, 10),
		strconv.FormatUint(s.RSSAnon, 10),
		strconv.FormatUint(s.RSSFile, 10),
	})
	cw.c.Flush()
	return cw.c.Error()
}

// readCSV reads what csvWriter wrote.
func readCSV(r io.Reader) (Meta, []Sample, error) {
	var m Meta
	br := bufio.NewReader(r)
	for {
		b, err := br.Peek(1)
		if err != nil || b[0] != '#' {
			break
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return m, nil, fmt.Errorf("a comment line: %v", err)
		}
		k, v, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), "=")
		switch k {
		case "start":
			if m.Start, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return m, nil, fmt.Errorf("start: %v", err)
			}
		case "resolution":
			if m.Resolution, err = time.ParseDuration(v); err != nil {
				return m, nil, fmt.Errorf("resolution: %v", err)
			}
		case "command":
			m.Command = v
		case "cgroup":
			m.Cgroup = v
		}
	}
	if m.Start.IsZero() || m.Resolution <= 0 {
		return m, nil, errors.New("no '# start=' or '# resolution=' line")
	}
	c := csv.NewReader(br)
	head, err := c.Read()
	if err != nil {
		return m, nil, fmt.Errorf("the header: %v", err)
	}
	if strings.Join(head, ",") != strings.Join(csvHeader, ",") {
		return m, nil, fmt.Errorf("header %q, want %q", head, csvHeader)
	}
	var out []Sample
	for {
		rec, err := c.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return m, nil, err
		}
		var s Sample
		var errs []error
		s.At, err = time.Parse(time.RFC3339Nano, rec[0])
		errs = append(errs, err)
		w, err := strconv.ParseFloat(rec[2], 64)
		errs = append(errs, err)
		s.Window = time.Duration(math.Round(w * float64(time.Second)))
		s.Ticks, err = strconv.ParseUint(rec[3], 10, 64)
		errs = append(errs, err)
		s.CPU, err = strconv.ParseFloat(rec[4], 64)
		errs = append(errs, err)
		s.RSS, err = strconv.ParseUint(rec[5], 10, 64)
		errs = append(errs, err)
		s.RSSAnon, err = strconv.ParseUint(rec[6], 10, 64)
		errs = append(errs, err)
		s.RSSFile, err = strconv.ParseUint(rec[7], 10, 64)
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			line, _ := c.FieldPos(0)
			return m, nil, fmt.Errorf("line %d: %v", line, err)
		}
		out = append(out, s)
	}
	return m, out, nil
}
