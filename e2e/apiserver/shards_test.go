package apiserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/otelqueue/otelqueue/e2e"
	"github.com/otelqueue/otelqueue/shard"
)

// The sharded fleet of TestShards: three replicas of an example over 600
// ConfigMaps, and a writer of 30 changes a second for 30 s.
const (
	shardsObjects  = 600
	shardsTotal    = 3
	shardsRate     = 30
	shardsWriteFor = 30 * time.Second
	shardsConverge = 90 * time.Second
	// shardsSigmas bounds a shard's count of objects or writes: a uniform
	// hash puts Binomial(n, 1/3) of the objects in each, writes to keys
	// drawn uniformly put Binomial(writes, owned/objects) in each, and 5
	// standard deviations miss one run in millions.
	shardsSigmas = 5
)

// shardedOnce is the control plane with the ShardedListAndWatch gate,
// started by the first test that needs it and stopped with the others at
// the end (stopPlanes).
var shardedOnce struct {
	sync.Once
	p   *plane
	err error
}

func shardedPlane(t *testing.T) *plane {
	t.Helper()
	shardedOnce.Do(func() {
		shardedOnce.p, shardedOnce.err = startPlane("sharded", planeAssets, map[string]string{"feature-gates": "ShardedListAndWatch=true"})
	})
	if shardedOnce.err != nil {
		t.Fatal(shardedOnce.err)
	}
	return shardedOnce.p
}

// fastClient is an admin clientset of p without a client-side limit, for
// the tests' own set-up and writes.
func fastClient(t *testing.T, p *plane) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(p.admin)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestShards runs each example as three shards by UID (-shards 3 -shard I)
// on kube-apiserver with the sharded list and watch, over 600 ConfigMaps
// the test creates (no replica generates: they share one set) and changes
// 30 times a second, with a Prometheus that scrapes the replicas and
// evaluates rules.yml (windows of 20 s). It checks what sharding promises:
// every object reconciled by exactly one replica, the owner the server's
// hash names (the keys of each replica's spans, whose resource carries its
// shard); every object converged to its last version; each shard's objects
// and writes within the spread of a uniform hash; the fleet's rules see the
// whole hash space covered. Then one replica stops: the uncovered-range
// alert fires on the fleet's series, the objects of its range wait while
// the others' converge, and once it is back they converge too. For the
// client-go example it also measures what a replica receives (objects in
// its informer's cache; bytes and watch events from the API server,
// through counting proxies) against one unsharded replica and
// against a shard that filters on the client (a server without the gate),
// and runs a split by namespace with one big namespace, which the rules
// read as a hot shard.
func TestShards(t *testing.T) {
	p := shardedPlane(t)
	kubeconfig := p.kubeconfig(t, "otelqueue-shards", "otelqueue:shards")
	prom := startShardsPrometheus(t)
	for _, name := range []string{"app", "controller-runtime"} {
		t.Run(name, func(t *testing.T) {
			ex := exampleNamed(t, name)
			f := runShards(t, p, prom, ex, kubeconfig)
			if name == "app" {
				shardsCost(t, p, ex, kubeconfig, f)
			}
		})
	}
	t.Run("hot namespace", func(t *testing.T) { hotNamespace(t, p, prom, exampleNamed(t, "app"), kubeconfig) })
}

// fleet is one run of the shards: each replica by ordinal (restarted ones
// after the first), and what each received.
type fleet struct {
	ns      string
	cms     map[string]types.UID // by namespace/name
	shards  []*shard.Shard
	runs    [][]*exampleRun
	objects []float64  // otelqueue_cache_objects of each replica, before the stop
	read    []received // what each replica received from the API server, at the same time
	proxies []func() received
	adds    []float64
	writes  []int // the writer's changes to each shard's objects
}

