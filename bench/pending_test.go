package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelqueue/otelqueue/scheduler"
)

// pendingSizes are the delay-heap sizes of BenchmarkPending.
var pendingSizes = []struct {
	name string
	n    int
}{
	{"1k", 1_000},
	{"1M", 1_000_000},
}

// BenchmarkPending measures a queue holding N keys pending far in the future,
// each added with a valid span context.
//
// variant=scheduler: one op moves one more key through the delay heap of N
// keys: AddAfterContext far in the future (within the pending keys' range,
// so it lands inside the heap), then AddContext, which makes it ready at once
// and takes it out of the heap, then Get and Done, which forget it. N stays
// constant; each op pays one heap insert and one heap removal at depth
// log2(N) and one map insert and delete among N keys.
//
// variant=clientgo: client-go cannot take a key out of its delay heap before
// it falls due, so there is no equivalent op that keeps N constant; its timed
// loop only calls Len and ns/op is suppressed. It is there for B/pendingkey.
//
// Both report B/pendingkey: the live heap retained per pending key (GC,
// HeapAlloc before and after adding the N keys, difference / N). The keys
// themselves are made beforehand and are not counted, nor are the span
// contexts' context.Contexts, which the callers drop. client-go hands each
// AddAfter to its waiting-loop goroutine through a channel; to count only
// once every key is in its heap, the fill ends with a sentinel key added
// with a 1 µs delay and waits until Get returns it: the channel is FIFO and
// the loop inserts each entry before taking the next, so when the sentinel
// comes out every earlier key is in the heap.
func BenchmarkPending(b *testing.B) {
	for _, size := range pendingSizes {
		b.Run("variant=clientgo/pending="+size.name, func(b *testing.B) {
			p := newPendingClientGo(size.n)
			defer p.q.ShutDown()
			perKey := p.fill()
			b.ReportAllocs()
			for b.Loop() {
				_ = p.q.Len()
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(perKey, "B/pendingkey")
		})
		for _, v := range []struct {
			name  string
			plain bool
		}{{"scheduler", false}, {"scheduler-nospan", true}} {
			b.Run("variant="+v.name+"/pending="+size.name, func(b *testing.B) {
				p := newPendingScheduler(size.n)
				p.plain = v.plain
				defer p.s.ShutDown()
				perKey := p.fill()
				b.ReportAllocs()
				cpu := startCPU()
				i := 0
				for b.Loop() {
					p.op(i)
					i++
				}
				cpu.report(b)
				b.ReportMetric(perKey, "B/pendingkey")
				if got := p.s.Stats().Delayed; got != size.n {
					b.Fatalf("%d keys delayed after the ops, want %d", got, size.n)
				}
			})
		}
	}
}

// pendingScheduler is BenchmarkPending's scheduler side.
type pendingScheduler struct {
	s     *scheduler.Scheduler[string]
	n     int
	keys  []string
	extra []string          // keys moved through the heap by op
	ctxs  []context.Context // their enqueue contexts
	plain bool              // fill adds the n keys with no span context
}

func newPendingScheduler(n int) *pendingScheduler {
	extra, ctxs := extraKeys()
	p := &pendingScheduler{s: scheduler.New(scheduler.Config[string]{}), n: n, keys: benchKeys(n), extra: extra, ctxs: ctxs}
	// Start the delay loop (its goroutine and timer) before measuring.
	p.op(0)
	return p
}

// fill adds the n pending keys, each with its own span context (none when
// p.plain: plain AddAfter), and returns the live heap retained per key.
func (p *pendingScheduler) fill() float64 {
	return retainedPerKey(p.n, func() {
		bg := context.Background()
		for i, k := range p.keys {
			if p.plain {
				p.s.AddAfter(k, pendingDelay(i, p.n))
				continue
			}
			p.s.AddAfterContext(trace.ContextWithSpanContext(bg, spanContext(i)), k, pendingDelay(i, p.n))
		}
	})
}

// op moves one extra key through the delay heap and out of the queue.
func (p *pendingScheduler) op(i int) {
	j := i % len(p.extra)
	ctx, key := p.ctxs[j], p.extra[j]
	p.s.AddAfterContext(ctx, key, pendingDelay(i, p.n))
	p.s.AddContext(ctx, key)
	k, _ := p.s.Get()
	p.s.Done(k)
}

// pendingClientGo is BenchmarkPending's client-go side.
type pendingClientGo struct {
	q    queue
	n    int
	keys []string
}

// pendingSentinel is the key that proves client-go's waiting loop has taken
// every earlier AddAfter into its heap.
const pendingSentinel = "default/sentinel"

func newPendingClientGo(n int) *pendingClientGo {
	p := &pendingClientGo{q: newClientGoBare(""), n: n, keys: benchKeys(n)}
	// Let the waiting loop make its timer and heap before measuring.
	p.sync()
	return p
}

func (p *pendingClientGo) fill() float64 {
	return retainedPerKey(p.n, func() {
		for i, k := range p.keys {
			p.q.AddAfter(k, pendingDelay(i, p.n))
		}
		p.sync()
	})
}

// sync returns once client-go's waiting loop has taken every AddAfter made
// before it into its heap.
func (p *pendingClientGo) sync() {
	p.q.AddAfter(pendingSentinel, time.Microsecond)
	k, _ := p.q.Get()
	if k != pendingSentinel {
		panic(fmt.Sprintf("bench: client-go handed out %q before the sentinel", k))
	}
	p.q.Done(k)
}

// pendingDelay spreads the pending keys deterministically over the hour that
// starts an hour from now (7919 is prime, so i -> i*7919 mod n permutes the
// slots whenever n is not a multiple of it).
func pendingDelay(i, n int) time.Duration {
	return time.Hour + time.Duration((i*7919)%n)*(time.Hour/time.Duration(n))
}

// spanContext returns a distinct valid, sampled span context for i.
func spanContext(i int) trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	tid[0] = 0x42
	binary.BigEndian.PutUint64(tid[8:], uint64(i)+1)
	binary.BigEndian.PutUint64(sid[:], uint64(i)+1)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

// extraKeys returns the keys BenchmarkPending moves through the heap and
// their enqueue contexts, made once.
var extraKeys = sync.OnceValues(func() ([]string, []context.Context) {
	const n = 1024
	keys := make([]string, n)
	ctxs := make([]context.Context, n)
	for i := range n {
		keys[i] = fmt.Sprintf("default/extra-%d", i)
		ctxs[i] = trace.ContextWithSpanContext(context.Background(), spanContext(1<<40+i))
	}
	return keys, ctxs
})

// retainedPerKey returns the growth of the live heap caused by fill, divided
// by n.
func retainedPerKey(n int, fill func()) float64 {
	before := liveHeap()
	fill()
	after := liveHeap()
	return float64(int64(after)-int64(before)) / float64(n)
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
