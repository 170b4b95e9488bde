package controllerruntime_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/ptr"
)

// FuzzCRCompat runs the same random calls on controller-runtime's priority
// queue and on ours, in one synctest bubble, and compares after each call
// what both show: what a Get returned (or that it blocks), Len(), the depth
// by priority and the rate limiter's NumRequeues of every key. The seeds are
// the TestCRCompat scenarios.
func FuzzCRCompat(f *testing.F) {
	for _, steps := range crScenarios {
		f.Add(encodeOps(f, opsOf(steps)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := decodeOps(data)
		synctest.Test(t, func(t *testing.T) {
			cr := newSide(t, crQueueImpls[0], "crcompat-fuzz")
			ours := newSide(t, crQueueImpls[1], "crcompat-fuzz")
			synctest.Wait()
			var log []string
			for _, o := range ops {
				switch o.kind {
				case opGet:
					// One Get at a time, and only when controller-runtime's
					// queue counts a key (its Get may still block: the
					// key may be in flight).
					if cr.pending || ours.pending || cr.q.Len() == 0 {
						continue
					}
				case opDone:
					inflight := slices.Sorted(maps.Keys(cr.inflight))
					if len(inflight) == 0 {
						continue
					}
					if !cr.inflight[o.keys[0]] {
						o.keys = []string{inflight[slices.Index(crKeys, o.keys[0])%len(inflight)]}
					}
				}
				log = append(log, o.String())
				cr.apply(o)
				ours.apply(o)
				if o.kind == opSleep {
					time.Sleep(o.after)
				}
				synctest.Wait()
				if diff := compareSides(cr, ours); diff != "" {
					t.Fatalf("after call %d, %s, of:\n\t%s\n%s", len(log)-1, o, strings.Join(log, "\n\t"), diff)
				}
			}
		})
	})
}

// compareSides returns how b differs from a, "" if in nothing.
func compareSides(a, b *side) string {
	var diffs []string
	differ := func(what string, va, vb any) {
		diffs = append(diffs, fmt.Sprintf("%s: %s %v, %s %v", what, a.name, va, b.name, vb))
	}
	ga, gb := a.returned(), b.returned()
	switch {
	case ga == nil && gb != nil:
		differ("Get", "blocks", *gb)
	case ga != nil && gb == nil:
		differ("Get", *ga, "blocks")
	case ga != nil && *ga != *gb:
		differ("Get", *ga, *gb)
	}
	if la, lb := a.q.Len(), b.q.Len(); la != lb {
		differ("Len()", la, lb)
	}
	if da, db := a.depth(), b.depth(); !maps.Equal(da, db) {
		differ("depth by priority", da, db)
	}
	for _, k := range crKeys {
		if na, nb := a.q.NumRequeues(k), b.q.NumRequeues(k); na != nb {
			differ("NumRequeues("+k+")", na, nb)
		}
	}
	return strings.Join(diffs, "\n")
}

// The fuzz input is a list of calls, each a byte b0 then its arguments:
// b0&15 (mod numOpKinds) is the opKind and b0>>4 an argument h.
//
//	AddWithOpts     b1 = priority | after<<3 | rateLimited<<6, b2 = n-1, n keys
//	Add, AddRateLimited, Forget, Done   key h (Done: of a key in flight)
//	AddAfter        key h, b1 = after
//	Sleep           sleep h
//	Get, ShutDown   -
//
// where keys, priorities, afters and sleeps index the tables below.
var (
	crKeys       = []string{"a", "b", "c", "d", "e"}
	crPriorities = []*int{nil, ptr.To(1), ptr.To(-1), ptr.To(10), ptr.To(math.MaxInt32), ptr.To(math.MaxInt32 + 1), ptr.To(1 << 40), ptr.To(math.MinInt32 - 1)}
	crAfters     = []time.Duration{0, -1 * ms, 1 * ms, 5 * ms, 10 * ms, 20 * ms, 50 * ms, 100 * ms}
	crSleeps     = []time.Duration{1 * ms, 2 * ms, 4 * ms, 5 * ms, 9 * ms, 10 * ms, 50 * ms, time.Second}
)

// maxFuzzOps bounds the calls of one fuzz input.
const maxFuzzOps = 48

func decodeOps(data []byte) []op {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	key := func(b byte) string { return crKeys[int(b)%len(crKeys)] }
	var ops []op
	for len(data) > 0 && len(ops) < maxFuzzOps {
		b0 := next()
		o := op{kind: opKind(b0&15) % numOpKinds}
		h := b0 >> 4
		switch o.kind {
		case opAddWithOpts:
			b1 := next()
			o.priority = crPriorities[b1&7]
			o.after = crAfters[b1>>3&7]
			o.rateLimited = b1>>6&1 == 1
			n := 1 + int(next())%len(crKeys)
			for range n {
				o.keys = append(o.keys, key(next()))
			}
		case opAdd, opAddRateLimited, opForget, opDone:
			o.keys = []string{key(h)}
		case opAddAfter:
			o.keys = []string{key(h)}
			o.after = crAfters[next()&7]
		case opSleep:
			o.after = crSleeps[h&7]
		}
		ops = append(ops, o)
	}
	return ops
}

// encodeOps is the fuzz input of ops; their values must be in the tables
// (a sleep may be a sum of the table's).
func encodeOps(tb testing.TB, ops []op) []byte {
	index := func(what string, i int) byte {
		if i < 0 {
			tb.Fatalf("encodeOps: %s is not in the fuzz tables", what)
		}
		return byte(i)
	}
	keyIdx := func(k string) byte { return index("key "+k, slices.Index(crKeys, k)) }
	var b []byte
	for _, o := range ops {
		switch o.kind {
		case opAddWithOpts:
			prio := index(fmt.Sprint("priority ", o.priority), slices.IndexFunc(crPriorities, func(p *int) bool {
				return p == nil && o.priority == nil || p != nil && o.priority != nil && *p == *o.priority
			}))
			after := index("After "+o.after.String(), slices.Index(crAfters, o.after))
			var rl byte
			if o.rateLimited {
				rl = 1
			}
			if len(o.keys) == 0 || len(o.keys) > len(crKeys) {
				tb.Fatalf("encodeOps: %v has %d keys", o, len(o.keys))
			}
			b = append(b, byte(o.kind), prio|after<<3|rl<<6, byte(len(o.keys)-1))
			for _, k := range o.keys {
				b = append(b, keyIdx(k))
			}
		case opAdd, opAddRateLimited, opForget, opDone:
			b = append(b, byte(o.kind)|keyIdx(o.keys[0])<<4)
		case opAddAfter:
			b = append(b, byte(o.kind)|keyIdx(o.keys[0])<<4, index("After "+o.after.String(), slices.Index(crAfters, o.after)))
		case opSleep:
			for d := o.after; d > 0; {
				i := len(crSleeps) - 1
				for i >= 0 && crSleeps[i] > d {
					i--
				}
				if i < 0 {
					tb.Fatalf("encodeOps: %v is no sum of the fuzz sleeps", o)
				}
				b = append(b, byte(o.kind)|byte(i)<<4)
				d -= crSleeps[i]
			}
		default:
			b = append(b, byte(o.kind))
		}
	}
	return b
}

func opsOf(steps []step) []op {
	ops := make([]op, len(steps))
	for i, st := range steps {
		ops[i] = st.op
	}
	return ops
}

// TestCRCompatFuzzSeeds: each scenario encodes to a fuzz input that
// decodes to its calls, so the seeds of FuzzCRCompat are the scenarios.
func TestCRCompatFuzzSeeds(t *testing.T) {
	for i, steps := range crScenarios {
		want := opsOf(steps)
		if len(want) > maxFuzzOps {
			t.Errorf("scenario %d: %d calls, more than a fuzz input runs (%d)", i, len(want), maxFuzzOps)
		}
		got := decodeOps(encodeOps(t, want))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("scenario %d decodes to\n\t%v\nwant\n\t%v", i, got, want)
		}
	}
}