func runShards(t *testing.T, p *plane, prom *shardsProm, ex example, kubeconfig string) *fleet {
	cs := fastClient(t, p)
	ns := p.namespace(t, "otelqueue-shards")
	f := &fleet{ns: ns, cms: createConfigMaps(t, cs, ns, shardsObjects)}
	kcs := make([]string, shardsTotal)
	for i := range kcs {
		var read func() received
		kcs[i], read = countingProxy(t, kubeconfig)
		f.proxies = append(f.proxies, read)
	}
	args := func(i int) []string {
		return []string{"-kubeconfig", kcs[i], "-namespace", ns, "-generate=false", "-workers", "4",
			"-shards", strconv.Itoa(shardsTotal), "-shard", strconv.Itoa(i)}
	}
	for i := range shardsTotal {
		s, err := shard.New(i, shardsTotal, "uid")
		if err != nil {
			t.Fatal(err)
		}
		f.shards = append(f.shards, s)
		f.runs = append(f.runs, []*exampleRun{startExample(t, ex, fmt.Sprintf("shard-%d", i), args(i)...)})
	}
	var targets []string
	for i, rs := range f.runs {
		if l, ok := rs[0].waitLine(fmt.Sprintf("shard %d of %d by uid: the ", i, shardsTotal), time.Minute); !ok || !strings.Contains(l, "filters") {
			t.Fatalf("shard %d: no line that the server filters within a minute (%q)", i, l)
		}
		if len(rs[0].waitSummaries(1, time.Minute)) == 0 {
			t.Fatalf("shard %d: no summary line within a minute", i)
		}
		targets = append(targets, strings.TrimSuffix(strings.TrimPrefix(rs[0].metrics, "http://"), "/metrics"))
	}
	prom.scrape(t, targets)

	f.writes = f.ownedBy(writeConfigMaps(t, cs, ns, keysOf(f.cms), shardsRate, shardsWriteFor, 1))
	conv := waitConverged(p, ns, shardsConverge)
	if conv.err != nil || conv.total != shardsObjects || conv.done != conv.total {
		t.Fatalf("%d of %d ConfigMaps converged %v after the writes (List: %v); not: %s", conv.done, conv.total, conv.after.Round(time.Millisecond), conv.err, strings.Join(conv.stale, ", "))
	}
	for i, rs := range f.runs {
		sc := rs[0].scrape()
		f.objects = append(f.objects, sc.sum("otelqueue_cache_objects", nil))
		f.adds = append(f.adds, sc.sum("workqueue_adds_total", map[string]string{"name": queueName}))
		f.read = append(f.read, f.proxies[i]())
		if share := sc.matching("workqueue_shard_share", map[string]string{"workqueue_shard_ordinal": strconv.Itoa(i), "workqueue_shard_total": strconv.Itoa(shardsTotal)}); len(share) != 1 {
			t.Errorf("shard %d: workqueue_shard_share %+v, want one series of its ordinal", i, share)
		}
	}

	// The spread of a uniform hash.
	owned := f.ownedBy(keysOf(f.cms))
	for i := range shardsTotal {
		if f.objects[i] != float64(owned[i]) {
			t.Errorf("shard %d caches %v objects (otelqueue_cache_objects), owns %v: the server sends it its shard only, and the Sizer counts them", i, f.objects[i], owned[i])
		}
		checkBinomial(t, fmt.Sprintf("shard %d's objects", i), owned[i], shardsObjects, 1.0/shardsTotal)
		// Writes go to keys drawn uniformly: given the objects a shard
		// owns, its writes follow its share of them, not 1/3 (a shard
		// that owns 227 of 600 gets 38% of the writes).
		checkBinomial(t, fmt.Sprintf("shard %d's writes", i), f.writes[i], sum(f.writes), float64(owned[i])/shardsObjects)
	}

	// The fleet's rules: the whole space covered, then shard 2 stops.
	prom.waitValue(t, `fleet:workqueue_shard_covered:ratio`, func(v float64) bool { return math.Abs(v-1) < 1e-9 }, time.Minute)
	checkFleetPanels(t, prom)
	stopped := time.Now()
	f.runs[2][0].stop()
	prom.waitValue(t, `fleet:workqueue_shard_covered:ratio < 0.999999`, func(v float64) bool { return math.Abs(v-2.0/3) < 1e-9 }, time.Minute)
	uncovered := time.Since(stopped)
	prom.waitValue(t, `ALERTS{alertname="WorkqueueShardUncovered",alertstate="firing"}`, func(v float64) bool { return v == 1 }, time.Minute)

	// Changes in its range wait; the others converge.
	byShard := map[int][]string{}
	for _, k := range keysOf(f.cms) {
		i := f.owner(k)
		if len(byShard[i]) < 10 {
			byShard[i] = append(byShard[i], k)
		}
	}
	for i := range shardsTotal {
		bump(t, cs, byShard[i], "during-the-stop")
	}
	time.Sleep(10 * time.Second)
	stale := staleKeys(t, cs, ns)
	for i, keys := range byShard {
		for _, k := range keys {
			if stale[k] != (i == 2) {
				t.Errorf("%s of shard %d: stale %v with shard 2 stopped, want %v", k, i, stale[k], i == 2)
			}
		}
	}
	restarted := time.Now()
	f.runs[2] = append(f.runs[2], startExample(t, ex, "shard-2-again", args(2)...))
	conv = waitConverged(p, ns, shardsConverge)
	if conv.err != nil || conv.done != conv.total {
		t.Fatalf("after shard 2's restart, %d of %d ConfigMaps converged in %v; not: %s", conv.done, conv.total, conv.after.Round(time.Millisecond), strings.Join(conv.stale, ", "))
	}
	back := time.Since(restarted)

	// Every reconciled key by exactly one shard, its owner's.
	for _, rs := range f.runs {
		for _, r := range rs {
			if r.cmd.ProcessState == nil {
				r.stop()
			}
		}
	}
	by := map[string]map[int]int{} // key -> ordinal -> reconciles
	for i, rs := range f.runs {
		for _, r := range rs {
			for _, s := range r.spans() {
				if got, ok := attrText(s.Resource, "workqueue.shard.ordinal"); !ok || got != strconv.Itoa(i) {
					t.Fatalf("shard %d: a span's resource has workqueue.shard.ordinal %q (%v)", i, got, ok)
				}
				if k := attr(s.Attributes, "workqueue.key"); k != "" {
					if by[k] == nil {
						by[k] = map[int]int{}
					}
					by[k][i]++
				}
			}
		}
	}
	doubles, wrong := 0, 0
	for k, shards := range by {
		if len(shards) > 1 {
			if doubles++; doubles <= 5 {
				t.Errorf("%s reconciled by shards %v", k, shards)
			}
		}
		for i := range shards {
			if i != f.owner(k) {
				if wrong++; wrong <= 5 {
					t.Errorf("%s reconciled by shard %d, its owner is shard %d", k, i, f.owner(k))
				}
			}
		}
	}
	if len(by) != shardsObjects {
		t.Errorf("%d keys reconciled, want every one of the %d ConfigMaps", len(by), shardsObjects)
	}
	note := fmt.Sprintf("%s, 3 shards by UID on kube-apiserver %s with ShardedListAndWatch, %d ConfigMaps, %d changes/s for %v: objects per shard %v, writes %v, adds %v, cached objects %v; %d keys reconciled, %d by two shards, %d by a shard not their owner; "+
		"shard 2 stopped: the covered ratio read 0.67 %v later; restarted, converged %v later",
		exampleNameOf(f), p.version, shardsObjects, shardsRate, shardsWriteFor, owned, f.writes, f.adds, f.objects, len(by), doubles, wrong, uncovered.Round(100*time.Millisecond), back.Round(100*time.Millisecond))
	t.Log(note)
	report.addNote(note)
	return f
}

