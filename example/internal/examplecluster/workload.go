package examplecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/otelqueue/otelqueue/traceparent"
)

// VersionKey is the data key the workload bumps on every write.
const VersionKey = "version"

// Workload writes the example's ConfigMaps through its Cluster's
// WorkloadClient: Seed creates them, Run updates them at -churn per second,
// changed during the run by -churn-schedule (and BurstSize at once every
// BurstEvery), each write a merge patch of the data version and the
// otelqueue.github.io/traceparent annotation in a "workload update" span, so
// that the reconcile the write causes links to it. It counts the writes it
// was asked for against those done, for the summary.
type Workload struct {
	Cluster   *Cluster
	Namespace string
	Objects   int
	// Churn is the updates per second from the start of Run; Schedule
	// changes it at times after the start (increasing, as -churn-schedule
	// checks them). The writes requested are those of each rate over its
	// stretch of the run, so a change keeps the count of those requested.
	Churn      float64
	Schedule   ChurnSchedule
	BurstEvery time.Duration
	BurstSize  int
	// Clock is the clock of Run's schedule and of the counts; nil means
	// the real one (tests step a fake one).
	Clock clock.WithTicker
	// Tracer makes the "workload update" spans; nil means the global
	// provider's tracer at the time of Run.
	Tracer trace.Tracer
	// Annotations are set on the objects Seed creates (with data version
	// "0").
	Annotations map[string]string

	start   atomic.Pointer[time.Time]
	started atomic.Uint64
	busy    atomic.Int64 // nanoseconds spent in writes
	version atomic.Uint64
	runID   string

	// The writes that returned, read together by Stats: a write counted
	// done is counted finished in the same reading.
	mu                     sync.Mutex
	done, failed, finished uint64 // finished: done, failed or cut short by the stop
}

// Name returns the name of the workload's i-th ConfigMap.
func Name(i int) string { return fmt.Sprintf("demo-%04d", i) }

// seedProgressEvery is how many creates on a real cluster pass between two
// progress lines.
const seedProgressEvery = 1000

// Seed makes sure the namespace holds the workload's ConfigMaps. In the
// embedded cluster they are put straight into the API server's object store
// (a cluster's existing state, not client writes: 20,000 take well under a
// second); on a real cluster they are created through the WorkloadClient,
// limited by -workload-qps, and those that exist are kept. Seed returns
// ctx's error as soon as ctx is done.
func (w *Workload) Seed(ctx context.Context) error {
	c := w.Cluster
	cms := c.WorkloadClient.CoreV1().ConfigMaps(w.Namespace)
	if !c.Embedded() && w.Objects >= seedProgressEvery {
		limit := "no client-side limit: -workload-qps 0"
		if qps, _ := c.WorkloadLimiter.Limits(); qps > 0 {
			limit = fmt.Sprintf("at most %g per second: -workload-qps", qps)
		}
		log.Printf("workload: creating %d ConfigMaps in %q (%s)", w.Objects, w.Namespace, limit)
	}
	if c.child != nil {
		// The embedded API server in its process: all at once.
		items := make([]corev1.ConfigMap, w.Objects)
		for i := range items {
			items[i] = corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: Name(i), Namespace: w.Namespace, Annotations: maps.Clone(w.Annotations)},
				Data:       map[string]string{VersionKey: "0"},
			}
		}
		return seed(ctx, &http.Client{Transport: c.transport}, c.child.url, items)
	}
	for i := range w.Objects {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("seeding stopped after %d of %d ConfigMaps: %w", i, w.Objects, err)
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: Name(i), Namespace: w.Namespace, Annotations: maps.Clone(w.Annotations)},
			Data:       map[string]string{VersionKey: "0"},
		}
		var err error
		if c.Embedded() {
			err = c.server.add(cm)
		} else {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if i > 0 && i%seedProgressEvery == 0 {
				log.Printf("workload: %d of %d ConfigMaps created", i, w.Objects)
			}
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			if ctx.Err() != nil {
				return fmt.Errorf("seeding stopped after %d of %d ConfigMaps: %w", i, w.Objects, ctx.Err())
			}
			if apierrors.IsNotFound(err) {
				// A create finds nothing only when the namespace is
				// missing; the embedded cluster never says so.
				return fmt.Errorf("namespace %q does not exist in the %s: create it (kubectl create namespace %s) or name another with -namespace: %w",
					w.Namespace, c.Where, w.Namespace, err)
			}
			return fmt.Errorf("creating ConfigMap %s/%s: %w", w.Namespace, cm.Name, err)
		}
	}
	return nil
}

// StopError is what an example returns for err, an error of Seed: nil,
// after saying so in the log, when ctx ended (a signal or -duration is a
// clean stop, even while seeding), err otherwise.
func StopError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		log.Printf("stopped: %v", err)
		return nil
	}
	return err
}

