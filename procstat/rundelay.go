package procstat

import (
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// procTasks is the directory of the process's threads in the file system
// of a Reader (Linux's /proc/self/task).
const procTasks = "proc/self/task"

// runDelay is a Reader's account of its process's threads' run delay: the
// time they were runnable, on a CPU's run queue, and not running (Linux's
// schedstat). A thread's figure goes with the thread when it exits, so the
// account keeps each thread's last reading and adds up what each grew:
// the total never goes back.
type runDelay struct {
	total time.Duration
	last  map[string]time.Duration // by thread id
}

// read returns the run delay of the process's threads so far, and false
// when it cannot be read (no schedstat: another kernel, or one built
// without CONFIG_SCHED_INFO). The Reader's mutex must be held.
func (d *runDelay) read(fsys fs.FS) (time.Duration, bool) {
	tasks, err := fs.ReadDir(fsys, procTasks)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	seen := make(map[string]time.Duration, len(tasks))
	for _, t := range tasks {
		data, err := fs.ReadFile(fsys, procTasks+"/"+t.Name()+"/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		// "<ns on the CPU> <ns waiting on a run queue> <timeslices>"
		f := strings.Fields(string(data))
		if len(f) < 2 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || ns < 0 {
			return 0, false
		}
		wait := time.Duration(ns)
		seen[t.Name()] = wait
		if prev, ok := d.last[t.Name()]; ok && wait >= prev {
			d.total += wait - prev
		} else {
			d.total += wait // a thread first seen (or a thread id reused)
		}
	}
	if len(seen) == 0 {
		return 0, false
	}
	d.last = seen
	return d.total, true
}