// checkFleetPanels queries every target of the dashboard's "Fleet:"
// panels on prom, which scrapes a sharded fleet: each must return data
// (e2e's TestApp checks the other panels on an unsharded app).
func checkFleetPanels(t *testing.T, prom *shardsProm) {
	t.Helper()
	queries, err := e2e.DashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range queries {
		if !q.Fleet {
			continue
		}
		n++
		deadline := time.Now().Add(time.Minute)
		for {
			ss, err := prom.Query(context.Background(), q.Expr)
			if err == nil && len(ss) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("dashboard panel %q: %s returned no data within a minute (%v)", q.Panel, q.Expr, err)
				break
			}
			time.Sleep(time.Second)
		}
	}
	if n < 6 {
		t.Errorf("%d fleet panel queries on the dashboard, want 6 or more", n)
	}
}

// exampleNameOf names the example of a fleet for the report.
func exampleNameOf(f *fleet) string {
	if len(f.runs) > 0 && len(f.runs[0]) > 0 {
		return f.runs[0][0].ex.name
	}
	return "?"
}

// owner returns the ordinal of the shard that owns key.
func (f *fleet) owner(key string) int {
	ns, name, _ := strings.Cut(key, "/")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: f.cms[key]}}
	for i, s := range f.shards {
		if s.Contains(cm) {
			return i
		}
	}
	return -1
}

