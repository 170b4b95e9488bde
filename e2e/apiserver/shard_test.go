package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/otelqueue/otelqueue/shard"
)

// The objects of TestShardHash: enough that a hash mismatch in any range
// shows (3,000 objects put about 1,000 in each of three shards).
const (
	shardHashNamespaces = 30
	shardHashPerNS      = 100
	shardHashTotal      = 3
)

// TestShardHash checks package shard against the real server, with the gate
// on: over 3,000 ConfigMaps in 30 namespaces, for three shards by UID and
// three by namespace, the server's list for each shard's selector holds
// exactly the objects the shard's Contains owns (the same FNV-1a hash, bit
// for bit), every object in one shard; ServerFilters says the server
// filters; and an informer from NewInformer (the watch-list stream, which
// carries no ShardInfo) holds the shard's objects only. On the shared plane,
// without the gate, the server ignores the selector: ServerFilters says so
// and the list is whole.
func TestShardHash(t *testing.T) {
	p := shardedPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := fastClient(t, p)
	createShardObjects(t, ctx, cs)
	all, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) < shardHashNamespaces*shardHashPerNS {
		t.Fatalf("%d ConfigMaps listed, want at least %d", len(all.Items), shardHashNamespaces*shardHashPerNS)
	}
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().ConfigMaps("").List(ctx, o)
	}
	for _, by := range []string{"uid", "namespace"} {
		owners := map[types.UID]int{}
		for i := range shardHashTotal {
			s, err := shard.New(i, shardHashTotal, by)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := s.ServerFilters(ctx, list); !ok || err != nil {
				t.Fatalf("%s: ServerFilters on a server with the gate = %v, %v; want true", s, ok, err)
			}
			got, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: s.String()})
			if err != nil {
				t.Fatal(err)
			}
			if got.ShardInfo == nil {
				t.Fatalf("%s: the list has no ShardInfo", s)
			}
			served := map[types.UID]bool{}
			for _, cm := range got.Items {
				served[cm.UID] = true
				owners[cm.UID]++
			}
			mismatch := 0
			for i := range all.Items {
				cm := &all.Items[i]
				if s.Contains(cm) != served[cm.UID] {
					if mismatch++; mismatch <= 5 {
						t.Errorf("%s: %s/%s (uid %s): Contains says %v, the server %v", s, cm.Namespace, cm.Name, cm.UID, s.Contains(cm), served[cm.UID])
					}
				}
			}
			if mismatch > 0 {
				t.Errorf("%s: %d of %d objects placed otherwise than the server places them", s, mismatch, len(all.Items))
			}
			t.Logf("by %s, shard %d of %d: %d of %d objects", by, i, shardHashTotal, len(got.Items), len(all.Items))
			if len(got.Items) == 0 {
				t.Errorf("%s: no object: the test's objects must fall in every shard to check the hash", s)
			}
			if by == "uid" && i == 1 {
				checkInformer(t, ctx, cs, s, served)
			}
		}
		for i := range all.Items {
			if n := owners[all.Items[i].UID]; n != 1 {
				t.Errorf("by %s: %s/%s is in %d shards, want 1", by, all.Items[i].Namespace, all.Items[i].Name, n)
			}
		}
	}

	// Without the gate: the selector is ignored, whole lists.
	s, _ := shard.New(0, 2, "uid")
	ok, err := s.ServerFilters(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return shared.client.CoreV1().ConfigMaps("").List(ctx, o)
	})
	if ok || err != nil {
		t.Errorf("ServerFilters without the gate = %v, %v; want false", ok, err)
	}
}

// checkInformer runs an informer of s.NewInformer on the server until it
// syncs and checks it holds exactly the objects the server serves s.
func checkInformer(t *testing.T, ctx context.Context, cs kubernetes.Interface, s *shard.Shard, served map[types.UID]bool) {
	t.Helper()
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "", fields.Everything())
	inf := s.NewInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, cs), &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ictx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ictx) })
	defer func() { stop(); wg.Wait() }()
	if !toolscache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		t.Fatalf("%s: the informer did not sync", s)
	}
	objs := inf.GetStore().List()
	for _, o := range objs {
		if cm := o.(*corev1.ConfigMap); !served[cm.UID] {
			t.Errorf("%s: the informer holds %s/%s, which the server does not serve the shard", s, cm.Namespace, cm.Name)
		}
	}
	if len(objs) != len(served) {
		t.Errorf("%s: the informer holds %d objects, the server serves the shard %d", s, len(objs), len(served))
	}
}

// createShardObjects creates shardHashNamespaces namespaces of
// shardHashPerNS ConfigMaps each, eight at a time.
func createShardObjects(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	t.Helper()
	type item struct{ ns, name string }
	work := make(chan item)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for it := range work {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: it.name, Namespace: it.ns}}
				if _, err := cs.CoreV1().ConfigMaps(it.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	// Names that differ in their first bytes: FNV-1a's top bits, which
	// pick the shard, hardly depend on a name's last bytes (shard-hash-00
	// to shard-hash-29 all hash into one third).
	r := rand.New(rand.NewPCG(5, 6))
	for range shardHashNamespaces {
		ns := fmt.Sprintf("%08x-shard-hash", r.Uint32())
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			close(work)
			wg.Wait()
			t.Fatal(err)
		}
		for i := range shardHashPerNS {
			work <- item{ns, fmt.Sprintf("cm-%03d", i)}
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("creating the ConfigMaps: %v", err)
	default:
	}
}
