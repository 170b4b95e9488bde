package shard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/otelqueue/otelqueue/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func uid(r *rand.Rand) types.UID {
	return types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff))
}

// serverMatches is the API server's own matcher (apimachinery's sharding
// package, which kube-apiserver filters with) for s's selector.
func serverMatches(t *testing.T, s *shard.Shard, obj runtime.Object) bool {
	t.Helper()
	var reqs []sharding.ShardRangeRequirement
	for part := range strings.SplitSeq(s.String(), " || ") {
		var key, lo, hi string
		if _, err := fmt.Sscanf(strings.NewReplacer("(", " ", ",", " ", "'", " ", ")", " ").Replace(part), "shardRange %s %s %s", &key, &lo, &hi); err != nil {
			t.Fatalf("%q: %v", part, err)
		}
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: key, Start: lo, End: hi})
	}
	ok, err := sharding.NewSelector(reqs...).Matches(obj)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// Every object has exactly one owner among the shards of a total, the one
// the server's matcher says, for both fields.
func TestNewCoversOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, by := range []string{"uid", "namespace"} {
		for total := 1; total <= 7; total++ {
			shards := make([]*shard.Shard, total)
			for i := range shards {
				s, err := shard.New(i, total, by)
				if err != nil {
					t.Fatal(err)
				}
				if o, n := s.Ordinal(); o != i || n != total || s.By() != by {
					t.Fatalf("New(%d, %d, %q): Ordinal %d/%d By %q", i, total, by, o, n, s.By())
				}
				shards[i] = s
			}
			var share float64
			for _, s := range shards {
				share += s.Share()
			}
			if share < 0.999999 || share > 1.000001 {
				t.Errorf("%d shards by %s cover %v of the hash space, want 1", total, by, share)
			}
			for range 2000 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: uid(r), Namespace: fmt.Sprintf("ns-%d", r.IntN(50))}}
				owners := 0
				for _, s := range shards {
					in := s.Contains(cm)
					if in != serverMatches(t, s, cm) {
						t.Fatalf("%s: Contains(%s/%s) = %v, the server's matcher says %v", s, cm.Namespace, cm.UID, in, !in)
					}
					if in {
						owners++
					}
				}
				if owners != 1 {
					t.Fatalf("%d shards by %s: %s/%s has %d owners", total, by, cm.Namespace, cm.UID, owners)
				}
			}
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		ordinal, total int
		by, want       string
	}{
		{3, 3, "uid", "ordinal 3 out of range: with 3 shards it is 0 to 2"},
		{-1, 3, "uid", "ordinal -1 out of range"},
		{0, 0, "uid", "the total must be 1 or more"},
		{0, 2, "name", `cannot split by "name"`},
		{0, 2, "", `cannot split by ""`},
	} {
		s, err := shard.New(c.ordinal, c.total, c.by)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%d, %d, %q) = %v, %v; want an error with %q", c.ordinal, c.total, c.by, s, err, c.want)
		}
	}
}