// ownedBy counts keys (with repeats) by the shard that owns them.
func (f *fleet) ownedBy(keys []string) []int {
	out := make([]int, len(f.shards))
	for _, k := range keys {
		out[f.owner(k)]++
	}
	return out
}

// checkBinomial fails when n, out of total each falling in the shard with
// probability p, is further than shardsSigmas standard deviations from its
// mean.
func checkBinomial(t *testing.T, what string, n, total int, p float64) {
	t.Helper()
	mean, sd := float64(total)*p, math.Sqrt(float64(total)*p*(1-p))
	if math.Abs(float64(n)-mean) > shardsSigmas*sd {
		t.Errorf("%s: %d of %d, the mean at p=%.3f %.0f ± %d×%.1f", what, n, total, p, mean, shardsSigmas, sd)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// shardsCost measures what one replica receives, sharded on the server
// (the fleet's), unsharded, and sharded on the client (a server without
// the gate: the shared plane), each under the same writes.
func shardsCost(t *testing.T, p *plane, ex example, kubeconfig string, f *fleet) {
	cs := fastClient(t, p)
	// One unsharded replica over the same objects.
	wholeKC, wholeReceived := countingProxy(t, kubeconfig)
	whole := startExample(t, ex, "unsharded", "-kubeconfig", wholeKC, "-namespace", f.ns, "-generate=false", "-workers", "4")
	whole.waitSummaries(1, time.Minute)
	writeConfigMaps(t, cs, f.ns, keysOf(f.cms), shardsRate, shardsWriteFor, 3)
	if conv := waitConverged(p, f.ns, shardsConverge); conv.done != conv.total {
		t.Fatalf("unsharded: %d of %d converged", conv.done, conv.total)
	}
	wsc := whole.scrape()
	wholeObjects, wholeRead := wsc.sum("otelqueue_cache_objects", nil), wholeReceived()
	whole.stop()

	// One shard filtering on the client, on the shared plane (no gate).
	sharedCS := fastClient(t, shared)
	ns := shared.namespace(t, "otelqueue-shards-client")
	cms := createConfigMaps(t, sharedCS, ns, shardsObjects)
	sharedKC, clientReceived := countingProxy(t, shared.kubeconfig(t, "otelqueue-shards", "otelqueue:shards"))
	client := startExample(t, ex, "client-filter", "-kubeconfig", sharedKC, "-namespace", ns, "-generate=false", "-workers", "4",
		"-shards", strconv.Itoa(shardsTotal), "-shard", "0", "-shard-filter", "client")
	if _, ok := client.waitLine("ignores the shard selector: filtering on the client", time.Minute); !ok {
		t.Fatal("the client-filtering shard did not say it filters on the client")
	}
	client.waitSummaries(1, time.Minute)
	writeConfigMaps(t, sharedCS, ns, keysOf(cms), shardsRate, shardsWriteFor, 3)
	time.Sleep(5 * time.Second)
	csc := client.scrape()
	clientObjects, clientRead, clientAdds := csc.sum("otelqueue_cache_objects", nil), clientReceived(), csc.sum("workqueue_adds_total", map[string]string{"name": queueName})
	client.stop()

	if wholeObjects != shardsObjects || clientObjects != shardsObjects {
		t.Errorf("cached objects: unsharded %v, client-filtering shard %v; want all %d in both", wholeObjects, clientObjects, shardsObjects)
	}
	for i, r := range f.read {
		if r.bytes >= wholeRead.bytes || r.bytes >= clientRead.bytes {
			t.Errorf("shard %d received %d bytes; the unsharded replica %d, a shard filtering on the client %d: the server sends it its shard only", i, r.bytes, wholeRead.bytes, clientRead.bytes)
		}
		if r.events >= wholeRead.events || r.events >= clientRead.events {
			t.Errorf("shard %d received %d watch events; the unsharded replica %d, a shard filtering on the client %d: the server sends it its shard's only", i, r.events, wholeRead.events, clientRead.events)
		}
	}
	if clientAdds > 2*float64(shardsObjects+shardsRate*int(shardsWriteFor/time.Second))/shardsTotal {
		t.Errorf("the client-filtering shard took %v adds: it filters nothing", clientAdds)
	}
	note := fmt.Sprintf("%s, what one replica receives under %d changes/s over %d ConfigMaps for %v (objects cached, bytes and watch events received from the API server): sharded by the server (3 shards) %v, %+v; unsharded %v, %+v; sharded on the client %v, %+v",
		ex.name, shardsRate, shardsObjects, shardsWriteFor, f.objects, f.read, wholeObjects, wholeRead, clientObjects, clientRead)
	t.Log(note)
	report.addNote(note)
}

// hotNamespace splits by namespace two shards of the app over one big
// namespace (500 ConfigMaps) and ten small ones (10 each), all watched
// (-namespace ""), changed uniformly: the shard with the big namespace takes
// at least 5/6 of the changes, which the fleet's skew reads as hot.
func hotNamespace(t *testing.T, p *plane, prom *shardsProm, ex example, kubeconfig string) {
	cs := fastClient(t, p)
	s0, _ := shard.New(0, 2, "namespace")
	// A big namespace in shard 0, whatever its random suffix.
	var big string
	for {
		big = "otelqueue-hot-big-" + randomSuffix()
		if s0.Contains(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: big}}) {
			break
		}
	}
	createNamespace(t, cs, big)
	cms := createConfigMaps(t, cs, big, 500)
	for range 10 {
		ns := p.namespace(t, "otelqueue-hot")
		for k, uid := range createConfigMaps(t, cs, ns, 10) {
			cms[k] = uid
		}
	}
	var targets []string
	var runs []*exampleRun
	for i := range 2 {
		r := startExample(t, ex, fmt.Sprintf("hot-%d", i), "-kubeconfig", kubeconfig, "-namespace", "", "-generate=false", "-workers", "4",
			"-shards", "2", "-shard", strconv.Itoa(i), "-shard-by", "namespace")
		r.waitSummaries(1, time.Minute)
		runs = append(runs, r)
		targets = append(targets, strings.TrimSuffix(strings.TrimPrefix(r.metrics, "http://"), "/metrics"))
	}
	prom.scrape(t, targets)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { writeConfigMapsUntil(ctx, t, cs, keysOf(cms), shardsRate, 4) })
	skew := prom.waitValue(t, `fleet:workqueue_arrivals:skew_rate5m > 1.5`, func(v float64) bool { return v > 1.5 }, 2*time.Minute)
	prom.waitValue(t, `ALERTS{alertname="WorkqueueShardHot",alertstate="firing"}`, func(v float64) bool { return v == 1 }, time.Minute)
	cancel()
	wg.Wait()
	var adds []float64
	for _, r := range runs {
		adds = append(adds, r.scrape().sum("workqueue_adds_total", map[string]string{"name": queueName}))
		r.stop()
	}
	note := fmt.Sprintf("app, 2 shards by namespace, one namespace of 500 ConfigMaps and 10 of 10, %d changes/s spread evenly: adds per shard %v, the fleet's skew %.2f: WorkqueueShardHot fires", shardsRate, adds, skew)
	t.Log(note)
	report.addNote(note)
}

