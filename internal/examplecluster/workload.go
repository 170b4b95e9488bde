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

	"github.com/otelqueue/otelqueue/traceparent"
)

// VersionKey is the data key the workload bumps on every write.
const VersionKey = "version"

// Workload writes the example's ConfigMaps through its Cluster's
// WorkloadClient: Seed creates them, Run updates them at -churn per second
// (and BurstSize at once every BurstEvery), each write a merge patch of
// the data version and the tracing.k8s.io/traceparent annotation in a
// "workload update" span, so that the reconcile the write causes links to
// it. It counts the writes it was asked for against those
// done, for the summary.
type Workload struct {
	Cluster    *Cluster
	Namespace  string
	Objects    int
	Churn      float64 // updates per second
	BurstEvery time.Duration
	BurstSize  int
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
		tracer = otel.Tracer("github.com/otelqueue/otelqueue/internal/examplecluster")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	start := time.Now()
	w.runID = strconv.FormatInt(start.UnixNano(), 36)
	w.start.Store(&start)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for issued := uint64(0); ; {
		elapsed := time.Since(start)
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
		case <-timer.C:
		}
	}
}

// due returns the number of writes requested in the first elapsed of a run.
func (w *Workload) due(elapsed time.Duration) uint64 {
	n := uint64(math.Floor(elapsed.Seconds() * w.Churn))
	if w.BurstEvery > 0 && w.BurstSize > 0 {
		n += uint64(elapsed/w.BurstEvery) * uint64(w.BurstSize)
	}
	return n
}

// next returns how long after elapsed the next write is due, and false when
// none ever is.
func (w *Workload) next(elapsed time.Duration) (time.Duration, bool) {
	wait, ok := time.Duration(math.MaxInt64), false
	if w.Churn > 0 {
		at := (math.Floor(elapsed.Seconds()*w.Churn) + 1) / w.Churn
		wait, ok = max(time.Duration(at*float64(time.Second))-elapsed, time.Microsecond), true
	}
	if w.BurstEvery > 0 && w.BurstSize > 0 {
		wait, ok = min(wait, (elapsed/w.BurstEvery+1)*w.BurstEvery-elapsed), true
	}
	return wait, ok
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
	began := time.Now()
	body, err := json.Marshal(patch)
	if err == nil {
		_, err = w.Cluster.WorkloadClient.CoreV1().ConfigMaps(w.Namespace).Patch(ctx, Name(i), types.MergePatchType, body, metav1.PatchOptions{})
	}
	w.busy.Add(int64(time.Since(began)))
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
		st.LimiterWaited, st.Rejected = c.WorkloadLimiter.Stats().Waited, c.rejected(WorkloadUserAgent)
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
	st.Requested = max(w.due(time.Since(*start)), st.Started)
	return st
}

// Counted returns the number of requested writes that count in the summary
// so far: those finished, and those overdue, i.e. due and unfinished beyond
// slack. A write due within the slack and not finished yet (a burst due at
// the end of an interval takes a moment) counts when it finishes: the
// writes requested and those done in an interval are then the same, and
// the done ones pass the requested ones only when overdue writes of earlier
// intervals are done.
func (s WorkloadStats) Counted(slack uint64) uint64 {
	if s.Requested > s.Finished+slack {
		return s.Requested - slack
	}
	return s.Finished
}

// slack is the backlog that is no lag: a burst just due and half a second
// of churn.
func (w *Workload) slack() uint64 {
	n := uint64(max(1, w.Churn/2))
	if w.BurstEvery > 0 {
		n += uint64(max(w.BurstSize, 0))
	}
	return n
}
