package otelqueue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/bottleneck"
	"github.com/otelqueue/otelqueue/internal/clientwork"
	"github.com/otelqueue/otelqueue/internal/objsize"
	"github.com/otelqueue/otelqueue/internal/program"
	"github.com/otelqueue/otelqueue/procstat"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Sizer answers "how big" for the queues instrumented WithSizer and their
// process: how many workers each queue should run, and how much CPU and
// memory the pod should request and be limited to (Recommend), from the
// busiest bottleneck.PeakSpan of the last bottleneck.Horizon. Its zero
// value is ready to use; set its fields before its first queue joins, and
// change them no more.
//
//	sizer := &otelqueue.Sizer{Caches: []otelqueue.Cache{informer.GetStore()}}
//	inst, err := otelqueue.Instrument(queue, otelqueue.WithSizer(sizer))
//	go sizer.Start(ctx)
//	log.Print(sizer.Recommend())
//
// While Start runs, it reads its queues' numbers (scheduler.Stats, the
// workers, ClientStats), the process's CPU and memory (package procstat)
// and the objects of Caches every Interval, and keeps the spans of
// PeakSpan that end at its readings, every one while its history is
// younger than PeakSpan and then one a minute: the history Recommend takes
// the peak of. Nothing is recorded on the queues' hot path. Every reader
// sees the same history; before there is one, Recommend answers over a
// span that ends at the call (so a Sizer that never starts answers over
// the time since its first queue joined).
//
// A Sizer must not be copied after first use. It is safe for concurrent
// use.
type Sizer struct {
	// Interval is how often Start reads: 0 (or less) means 10 s, and less
	// than 100 ms means 100 ms (a Sizer keeps the readings of PeakSpan).
	Interval time.Duration
	// Caches are the informer caches of the controller, whose objects the
	// memory is counted per: client-go's cache.Store
	// (informer.GetStore()) is one, and package controllerruntime's Cache
	// makes one of a manager's cache. Each reading lists them and sizes
	// a sample of their objects (the heap one holds, reached through its
	// pointers), so that the recommendation says what an object costs. A
	// nil Cache is left out.
	Caches []Cache

	mu      sync.Mutex
	clock   clock.WithTicker       // nil: the real clock
	proc    func() procstat.Sample // nil: reader's
	reader  procstat.Reader
	running bool
	queues  []*sized
	// readings are the readings of the last PeakSpan (and the one before
	// it), oldest first; history the spans that end within Horizon.
	readings []sizerReading
	history  []bottleneck.Span
}

// Cache is what a Sizer counts a controller's cached objects from: the
// objects of one informer cache. client-go's cache.Store and
// cache.Indexer are Caches.
type Cache interface {
	List() []any
}

// sizerInterval is a Sizer's Interval unless set, minSizerInterval the
// shortest it takes.
const (
	sizerInterval    = 10 * time.Second
	minSizerInterval = 100 * time.Millisecond
)

// objectSample is the number of objects of each Cache a reading sizes.
const objectSample = 16

// minSpan is the shortest span a Sizer keeps: the CPU time of a shorter
// one is a few of the kernel's accounting ticks, noise.
const minSpan = time.Second

// historyStep is how far apart the spans a Sizer keeps end: spans of five
// minutes a minute apart hold the peaks of those ten seconds apart within
// a few percent, in a sixth of the memory (an hour of a process with 50
// queues: about 750 KB). Each span still takes the largest memory of all
// the readings within it.
const historyStep = time.Minute

// sized is one queue of a Sizer.
type sized struct {
	name string
	// stats reads the queue's numbers, false once its scheduler is gone
	// (dropped without Stop: the Sizer forgets it).
	stats   func() (scheduler.Stats, bool)
	count   func() int // the queue's worker count now, 0 when unknown
	client  *clientInstruments
	standby *standby
	// last is the last worker count known: a Runner's workers are gone
	// from count once its Run returned.
	last atomic.Int64
	// b is the queue's binding, by which an Inspector finds it.
	b *binding
}

// workers is the queue's worker count now, or the last one known.
func (q *sized) workers() int {
	if n := q.count(); n > 0 {
		q.last.Store(int64(n))
		return n
	}
	return int(q.last.Load())
}