// createNamespace creates the namespace name.
func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// payloadSize is the size of each ConfigMap's data besides its version,
// random (gzip cannot shrink it), so that the objects a replica lists and
// watches make most of what it receives.
const payloadSize = 4096

// createConfigMaps creates n ConfigMaps in ns, at version 0 and not yet
// reconciled, with the payload, eight at a time, and returns their UIDs by
// namespace/name.
func createConfigMaps(t *testing.T, cs kubernetes.Interface, ns string, n int) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	out := map[string]types.UID{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				payload := make([]byte, payloadSize/2)
				for j := range payload {
					payload[j] = byte(rand.Uint32())
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: ns},
					Data: map[string]string{"version": "0", "payload": hex.EncodeToString(payload)}}
				got, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				out[ns+"/"+got.Name] = got.UID
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("creating ConfigMaps in %s: %v", ns, err)
	}
	return out
}

func keysOf(m map[string]types.UID) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// writeConfigMaps changes the version of random keys (namespace/name), at
// rate a second for d, and returns the keys it changed, a key once per
// change.
func writeConfigMaps(t *testing.T, cs kubernetes.Interface, ns string, keys []string, rate int, d time.Duration, seed uint64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return writeConfigMapsUntil(ctx, t, cs, keys, rate, seed)
}

