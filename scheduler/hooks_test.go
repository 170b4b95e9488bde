package scheduler

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/otelqueue/otelqueue/internal/schedhooks"
)

// siblingHooks are the names of what the scheduler has for package
// otelqueue only, reached through internal/schedhooks.
var siblingHooks = []string{"Clock", "ShutDownCh", "CompareAndSwapObserver", "WallClockObserver"}

// TestNoSiblingHooksExported: the scheduler's users see none of the hooks,
// neither as methods of a Scheduler nor as names of the package.
func TestNoSiblingHooksExported(t *testing.T) {
	typ := reflect.TypeFor[*Scheduler[string]]()
	for _, name := range siblingHooks {
		if _, ok := typ.MethodByName(name); ok {
			t.Errorf("%v has the exported method %s", typ, name)
		}
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	exported := map[string]string{} // name (Recv.Method for a method) -> file
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					exported[d.Name.Name] = path
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							exported[sp.Name.Name] = path
						}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.IsExported() {
								exported[n.Name] = path
							}
						}
					}
				}
			}
		}
	}
	if len(exported) == 0 {
		t.Fatal("no exported name found: the test reads no source")
	}
	for _, name := range siblingHooks {
		if path, ok := exported[name]; ok {
			t.Errorf("%s declares the exported name %s", path, name)
		}
	}
}

// TestHooksOf: schedhooks.Of finds the hooks of a Scheduler of any key type,
// and none of anything else.
func TestHooksOf(t *testing.T) {
	if schedhooks.Of(New(Config[string]{})) == nil {
		t.Error("no hooks of a *Scheduler[string]")
	}
	type key [2]int
	if schedhooks.Of(New(Config[key]{})) == nil {
		t.Error("no hooks of a *Scheduler[key]")
	}
	for _, v := range []any{nil, "queue", Config[string]{}, &struct{ hooks int }{}} {
		if h := schedhooks.Of(v); h != nil {
			t.Errorf("hooks of %T: %+v, want nil", v, h)
		}
	}
}

// TestShutDownCh checks that the hooks' ShutDownCh is open until the first
// ShutDown or ShutDownWithDrain, closed after, and the same channel every
// time, however often the queue is shut down.
func TestShutDownCh(t *testing.T) {
	for _, drain := range []bool{false, true} {
		s := New(Config[string]{})
		ch := schedhooks.Of(s).ShutDownCh
		select {
		case <-ch:
			t.Fatalf("drain %v: ShutDownCh closed before ShutDown", drain)
		default:
		}
		if drain {
			s.ShutDownWithDrain()
		} else {
			s.ShutDown()
		}
		s.ShutDown() // again: no second close
		select {
		case <-ch:
		default:
			t.Fatalf("drain %v: ShutDownCh still open after ShutDown", drain)
		}
		if schedhooks.Of(s).ShutDownCh != ch {
			t.Errorf("drain %v: ShutDownCh is another channel after ShutDown", drain)
		}
	}
}

// TestClock checks that the hooks' Clock is Config.Clock, or the real clock.
func TestClock(t *testing.T) {
	fc := testingclock.NewFakeClock(t0)
	if got := schedhooks.Of(New(Config[string]{Clock: fc})).Clock; got != fc {
		t.Errorf("Clock = %v, want Config.Clock", got)
	}
	if _, ok := schedhooks.Of(New(Config[string]{})).Clock.(clock.RealClock); !ok {
		t.Errorf("Clock of the zero Config is not the real clock")
	}
}

// funcObserver is an Observer of an uncomparable type.
type funcObserver func()

func (funcObserver) Dequeued(ctx context.Context, _ *Item[string]) context.Context { return ctx }
func (funcObserver) Done(context.Context, string, time.Time, time.Time)            {}

// TestCompareAndSwapObserver: the swap happens only when the installed
// Observer is old, concurrent installers have exactly one winner, and an
// uncomparable Observer, or an old of another type, neither panics nor
// matches.
func TestCompareAndSwapObserver(t *testing.T) {
	s := New(Config[string]{Name: "cas"})
	defer s.ShutDown()
	cas := schedhooks.Of(s).CompareAndSwapObserver
	a, b := &recObserver[string]{}, &recObserver[string]{}
	if !cas(nil, a) {
		t.Fatal("CompareAndSwapObserver(nil, a) on a queue without an Observer = false")
	}
	if cas(nil, b) {
		t.Fatal("CompareAndSwapObserver(nil, b) replaced a")
	}
	if cas(b, nil) {
		t.Fatal("CompareAndSwapObserver(b, nil) removed a")
	}
	if cas(&recObserver[int]{}, nil) || cas("a", nil) {
		t.Fatal("an old of another type matched")
	}
	if got := s.Observer(); got != Observer[string](a) {
		t.Fatalf("Observer() = %v, want a", got)
	}
	if !cas(a, nil) || s.Observer() != nil {
		t.Fatal("CompareAndSwapObserver(a, nil) did not remove a")
	}
	if !cas(Observer[string](nil), a) || !cas(Observer[string](a), Observer[string](nil)) || s.Observer() != nil {
		t.Fatal("nil and a passed as Observer[string] are not nil and a")
	}

	f := funcObserver(func() {})
	if !cas(nil, f) {
		t.Fatal("installing an uncomparable Observer failed")
	}
	if cas(funcObserver(func() {}), nil) {
		t.Fatal("an uncomparable old matched")
	}
	s.SetObserver(nil)

	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if cas(nil, &recObserver[string]{}) {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d concurrent installers won, want 1", n)
	}
}

// TestCompareAndSwapObserverOfAnotherKeyType: an obs that is no Observer of
// the queue's keys installs nothing: the swap reports false and leaves the
// Observer as it was.
func TestCompareAndSwapObserverOfAnotherKeyType(t *testing.T) {
	s := New(Config[string]{Name: "cas"})
	defer s.ShutDown()
	if schedhooks.Of(s).CompareAndSwapObserver(nil, &recObserver[int]{}) {
		t.Error("the swap to an Observer of int keys succeeded on a scheduler of string keys")
	}
	if s.Observer() != nil {
		t.Errorf("Observer() = %v after the refused swap, want nil", s.Observer())
	}
}