// sizerReading is one reading of a Sizer's queues and process.
type sizerReading struct {
	at     time.Time
	queues map[*sized]queueReading
	// The process: its CPU (with its memory), its API round trips, and
	// its caches' objects.
	cpu         procstat.Sample
	server      bottleneck.APIServerCounters
	objects     int
	objectBytes float64
}

// WithSizer makes s size the queue: Instrument adds the queue to s, and
// Stop removes it. A nil s is ignored.
func WithSizer(s *Sizer) Option {
	return optionFunc(func(c *config) { c.sizer = s })
}

// add adds a queue to s and returns the function that removes it.
func (s *Sizer) add(q *sized) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues = append(s.queues, q)
	// The queue's first reading: the start of its first window, read now
	// so that a Sizer that has not started yet answers from here.
	if len(s.readings) == 0 {
		s.readings = append(s.readings, s.readLocked())
	} else if r, ok := q.reading(s.now()); ok {
		s.readings[len(s.readings)-1].queues[q] = r
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.queues = slices.DeleteFunc(s.queues, func(x *sized) bool { return x == q })
	}
}

// reading reads q's cumulative numbers at at, false once its scheduler is
// gone.
func (q *sized) reading(at time.Time) (queueReading, bool) {
	st, ok := q.stats()
	r := queueReading{at: at, q: st, workers: q.workers()}
	if q.client != nil {
		r.client = q.client.stats()
	}
	return r, ok
}

func (s *Sizer) now() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}

func (s *Sizer) interval() time.Duration {
	if s.Interval > 0 {
		return max(s.Interval, minSizerInterval)
	}
	return sizerInterval
}

// Start reads the queues and the process every Interval until ctx ends,
// and returns nil then. It returns an error at once when s is nil or
// already started. It is a controller-runtime manager.Runnable: a manager
// runs it with mgr.Add(sizer), on every replica (NeedLeaderElection).
func (s *Sizer) Start(ctx context.Context) error {
	if s == nil {
		return errors.New("otelqueue: Start on a nil *Sizer: make one with &otelqueue.Sizer{}")
	}
	if ctx == nil {
		return errors.New("otelqueue: Sizer.Start with a nil context: pass the one that ends it (the manager's, or context.Background())")
	}
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("otelqueue: the Sizer is started already: one Start keeps its history")
	}
	s.running = true
	clk := s.clock
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()
	if clk == nil {
		clk = clock.RealClock{}
	}
	t := clk.NewTicker(s.interval())
	defer t.Stop()
	s.tick()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			s.tick()
		}
	}
}

// NeedLeaderElection says that a controller-runtime manager runs the Sizer
// on every replica, leader or not: a standby replica's caches take memory
// too.
func (s *Sizer) NeedLeaderElection() bool { return false }

// tick takes a reading and keeps the span that ends there.
func (s *Sizer) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.readLocked()
	span, ok := s.spanLocked(r)
	s.readings = append(s.readings, r)
	// Keep the readings a span of PeakSpan needs: the oldest one at or
	// before its start.
	from := r.at.Add(-bottleneck.PeakSpan).Add(s.interval() / 2)
	i := 0
	for i+1 < len(s.readings) && !s.readings[i+1].at.After(from) {
		i++
	}
	s.readings = slices.Delete(s.readings, 0, i)
	// Every span while the history is younger than PeakSpan, then one a
	// historyStep.
	step := time.Duration(0)
	if len(s.history) > 0 && r.at.Sub(s.history[0].End) >= bottleneck.PeakSpan {
		step = historyStep
	}
	if ok && (len(s.history) == 0 || !span.End.Before(s.history[len(s.history)-1].End.Add(step))) {
		s.history = append(s.history, span)
		keep := r.at.Add(-bottleneck.Horizon)
		j := 0
		for j < len(s.history) && s.history[j].End.Before(keep) {
			j++
		}
		s.history = slices.Delete(s.history, 0, j)
	}
}