// writeConfigMapsUntil is writeConfigMaps until ctx ends.
func writeConfigMapsUntil(ctx context.Context, t *testing.T, cs kubernetes.Interface, keys []string, rate int, seed uint64) []string {
	if len(keys) == 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var written []string
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return written
		case <-tick.C:
		}
		k := keys[r.IntN(len(keys))]
		ns, name, _ := strings.Cut(k, "/")
		patch := fmt.Sprintf(`{"data":{"version":"w%d-%d"}}`, seed, n)
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Errorf("patching %s: %v", k, err)
			return written
		}
		written = append(written, k)
	}
}

// bump changes the version of each of keys once, to tag.
func bump(t *testing.T, cs kubernetes.Interface, keys []string, tag string) {
	t.Helper()
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		patch := fmt.Sprintf(`{"data":{"version":%q}}`, tag)
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patching %s: %v", k, err)
		}
	}
}

// staleKeys returns the keys of ns whose last version is not reconciled.
func staleKeys(t *testing.T, cs kubernetes.Interface, ns string) map[string]bool {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, cm := range l.Items {
		if cm.Annotations[observedAnnotation] != cm.Data["version"] {
			out[cm.Namespace+"/"+cm.Name] = true
		}
	}
	return out
}

// received is what a replica received from the API server through
// countingProxy: the bytes on the wire (TLS, as the server sent them) and
// the events of its watch streams (the initial events of a watch-list
// and bookmarks included).
type received struct{ bytes, events int64 }

// countingProxy puts two proxies between a replica and the API server of
// kubeconfig and returns the replica's kubeconfig and what it has
// received so far: an HTTP proxy on 127.0.0.1 that counts the events of
// the watch streams it passes (the replica speaks plain HTTP to it; it
// holds the kubeconfig's credentials), then a TCP proxy that counts the
// bytes the server sends.
func countingProxy(t *testing.T, kubeconfig string) (string, func() received) {
	t.Helper()
	viaTCP, wire := byteCountingProxy(t, kubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", viaTCP)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	var events atomic.Int64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Del("Accept-Encoding") // the transport's own gzip, undone before the count
		},
		Transport: tr,
		ModifyResponse: func(resp *http.Response) error {
			if w := resp.Request.URL.Query().Get("watch"); w == "true" || w == "1" {
				resp.Body = &eventCounter{ReadCloser: resp.Body, proto: strings.Contains(resp.Header.Get("Content-Type"), "protobuf"), n: &events}
			}
			return nil
		},
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	path := viaTCP + "-via-http"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path, func() received { return received{bytes: wire(), events: events.Load()} }
}

