package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelqueue/otelqueue/shard"
)

// TestShardCountChange changes the shard count of the app's fleet on a
// running workload (600 ConfigMaps, 20 changes a second throughout), in the
// two orders a rollout can take, and measures how long objects have two
// owners or none:
//
//   - 2 → 3, new fleet first: three replicas of total 3 start beside the
//     two of total 2, which stop once the new ones have synced. Every
//     object has an owner throughout; from the new fleet's sync to the old
//     one's stop each has two (WorkqueueShardOverlap's expression holds,
//     and keys are reconciled by both fleets then, never after).
//   - 3 → 2, old fleet first: the three stop, then two of total 2 start.
//     From the stop to the new fleet's sync no object has an owner
//     (WorkqueueShardUncovered's expression holds) and the changes made
//     then wait for the new fleet.
//
// An owner's time runs from its "running" line (its informers synced) to
// its SIGTERM.
func TestShardCountChange(t *testing.T) {
	p := shardedPlane(t)
	kubeconfig := p.kubeconfig(t, "otelqueue-shard-change", "otelqueue:shard-change")
	prom := startShardsPrometheus(t)
	ex := exampleNamed(t, "app")
	cs := fastClient(t, p)
	ns := p.namespace(t, "otelqueue-shard-change")
	cms := createConfigMaps(t, cs, ns, shardsObjects)

	var (
		mu      sync.Mutex
		members []*member
	)
	start := func(total int, tag string) []*member {
		var ms []*member
		for i := range total {
			s, err := shard.New(i, total, "uid")
			if err != nil {
				t.Fatal(err)
			}
			r := startExample(t, ex, fmt.Sprintf("%s-%d-of-%d", tag, i, total), "-kubeconfig", kubeconfig, "-namespace", ns,
				"-generate=false", "-workers", "4", "-shards", strconv.Itoa(total), "-shard", strconv.Itoa(i))
			ms = append(ms, &member{r: r, s: s})
		}
		for _, m := range ms {
			if _, ok := m.r.waitLine(`controller "configmaps" running`, time.Minute); !ok {
				t.Fatalf("%s did not sync within a minute", m.r.where)
			}
			m.from = time.Now()
		}
		var targets []string
		mu.Lock()
		members = append(members, ms...)
		for _, m := range members {
			if m.to.IsZero() {
				targets = append(targets, strings.TrimSuffix(strings.TrimPrefix(m.r.metrics, "http://"), "/metrics"))
			}
		}
		mu.Unlock()
		prom.scrape(t, targets)
		return ms
	}
	stop := func(ms []*member) {
		var wg sync.WaitGroup
		for _, m := range ms {
			m.to = time.Now()
			wg.Go(func() {
				if err := m.r.terminate(); err != nil {
					t.Errorf("%s: %v", m.r.where, err)
				}
			})
		}
		wg.Wait()
	}

	// The workload, throughout.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { writeConfigMapsUntil(ctx, t, cs, keysOf(cms), 20, 7) })
	defer func() { cancel(); wg.Wait() }()

	two := start(2, "a")
	time.Sleep(10 * time.Second)

	// 2 → 3, the new fleet first.
	three := start(3, "b")
	prom.waitValue(t, `fleet:workqueue_shard_share:sum > 1.000001`, func(v float64) bool { return v > 1.4 }, time.Minute)
	stop(two)
	overlapFrom, overlapTo := ownedSince(three), two[0].to
	prom.waitValue(t, `fleet:workqueue_shard_share:sum`, func(v float64) bool { return v > 0.999999 && v < 1.000001 }, time.Minute)
	time.Sleep(10 * time.Second)

	// 3 → 2, the old fleet first.
	stop(three)
	gapFrom := three[0].to
	prom.waitValue(t, `fleet:workqueue_shard_covered:ratio < 0.999999 or absent(fleet:workqueue_shard_covered:ratio)`, func(float64) bool { return true }, time.Minute)
	writtenInGap := time.Now()
	bumped := keysOf(cms)[:20]
	bump(t, cs, bumped, "in-the-gap")
	time.Sleep(5 * time.Second)
	if stale := staleKeys(t, cs, ns); len(stale) < len(bumped) {
		t.Errorf("%d keys stale with no fleet running, want at least the %d changed in the gap", len(stale), len(bumped))
	}
	back := start(2, "c")
	gapTo := ownedSince(back)
	cancel()
	wg.Wait()
	conv := waitConverged(p, ns, shardsConverge)
	if conv.err != nil || conv.done != conv.total {
		t.Fatalf("%d of %d converged after the changes; not: %s", conv.done, conv.total, strings.Join(conv.stale, ", "))
	}
	gapWait := time.Since(writtenInGap) - conv.after // an upper bound of when the gap's changes were acted on
	stop(back)

	// Who reconciled what, and when.
	var both, outside int
	type rec struct {
		old bool
		at  time.Time
	}
	byKey := map[string][]rec{}
	for _, m := range append(two, three...) {
		old := m.s.Share() == 0.5
		for _, s := range m.r.spans() {
			if k := attr(s.Attributes, "workqueue.key"); k != "" {
				byKey[k] = append(byKey[k], rec{old, s.StartTime})
			}
		}
	}
	for _, rs := range byKey {
		var oldIn, newIn bool
		for _, r := range rs {
			if r.at.After(overlapFrom) && r.at.Before(overlapTo.Add(time.Second)) {
				oldIn, newIn = oldIn || r.old, newIn || !r.old
			}
			if r.old && r.at.After(overlapTo.Add(5*time.Second)) {
				outside++
			}
		}
		if oldIn && newIn {
			both++
		}
	}
	if outside > 0 {
		t.Errorf("%d reconciles by the old fleet after it stopped", outside)
	}
	overlap, gap := overlapTo.Sub(overlapFrom), gapTo.Sub(gapFrom)
	if overlap <= 0 || overlap > time.Minute {
		t.Errorf("2 → 3, new fleet first: two owners for %v, want a positive time under a minute", overlap)
	}
	note := fmt.Sprintf("app, the shard count changed on a running fleet (600 ConfigMaps, 20 changes/s) on kube-apiserver %s: "+
		"2 → 3 with the new fleet first: no object without an owner, every object with two for %v (sync of the new fleet to the old one's stop), %d keys reconciled by both fleets in that time; "+
		"3 → 2 with the old fleet first: no owner for %v (stop to the new fleet's sync), the changes made then acted on within %v of their write",
		p.version, overlap.Round(100*time.Millisecond), both, gap.Round(100*time.Millisecond), gapWait.Round(100*time.Millisecond))
	t.Log(note)
	report.addNote(note)
}

// member is a replica of TestShardCountChange: an owner of its shard's
// objects from its sync to its SIGTERM.
type member struct {
	r        *exampleRun
	s        *shard.Shard
	from, to time.Time
}

// ownedSince returns the latest time at which one of ms became an owner.
func ownedSince(ms []*member) time.Time {
	var t time.Time
	for _, m := range ms {
		if m.from.After(t) {
			t = m.from
		}
	}
	return t
}
