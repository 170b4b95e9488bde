package otelqueue

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/otelqueue/otelqueue/inspect"
	"github.com/otelqueue/otelqueue/internal/program"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/procstat"
	"github.com/otelqueue/otelqueue/scheduler"
)

// minBottleneckWindow is the shortest window an Inspector classifies a
// queue over: a look sooner than this after the window's start shows the
// last window's class again (or none yet), so that a script polling the
// JSON every second does not cut the windows into noise.
const minBottleneckWindow = 5 * time.Second

// queueReading is one reading of a queue's cumulative counters, the end
// of one of an Inspector's windows and the start of the next.
type queueReading struct {
	at      time.Time // on the queue's clock
	q       scheduler.Stats
	client  ClientStats
	workers int // the worker count then (a Sizer's readings), 0: unknown
	// server is the API round trips of the queue's program (its
	// MeterProvider's clients), cpu the process's CPU; read only for
	// a queue on the real clock (cpuKnown), whose windows are the
	// process's time.
	server   bottleneck.APIServerCounters
	cpu      procstat.Sample
	cpuKnown bool
}

// look is an Inspector's state for one queue: the start of its current
// window, and the last window's class.
type look struct {
	from queueReading
	last *inspect.Bottleneck
}

// processReading is what an Inspector's look reads once for every queue
// on the real clock: the process's CPU, and the API round trips of each
// program (MeterProvider) of the queues.
type processReading struct {
	read   bool
	cpu    procstat.Sample
	server map[*program.State]bottleneck.APIServerCounters
}

// reading returns the queue's reading at its inspection: st read at at,
// with the process's figures when the queue runs on the real clock.
func (in *inspectable) reading(at time.Time, st scheduler.Stats, proc *processReading) queueReading {
	r := queueReading{at: at, q: st}
	if in.client != nil {
		r.client = in.client.stats()
	}
	if in.realClock {
		if !proc.read {
			proc.read = true
			proc.cpu = (*procstat.Reader)(nil).Read()
			proc.server = map[*program.State]bottleneck.APIServerCounters{}
		}
		st := in.b.program.Load()
		server, ok := proc.server[st]
		if !ok {
			server = in.b.server(time.Now())
			proc.server[st] = server
		}
		r.cpu, r.server, r.cpuKnown = proc.cpu, server, true
	}
	return r
}

// bottleneckOf returns the class of the queue in over the window from the
// Inspector's last look at it to cur, and starts the next window; a window
// shorter than minBottleneckWindow shows the last class again. A nil
// Inspector keeps no state: its window starts at the registration.
func (i *Inspector) bottleneckOf(in *inspectable, cur queueReading, workers int, standby bool) *inspect.Bottleneck {
	var lk *look
	if i != nil {
		i.mu.Lock()
		defer i.mu.Unlock()
		if i.looks == nil {
			i.looks = make(map[*inspectable]*look)
		}
		lk = i.looks[in]
		if lk == nil {
			lk = &look{from: in.start}
			i.looks[in] = lk
		}
	} else {
		lk = &look{from: in.start}
	}
	d := cur.at.Sub(lk.from.at)
	if d < minBottleneckWindow {
		if lk.last != nil {
			return lk.last
		}
		return &inspect.Bottleneck{
			Since: lk.from.at, Window: max(0, d), Workers: workers,
			Verdict: fmt.Sprintf("measuring: the first window ends %s after the queue was instrumented; look again then", minBottleneckWindow),
		}
	}
	b := classifyWindow(lk.from, cur, workers)
	if standby {
		b.Class, b.Recommended = "", 0
		b.Verdict = "none while standby: the workers wait for leadership"
	}
	lk.from, lk.last = cur, b
	return b
}

// classifyWindow classifies the window from a to b as the examples'
// summary line does (package bottleneck's Window).
func classifyWindow(a, b queueReading, workers int) *inspect.Bottleneck {
	w := queueWindow(a, b, workers)
	if w.Client.Used && a.cpuKnown && b.cpuKnown {
		// The API server's figures count for a queue whose reconciles
		// call it.
		w.APIServer = bottleneck.APIServerBetween(a.server, b.server)
	}
	if a.cpuKnown && b.cpuKnown {
		w.CPU = bottleneck.ProcessCPU(procstat.Between(a.cpu, b.cpu))
	}
	return inspectedBottleneck(w, a.at)
}

// inspectedBottleneck is what the page says of the window w, which began
// at since.
func inspectedBottleneck(w bottleneck.Window, since time.Time) *inspect.Bottleneck {
	workers := w.Workers
	v := w.Classify()
	// The figures of bottleneck.Verdict's String, without its
	// "bottleneck=<class>" the page shows apart.
	verdict := strings.TrimPrefix(v.String(), "bottleneck="+string(v.Class)+" ")
	verdict = strings.TrimSuffix(strings.TrimPrefix(verdict, "("), ")")
	class := string(v.Class)
	switch {
	case v.Class == "":
		// Keys came and none was done (bottleneck.Window.Classify): the
		// workers are stuck, absent or not started.
		verdict = fmt.Sprintf("no class: %d adds and no reconcile finished in the window; are the workers running (not started, or stuck in long reconciles: see in flight)?", w.Adds)
	case workers <= 0 && v.Class == bottleneck.None:
		verdict = "no limit found, but the worker count is unknown (Instrument WithWorkers): neither the utilization nor the workers class can be read"
	}
	out := &inspect.Bottleneck{
		Class: class, Verdict: verdict,
		Since: since, Window: w.Duration, Workers: workers,
		Utilization: w.Utilization(), Arrivals: w.Arrivals(), MeanWork: w.MeanWork(),
		Reconciles: float64(w.Reconciles) / w.Seconds(),
	}
	if w.CPU.Known {
		out.CPU, out.CPUCores = w.CPU.Used, w.CPU.Cores
	}
	if f := w.Figures(); f.WorkKnown && workers > 0 {
		out.Recommended = v.Recommend(workers, f.LittlesLaw)
	}
	return out
}

// forget drops the looks at queues that are no longer inspectable: those
// not in list (stopped) and those gone (dropped without Stop).
func (i *Inspector) forget(list, gone []*inspectable) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for in := range i.looks {
		if !slices.Contains(list, in) || slices.Contains(gone, in) {
			delete(i.looks, in)
		}
	}
}