// eventCounter counts the events of a watch stream as it is read: frames
// of a 4-byte big-endian length in protobuf, lines in JSON (the server
// writes one compact object a line).
type eventCounter struct {
	io.ReadCloser
	proto bool
	n     *atomic.Int64
	hdr   [4]byte
	nhdr  int
	left  uint32 // of the frame being read
}

func (c *eventCounter) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	b := p[:n]
	if !c.proto {
		c.n.Add(int64(bytes.Count(b, []byte{'\n'})))
		return n, err
	}
	for len(b) > 0 {
		if c.left > 0 {
			k := min(uint32(len(b)), c.left)
			c.left -= k
			b = b[k:]
			continue
		}
		c.hdr[c.nhdr], c.nhdr, b = b[0], c.nhdr+1, b[1:]
		if c.nhdr == len(c.hdr) {
			c.left, c.nhdr = binary.BigEndian.Uint32(c.hdr[:]), 0
			c.n.Add(1)
		}
	}
	return n, err
}

// byteCountingProxy puts a TCP proxy on 127.0.0.1 in front of the API
// server of kubeconfig and returns a kubeconfig through it and the bytes
// the server has sent through it so far.
func byteCountingProxy(t *testing.T, kubeconfig string) (string, func() int64) {
	t.Helper()
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`server: https://(127\.0\.0\.1:\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no server on 127.0.0.1", kubeconfig)
	}
	target := string(m[1])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var received atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(countingWriter{c, &received}, s)
			})
		}
	})
	path := kubeconfig + "-via-" + strings.ReplaceAll(ln.Addr().String(), ":", "-")
	if err := os.WriteFile(path, bytes.Replace(b, m[1], []byte(ln.Addr().String()), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, received.Load
}

// countingWriter counts what it writes as it writes it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// shardsProm is a Prometheus that scrapes the replicas of a test (job
// shards) and evaluates the fast copy of rules.yml.
type shardsProm struct {
	*e2e.Prometheus
	dir, rules, targets string
	proc                *e2e.Process
}

func startShardsPrometheus(t *testing.T) *shardsProm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin, _, err := e2e.BuildPrometheus(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	rulesFile, err := e2e.RulesFile()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rules, err := e2e.FastRules(rulesFile, dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	sp := &shardsProm{dir: dir, rules: rules, targets: filepath.Join(dir, "targets.json")}
	sp.scrape(t, nil)
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: shards
    file_sd_configs: [{files: [%q], refresh_interval: 1s}]
`, rules, sp.targets)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sp.proc = &e2e.Process{Name: "prometheus-shards", Path: bin, Dir: dir, LogPath: filepath.Join(dir, "prometheus.log"),
		Args: []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr}}
	if err := sp.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus log:\n%s", sp.proc.Tail(30))
		}
		if err := sp.proc.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	})
	sp.Prometheus = &e2e.Prometheus{BaseURL: "http://" + addr}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(sp.BaseURL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return sp
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus not ready within a minute: %v\n%s", err, sp.proc.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape makes targets (host:port) the replicas Prometheus scrapes.
func (sp *shardsProm) scrape(t *testing.T, targets []string) {
	t.Helper()
	q := make([]string, len(targets))
	for i, tg := range targets {
		q[i] = strconv.Quote(tg)
	}
	body := fmt.Sprintf(`[{"targets": [%s], "labels": {"job": "shards"}}]`, strings.Join(q, ", "))
	tmp := sp.targets + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, sp.targets); err != nil {
		t.Fatal(err)
	}
}

// waitValue waits, for at most timeout, until query returns one sample that
// ok accepts, and returns its value.
func (sp *shardsProm) waitValue(t *testing.T, query string, ok func(float64) bool, timeout time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ss, err := sp.Query(context.Background(), query)
		if err == nil && len(ss) == 1 && ok(ss[0].Value) {
			return ss[0].Value
		}
		last = fmt.Sprintf("%+v (%v)", ss, err)
		if time.Now().After(deadline) {
			t.Fatalf("%s: no accepted value within %v; last: %s", query, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