func TestSelectors(t *testing.T) {
	for _, c := range []struct {
		ordinal, total int
		want           string
	}{
		{0, 1, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{0, 2, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{1, 2, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"},
		{1, 3, "shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"},
	} {
		s, err := shard.New(c.ordinal, c.total, "uid")
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != c.want {
			t.Errorf("New(%d, %d): %s, want %s", c.ordinal, c.total, s, c.want)
		}
		p, err := shard.Parse(s.String())
		if err != nil || p.String() != s.String() || p.Share() != s.Share() {
			t.Errorf("Parse(%s) = %v, %v", s, p, err)
		}
	}
}

// Parse refuses what the API server refuses (with an HTTP 500 a reflector
// retries forever), saying what is wrong.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ sel, want string }{
		{"", "empty selector"},
		{"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", "0x and 16 hex digits"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'", "is not shardRange"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x80000000000000000')", "0x and 16 hex digits"},
		{"shardRange(object.metadata.uid, '0x000000000000000A', '0x8000000000000000')", "not a lowercase hex digit"},
		{"shardRange(object.metadata.uid, 0x0000000000000000, '0x8000000000000000')", "not a quoted string"},
		{"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')", "the field must be"},
		{"shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')", "start must be below the end"},
		{"shardRange(object.metadata.uid, '0x10000000000000000', '0x10000000000000000')", "start must be below the end"},
		{"shardRange(object.metadata.uid, '0x0000000000000000')", "3 arguments"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')", "all ranges must hash one field"},
		{"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||", "is not shardRange"},
	} {
		s, err := shard.Parse(c.sel)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, %v; want an error with %q", c.sel, s, err, c.want)
		}
	}
}

func TestParseUnion(t *testing.T) {
	// The old and the new range of shard 0 while 2 shards become 3.
	s, err := shard.Parse(`shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, "0x0000000000000000", "0x5555555555555555")`)
	if err != nil {
		t.Fatal(err)
	}
	if s.Share() != 0.5 || s.By() != "namespace" {
		t.Errorf("Share %v By %q, want 0.5 namespace", s.Share(), s.By())
	}
	if o, n := s.Ordinal(); o != 0 || n != 0 {
		t.Errorf("Ordinal %d/%d, want 0/0 for explicit ranges", o, n)
	}
}

func TestNilShard(t *testing.T) {
	var s *shard.Shard
	o := metav1.ListOptions{}
	s.TweakListOptions(&o)
	s.TweakListOptions(nil)
	if o.ShardSelector != "" || s.String() != "" || s.By() != "" || s.Share() != 1 || !s.Contains(&corev1.ConfigMap{}) {
		t.Errorf("a nil Shard selects: %q %q %q %v", o.ShardSelector, s, s.By(), s.Share())
	}
	if _, err := s.ServerFilters(context.Background(), nil); err == nil {
		t.Error("ServerFilters on a nil Shard: no error")
	}
	if inf := s.NewInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, nil); inf == nil {
		t.Error("NewInformer on a nil Shard: nil")
	}
}

func TestContainsTombstonesAndOthers(t *testing.T) {
	s0, _ := shard.New(0, 2, "uid")
	s1, _ := shard.New(1, 2, "uid")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "0b0a2e9c-3f0a-4f7e-9b1e-1f6f0d2c7a11"}}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: cm}
	if s0.Contains(tomb) != s0.Contains(cm) || s1.Contains(tomb) != s1.Contains(cm) || s0.Contains(cm) == s1.Contains(cm) {
		t.Error("a tombstone is not owned as its object")
	}
	if !s0.Contains("not an object") || !s1.Contains(nil) {
		t.Error("what has no metadata must be every shard's")
	}
}

// ServerFilters on the fake clientset, which ignores the selector as a
// server without the gate does: false. The check of a server that filters
// runs against kube-apiserver in e2e/apiserver (TestShardHash).
func TestServerFiltersIgnored(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	s, _ := shard.New(0, 2, "uid")
	var asked string
	ok, err := s.ServerFilters(context.Background(), func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		asked = o.ShardSelector
		return cs.CoreV1().ConfigMaps("").List(ctx, o)
	})
	if ok || err != nil || asked != s.String() {
		t.Errorf("ServerFilters = %v, %v (asked %q); want false, nil, asking %q", ok, err, asked, s)
	}
	boom := errors.New("boom")
	if _, err := s.ServerFilters(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed list: %v", err)
	}
	if _, err := s.ServerFilters(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.ConfigMap{}, nil
	}); err == nil || !strings.Contains(err.Error(), "no ListMeta") {
		t.Errorf("not a list: %v", err)
	}
	if _, err := s.ServerFilters(context.Background(), nil); err == nil {
		t.Error("a nil list function: no error")
	}
	for _, echoed := range []string{
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
		"garbage",
	} {
		ok, err := s.ServerFilters(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ShardInfo: &metav1.ShardInfo{Selector: echoed}}}, nil
		})
		if ok || err == nil {
			t.Errorf("echoed %q: %v, %v; want an error", echoed, ok, err)
		}
	}
	// The server's own formatting of the same range is the same shard.
	ok, err = s.ServerFilters(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ShardInfo: &metav1.ShardInfo{Selector: `shardRange(object.metadata.uid,"0x0000000000000000","0x8000000000000000")`}}}, nil
	})
	if !ok || err != nil {
		t.Errorf("echoed re-formatted: %v, %v; want true", ok, err)
	}
}