// Recommend returns the recommendation over the Sizer's history: the
// same for every reader until the next reading. Before Start has kept a
// span it answers over a span that ends now; until a second has passed
// since the first queue joined it knows nothing (its At is zero) but the
// queues' names and workers.
func (s *Sizer) Recommend() bottleneck.Recommendation {
	if s == nil {
		return bottleneck.Recommend(nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.readings) == 0 {
		return bottleneck.Recommend(nil)
	}
	history := s.history
	if len(history) == 0 {
		// Before the first span is kept: one that ends now.
		if span, ok := s.spanLocked(s.readLocked()); ok {
			history = []bottleneck.Span{span}
		}
	}
	r := bottleneck.Recommend(history)
	if len(history) == 0 {
		// Too soon for a span: the queues, with nothing known of them.
		for _, q := range s.queues {
			r.Queues = append(r.Queues, bottleneck.QueueRecommendation{Name: q.name, Workers: q.workers()})
		}
	}
	return r
}

// readLocked reads the queues and the process now.
func (s *Sizer) readLocked() sizerReading {
	at := s.now()
	r := sizerReading{at: at, queues: make(map[*sized]queueReading, len(s.queues))}
	if s.proc != nil {
		r.cpu = s.proc()
	} else {
		r.cpu = s.reader.Read()
	}
	r.cpu.SchedLatency = procstat.SchedHistogram{} // not kept: the spans need none
	r.server = s.server(time.Now())
	gone := false
	for _, q := range s.queues {
		if qr, ok := q.reading(at); ok {
			r.queues[q] = qr
		} else {
			gone = true
		}
	}
	if gone {
		// Dropped without Stop: forgotten, as Stop would have.
		s.queues = slices.DeleteFunc(s.queues, func(q *sized) bool { _, ok := r.queues[q]; return !ok })
	}
	r.objects, r.objectBytes = countObjects(s.Caches)
	return r
}

// server reads the API round trips of the programs of the Sizer's queues
// (their MeterProviders'): each program once, summed.
func (s *Sizer) server(now time.Time) bottleneck.APIServerCounters {
	sts := make([]*program.State, 0, len(s.queues))
	for _, q := range s.queues {
		sts = append(sts, q.b.program.Load())
	}
	return clientwork.Server(now, sts...)
}

// spanLocked returns the span that ends at reading r: from the last
// reading at or before PeakSpan before it, else the first, and false when
// that is less than minSpan before r.
func (s *Sizer) spanLocked(r sizerReading) (bottleneck.Span, bool) {
	// A reading within half an interval of the span's start starts it:
	// the ticker's readings come a little late, never early.
	from := r.at.Add(-bottleneck.PeakSpan).Add(s.interval() / 2)
	start := -1
	for i, x := range s.readings {
		if !x.at.Before(r.at) {
			break
		}
		// The last reading at or before the span's start, else the first.
		if start < 0 || !x.at.After(from) {
			start = i
		}
	}
	if start < 0 || r.at.Sub(s.readings[start].at) < minSpan {
		return bottleneck.Span{}, false
	}
	a := s.readings[start]
	span := bottleneck.Span{End: r.at, Memory: r.cpu.MemoryNeeded, Objects: r.objects, ObjectBytes: r.objectBytes}
	if r.cpu.HeapLive > 0 && r.cpu.HeapGoal > 0 {
		span.HeapGrowth = float64(r.cpu.HeapGoal) / float64(r.cpu.HeapLive)
	}
	for _, x := range s.readings[start:] {
		span.Memory = max(span.Memory, x.cpu.MemoryNeeded)
	}
	span.CPU = bottleneck.ProcessCPU(procstat.Between(a.cpu, r.cpu))
	var reconciles uint64
	for _, q := range s.queues {
		qa, okA := a.queues[q]
		qb, okB := r.queues[q]
		if !okA || !okB || q.standby.isStandby() {
			// Joined within the span, or standby: no window of it (a
			// standby queue's workers wait for the election, not for
			// work).
			continue
		}
		w := queueWindow(qa, qb, q.workers())
		w.Name = q.name
		if qa.client.Attempts < qb.client.Attempts {
			w.APIServer = bottleneck.APIServerBetween(a.server, r.server)
		}
		w.CPU = span.CPU
		reconciles += w.Reconciles
		span.Queues = append(span.Queues, w)
	}
	for i := range span.Queues {
		span.Queues[i].ProcessReconciles = reconciles
	}
	return span, true
}

// lastWindow returns the window of the queue of binding b between the
// Sizer's last two readings of it, with the process's CPU and API server
// figures, and its start; false when the Sizer does not size that queue
// or has not read it twice. It is the same for every reader until the
// next reading: an Inspector's class of the queue.
func (s *Sizer) lastWindow(b *binding) (bottleneck.Window, time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var q *sized
	for _, x := range s.queues {
		if x.b == b {
			q = x
		}
	}
	if q == nil {
		return bottleneck.Window{}, time.Time{}, false
	}
	for end := len(s.readings) - 1; end > 0; end-- {
		rb, okB := s.readings[end].queues[q]
		if !okB {
			continue
		}
		for start := end - 1; start >= 0; start-- {
			ra, okA := s.readings[start].queues[q]
			if !okA || rb.at.Sub(ra.at) < minSpan {
				continue // a window of less than a second is noise
			}
			// The workers the queue had over the window: the more of its
			// two ends, so that a pool that shrank in it does not make its
			// busy time read as more than its workers could do.
			w := queueWindow(ra, rb, max(ra.workers, rb.workers))
			w.Name = q.name
			a, r := &s.readings[start], &s.readings[end]
			w.CPU = bottleneck.ProcessCPU(procstat.Between(a.cpu, r.cpu))
			if w.Client.Used {
				w.APIServer = bottleneck.APIServerBetween(a.server, r.server)
			}
			return w, ra.at, true
		}
		return bottleneck.Window{}, time.Time{}, false
	}
	return bottleneck.Window{}, time.Time{}, false
}

// queueWindow is the window of one queue between two readings of it, with
// the worker count workers: the differences of its scheduler's and its
// client's counters.
func queueWindow(a, b queueReading, workers int) bottleneck.Window {
	w := bottleneck.Window{
		Duration: b.at.Sub(a.at), Workers: workers,
		Adds: b.q.Adds - a.q.Adds, Coalesced: b.q.Coalesced - a.q.Coalesced,
		Retries: b.q.Retries - a.q.Retries, DelayedAdds: b.q.DelayedAdds - a.q.DelayedAdds,
		Reconciles: b.q.Finished - a.q.Finished,
		Busy:       max(0, b.q.Busy-a.q.Busy),
	}
	if b.client.Attempts > a.client.Attempts {
		// The attempts that used an instrumented client and ended in the
		// window.
		w.Client = bottleneck.Client{
			Used: true, Work: b.client.Work - a.client.Work,
			RateLimiterWait: b.client.RateLimiterWait - a.client.RateLimiterWait,
			RequestTime:     b.client.RequestTime - a.client.RequestTime,
			RetryAfterWait:  b.client.RetryAfterWait - a.client.RetryAfterWait,
		}
	}
	return w
}

// countObjects returns the number of objects in caches and the mean heap
// size of one, from a sample of each cache's objects; a cache whose List
// panics is left out.
func countObjects(caches []Cache) (objects int, meanBytes float64) {
	var total float64
	for _, c := range caches {
		n, mean, ok := sizeCache(c)
		if !ok || n == 0 {
			continue
		}
		objects += n
		total += float64(n) * mean
	}
	if objects == 0 {
		return 0, 0
	}
	return objects, total / float64(objects)
}

// sizeCache returns the objects of c and the mean size of a sample of
// them, evenly spread over its list; false when c is nil or panics.
func sizeCache(c Cache) (n int, mean float64, ok bool) {
	if isNil(c) {
		return 0, 0, false
	}
	defer func() {
		if recover() != nil {
			n, mean, ok = 0, 0, false
		}
	}()
	list := c.List()
	n = len(list)
	if n == 0 {
		return 0, 0, true
	}
	k := min(n, objectSample)
	var sum uintptr
	for i := range k {
		sum += objsize.Of(list[i*n/k])
	}
	return n, float64(sum) / float64(k), true
}