// Run writes at the requested rate until ctx is done. When the writes take
// longer than the rate allows (its client's limit, the API server's 429s,
// a slow API server), Run falls
// behind: it drops no requested write, so Stats shows the gap.
func (w *Workload) Run(ctx context.Context) {
	// The writes run without ctx's deadline: client-go's limiter refuses at
	// once a wait that would pass a deadline ("rate: Wait(n=1) would exceed
	// context deadline"), which is no error of the workload's. Cancellation
	// still stops them when ctx ends.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()

	tracer := w.Tracer
	if tracer == nil {
		tracer = otel.Tracer("github.com/otelqueue/otelqueue/example/internal/examplecluster")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	clk := w.clock()
	start := clk.Now()
	w.runID = strconv.FormatInt(start.UnixNano(), 36)
	w.start.Store(&start)
	timer := clk.NewTimer(time.Hour)
	defer timer.Stop()
	step := 0 // the next change of the schedule, to log
	for issued := uint64(0); ; {
		elapsed := clk.Since(start)
		for ; step < len(w.Schedule) && elapsed >= w.Schedule[step].At; step++ {
			log.Printf("workload: %g updates per second from %v on (-churn-schedule %v), %g before", w.Schedule[step].Churn, w.Schedule[step].At, w.Schedule, w.churnAt(w.Schedule[step].At-1))
		}
		if issued < w.due(elapsed) {
			issued++
			w.started.Store(issued)
			w.write(wctx, tracer, rng.IntN(w.Objects))
			if wctx.Err() != nil {
				return
			}
			continue
		}
		next, ok := w.next(elapsed)
		if !ok {
			<-wctx.Done()
			return
		}
		timer.Reset(next)
		select {
		case <-wctx.Done():
			return
		case <-timer.C():
		}
	}
}

// clock returns the workload's clock.
func (w *Workload) clock() clock.WithTicker {
	if w.Clock == nil {
		return clock.RealClock{}
	}
	return w.Clock
}

// stretch returns the stretch of the schedule elapsed falls in: its start,
// its rate, the churn writes requested before it (not rounded), and the
// start of the next one (ok false: none follows).
func (w *Workload) stretch(elapsed time.Duration) (from time.Duration, rate, before float64, until time.Duration, ok bool) {
	rate = w.Churn
	for _, s := range w.Schedule {
		if elapsed < s.At {
			return from, rate, before, s.At, true
		}
		before += rate * (s.At - from).Seconds()
		from, rate = s.At, s.Churn
	}
	return from, rate, before, 0, false
}

// churnAt returns the updates per second requested elapsed into a run.
func (w *Workload) churnAt(elapsed time.Duration) float64 {
	_, rate, _, _, _ := w.stretch(elapsed)
	return rate
}

// churned returns the churn writes requested in the first elapsed of a
// run, not rounded: each rate of the schedule over its stretch.
func (w *Workload) churned(elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	from, rate, before, _, _ := w.stretch(elapsed)
	return before + rate*(elapsed-from).Seconds()
}

// bursts returns the burst writes requested in the first elapsed of a run.
func (w *Workload) bursts(elapsed time.Duration) uint64 {
	if w.BurstEvery <= 0 || w.BurstSize <= 0 || elapsed < 0 {
		return 0
	}
	return uint64(elapsed/w.BurstEvery) * uint64(w.BurstSize)
}

// due returns the number of writes requested in the first elapsed of a run.
func (w *Workload) due(elapsed time.Duration) uint64 {
	return uint64(math.Floor(w.churned(elapsed))) + w.bursts(elapsed)
}

// next returns how long after elapsed the next write is due, or the rate
// changes, and false when neither ever happens.
func (w *Workload) next(elapsed time.Duration) (time.Duration, bool) {
	wait, ok := time.Duration(math.MaxInt64), false
	from, rate, before, until, changes := w.stretch(elapsed)
	if rate > 0 {
		// The time the requested count reaches its next whole number at
		// this rate.
		at := from.Seconds() + (math.Floor(before+rate*(elapsed-from).Seconds())+1-before)/rate
		wait, ok = max(time.Duration(at*float64(time.Second))-elapsed, time.Microsecond), true
	}
	if changes {
		wait, ok = min(wait, until-elapsed), true
	}
	if w.BurstEvery > 0 && w.BurstSize > 0 {
		wait, ok = min(wait, (elapsed/w.BurstEvery+1)*w.BurstEvery-elapsed), true
	}
	return wait, ok
}

// lagAfter is how long a write may be due and not started before the
// workload counts as behind (besides the burst due last): half a second of
// churn, at whatever rate the schedule asked for then.
const lagAfter = 500 * time.Millisecond

// settled returns the writes requested in the first elapsed of a run that
// are no longer within the slack: those due lagAfter before elapsed, the
// last burst excepted, and at most all but one of those due. It never
// decreases with elapsed, whatever the schedule: an interval's requested
// writes (WorkloadStats.Counted) are never negative.
func (w *Workload) settled(elapsed time.Duration) uint64 {
	n := uint64(math.Floor(w.churned(elapsed - lagAfter)))
	if b := w.bursts(elapsed); b > 0 {
		n += b - uint64(w.BurstSize)
	}
	if due := w.due(elapsed); n >= due {
		n = max(due, 1) - 1
	}
	return n
}

// write bumps the data version of ConfigMap i in one merge patch that also
// carries the traceparent of its "workload update" span.
func (w *Workload) write(ctx context.Context, tracer trace.Tracer, i int) {
	ctx, span := tracer.Start(ctx, "workload update", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	carrier := &corev1.ConfigMap{}
	traceparent.Inject(ctx, carrier) // the reconcile this write causes links here
	patch := map[string]any{"data": map[string]string{VersionKey: w.runID + "-" + strconv.FormatUint(w.version.Add(1), 10)}}
	if len(carrier.Annotations) > 0 {
		patch["metadata"] = map[string]any{"annotations": carrier.Annotations}
	}
	clk := w.clock()
	began := clk.Now()
	body, err := json.Marshal(patch)
	if err == nil {
		_, err = w.Cluster.WorkloadClient.CoreV1().ConfigMaps(w.Namespace).Patch(ctx, Name(i), types.MergePatchType, body, metav1.PatchOptions{})
	}
	w.busy.Add(int64(clk.Since(began)))
	// Stopping is no failure of the write.
	failed := err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled)
	w.mu.Lock()
	w.finished++
	if err == nil {
		w.done++
	}
	if failed {
		w.failed++
	}
	n := w.failed
	w.mu.Unlock()
	// Log the first failures and then one in a hundred: a missing
	// permission fails every write.
	if failed && (n <= 3 || n%100 == 0) {
		log.Printf("workload: write %d failed: %v", n, err)
	}
}

// WorkloadStats are the workload's counts since Run started.
type WorkloadStats struct {
	// Requested is the number of writes the flags asked for so far, Started
	// those begun.
	Requested, Started uint64
	// Settled is the number of the requested writes that are due beyond
	// the slack (a burst just due, half a second of churn at the rate of
	// then): the workload is behind when it has not started them all.
	Settled uint64
	// Churn is the rate the schedule asks for now, in updates per second.
	Churn float64
	// Done is the number of writes the API server accepted; Failed those it
	// refused (stopping excepted); Finished those that returned, whatever
	// the outcome.
	Done, Failed, Finished uint64
	// Busy is the time spent in writes, waiting for the client's limiter
	// and client-go's retries of 429s included.
	Busy time.Duration
	// LimiterWaited is the time the workload's requests waited for its own
	// client-side limiter (-workload-qps), since the cluster was connected.
	LimiterWaited time.Duration
	// Rejected is the number of the workload's requests the embedded API
	// server rejected with 429 (-server-qps) and client-go retried, since
	// the cluster was connected (0 on a real cluster).
	Rejected uint64
}

// Stats returns the workload's counts (those of the writes zero before
// Run).
func (w *Workload) Stats() WorkloadStats {
	var st WorkloadStats
	if c := w.Cluster; c != nil {
		st.LimiterWaited, st.Rejected = c.WorkloadLimiter.Stats().Waited, c.workloadRejected.Load()
	}
	start := w.start.Load()
	if start == nil {
		return st
	}
	w.mu.Lock()
	st.Done, st.Failed, st.Finished = w.done, w.failed, w.finished
	w.mu.Unlock()
	// Read after them: a write is started before it finishes.
	st.Started, st.Busy = w.started.Load(), time.Duration(w.busy.Load())
	elapsed := w.clock().Since(*start)
	st.Requested = max(w.due(elapsed), st.Started)
	st.Settled, st.Churn = w.settled(elapsed), w.churnAt(elapsed)
	return st
}

// Slack is the backlog that is no lag: the writes requested and not yet
// settled (a burst just due, half a second of churn).
func (s WorkloadStats) Slack() uint64 {
	return s.Requested - min(s.Settled, s.Requested)
}

// Counted returns the number of requested writes that count in the summary
// so far: those finished, and those overdue, i.e. settled and unfinished. A
// write due within the slack and not finished yet (a burst due at the end
// of an interval takes a moment) counts when it finishes: the writes
// requested and those done in an interval are then the same, and the done
// ones pass the requested ones only when overdue writes of earlier
// intervals are done. It never decreases from one reading to the next, the
// schedule's changes of rate included.
func (s WorkloadStats) Counted() uint64 {
	return max(s.Finished, s.Settled)
}