// NewInformer's informer holds the shard's objects only on a server that
// ignores the selector (the fake clientset), from the list and the watch,
// and sets the selector on both.
func TestNewInformerFiltersOnTheClient(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cs := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(n int) {
		for i := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d-%d", n, i), Namespace: "ns", UID: uid(r)}}
			if _, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(100) // listed
	s, _ := shard.New(1, 3, "uid")
	var mu sync.Mutex
	var selectors []string
	asked := func(o metav1.ListOptions) {
		mu.Lock()
		defer mu.Unlock()
		selectors = append(selectors, o.ShardSelector)
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			asked(o)
			return cs.CoreV1().ConfigMaps("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			asked(o)
			return cs.CoreV1().ConfigMaps("").Watch(ctx, o)
		},
	}
	// The fake clientset has no watch-list stream, which it says through
	// the wrapper: NewInformer must pass that on.
	inf := s.NewInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, cs), &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("no sync")
	}
	create(200) // watched
	all, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range all.Items {
		if s.Contains(&all.Items[i]) {
			want++
		}
	}
	if want == 0 || want == len(all.Items) {
		t.Fatalf("%d of %d in shard 1 of 3: the test needs some in and some out", want, len(all.Items))
	}
	for {
		got := len(inf.GetStore().List())
		if got == want {
			break
		}
		if got > want {
			t.Fatalf("the informer holds %d objects, the shard owns %d of %d", got, want, len(all.Items))
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, obj := range inf.GetStore().List() {
		if !s.Contains(obj) {
			t.Fatalf("the informer holds %s, not the shard's", obj.(*corev1.ConfigMap).Name)
		}
	}
	cancel()
	<-done
	if len(selectors) < 2 {
		t.Errorf("%d requests, want a list and a watch", len(selectors))
	}
	for _, sel := range selectors {
		if sel != s.String() {
			t.Errorf("a request's selector %q, want %q", sel, s)
		}
	}
}

func TestInstrument(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	s, _ := shard.New(1, 3, "namespace")
	reg, err := s.Instrument(mp)
	if err != nil {
		t.Fatal(err)
	}
	read := func() []metricdata.DataPoint[float64] {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == "workqueue.shard.share" {
					return m.Data.(metricdata.Gauge[float64]).DataPoints
				}
			}
		}
		return nil
	}
	dps := read()
	if len(dps) != 1 {
		t.Fatalf("%d points of workqueue.shard.share, want 1", len(dps))
	}
	want := attribute.NewSet(attribute.String("workqueue.shard.by", "namespace"), attribute.Int("workqueue.shard.ordinal", 1), attribute.Int("workqueue.shard.total", 3))
	d0 := dps[0].Value
	if d := dps[0]; d.Value < 0.3333 || d.Value > 0.3334 || !d.Attributes.Equals(&want) {
		t.Errorf("workqueue.shard.share %v %v, want 1/3 %v", d.Value, d.Attributes.Encoded(attribute.DefaultEncoder()), want.Encoded(attribute.DefaultEncoder()))
	}
	// Instrumented twice: harmless, one point of the same value.
	reg2, err := s.Instrument(mp)
	if err != nil {
		t.Fatal(err)
	}
	if dps := read(); len(dps) != 1 || dps[0].Value != d0 {
		t.Errorf("instrumented twice: %+v, want one point of %v", dps, d0)
	}
	if err := reg2.Unregister(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if dps := read(); len(dps) != 0 {
		t.Errorf("after Unregister: %d points", len(dps))
	}
	var nilShard *shard.Shard
	if _, err := nilShard.Instrument(mp); err == nil {
		t.Error("Instrument on a nil Shard: no error")
	}
	p, _ := shard.Parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
	if got := attribute.NewSet(p.Attributes()...); got.Len() != 1 {
		t.Errorf("explicit ranges' attributes %v, want workqueue.shard.by only", got.Encoded(attribute.DefaultEncoder()))
	}
	if nilShard.Attributes() != nil {
		t.Error("a nil Shard has attributes")
	}
}

// TestNamesDifferingAtTheEnd: FNV-1a's top bits, which pick the shard,
// hardly depend on a name's last bytes: the namespaces shard-hash-00 to
// shard-hash-29 all fall in one of three shards by namespace (what
// docs/scaling.md warns of). UIDs differ from their first byte.
func TestNamesDifferingAtTheEnd(t *testing.T) {
	owners := map[int]int{}
	for i := range 30 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("shard-hash-%02d", i)}}
		for o := range 3 {
			if s, _ := shard.New(o, 3, "namespace"); s.Contains(cm) {
				owners[o]++
			}
		}
	}
	if len(owners) != 1 {
		t.Errorf("30 namespaces shard-hash-NN by shard: %v, want all in one", owners)
	}
}
