// Package shard splits a controller's objects between replicas on the API
// server's sharded list and watch (KEP-5866, feature gate
// ShardedListAndWatch, alpha since Kubernetes 1.36).
//
// A Shard is one replica's slice of the 64-bit FNV-1a hash of each
// object's UID or namespace. Its selector goes on the informers' list and
// watch (TweakListOptions for client-go's informer factory, NewInformer for
// controller-runtime's cache), so the server sends the replica only its
// slice. A server without the gate ignores the selector without a word and
// sends everything: ServerFilters says which it is, with one small list at
// start-up, and Contains filters on the client with the server's own hash
// (NewInformer's list and watch filter with it too). A replica then either
// refuses to start or filters on the client, as its user chose.
//
//	s, err := shard.New(ordinal, total, "uid")
//	...
//	ok, err := s.ServerFilters(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
//		return cs.CoreV1().ConfigMaps("").List(ctx, o)
//	})
//	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(s.TweakListOptions))
//	inf.AddEventHandler(toolscache.FilteringResourceEventHandler{FilterFunc: s.Contains, Handler: h})
//
// The shards of one total cover the hash space once: every object has one
// owner. A split by namespace keeps a namespace in one shard, so one big
// namespace makes one hot shard; a split by UID spreads evenly.
package shard

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"
	"strings"
)

// The field paths of the two splits the API server accepts.
const (
	uidPath       = "object.metadata.uid"
	namespacePath = "object.metadata.namespace"
	top           = "0x10000000000000000" // 2^64, an end only
)

// Shard is one replica's part of the objects: the ranges of the hash of
// one field. Its methods are safe for concurrent use; a nil *Shard is the
// whole (every object, no selector).
type Shard struct {
	field    string // uidPath or namespacePath
	ranges   []span
	ordinal  int // of total; total 0: explicit ranges (Parse)
	total    int
	selector string
}

// span is [lo, hi) of the hash; hiTop: hi is 2^64.
type span struct {
	lo, hi uint64
	hiTop  bool
}

func (r span) contains(h uint64) bool { return h >= r.lo && (r.hiTop || h < r.hi) }

// selector is r as a shardRange of field, as the API server writes it.
func (r span) selector(field string) string {
	end := top
	if !r.hiTop {
		end = fmt.Sprintf("0x%016x", r.hi)
	}
	return fmt.Sprintf("shardRange(%s, '0x%016x', '%s')", field, r.lo, end)
}

// New returns shard ordinal of total equal shards of the hash of by, "uid"
// (objects spread evenly) or "namespace" (a namespace's objects together).
// Ordinal i covers [i×2^64/total, (i+1)×2^64/total).
func New(ordinal, total int, by string) (*Shard, error) {
	field, err := fieldOf(by)
	if err != nil {
		return nil, err
	}
	if total < 1 {
		return nil, fmt.Errorf("shard: %d shards: the total must be 1 or more", total)
	}
	if ordinal < 0 || ordinal >= total {
		return nil, fmt.Errorf("shard: ordinal %d out of range: with %d shards it is 0 to %d", ordinal, total, total-1)
	}
	r := span{lo: bound(ordinal, total)}
	if ordinal == total-1 {
		r.hiTop = true
	} else {
		r.hi = bound(ordinal+1, total)
	}
	return newShard(field, []span{r}, ordinal, total), nil
}

// bound is floor(i × 2^64 / n), for 0 <= i < n.
func bound(i, n int) uint64 {
	q, _ := bits.Div64(uint64(i), 0, uint64(n))
	return q
}

func fieldOf(by string) (string, error) {
	switch by {
	case "uid":
		return uidPath, nil
	case "namespace":
		return namespacePath, nil
	}
	return "", fmt.Errorf("shard: cannot split by %q: the API server hashes \"uid\" or \"namespace\"", by)
}

func newShard(field string, ranges []span, ordinal, total int) *Shard {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.selector(field)
	}
	return &Shard{field: field, ranges: ranges, ordinal: ordinal, total: total, selector: strings.Join(parts, " || ")}
}

// Parse returns the shard of an explicit selector, as the API server takes
// it: shardRange(object.metadata.uid, '0x0000000000000000',
// '0x8000000000000000'), or several such ranges of one field joined by ||.
// Bounds are "0x" and 16 lowercase hex digits (the end may be
// '0x10000000000000000', 2^64), the start below the end. The server answers
// a malformed selector with an HTTP 500 that a reflector retries forever:
// Parse refuses it with what is wrong instead.
func Parse(selector string) (*Shard, error) {
	if strings.TrimSpace(selector) == "" {
		return nil, fmt.Errorf("shard: an empty selector: give one or more shardRange(field, 'start', 'end') joined by ||")
	}
	var field string
	var ranges []span
	for part := range strings.SplitSeq(selector, "||") {
		f, r, err := parseRange(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("shard: %w", err)
		}
		if field != "" && f != field {
			return nil, fmt.Errorf("shard: selector %q: ranges of %s and %s: all ranges must hash one field", selector, field, f)
		}
		field = f
		ranges = append(ranges, r)
	}
	return newShard(field, ranges, 0, 0), nil
}

// parseRange parses shardRange(field, 'start', 'end').
func parseRange(s string) (string, span, error) {
	args, okPrefix := strings.CutPrefix(s, "shardRange(")
	args, okSuffix := strings.CutSuffix(args, ")")
	if !okPrefix || !okSuffix {
		return "", span{}, fmt.Errorf("%q is not shardRange(field, 'start', 'end')", s)
	}
	parts := strings.Split(args, ",")
	if len(parts) != 3 {
		return "", span{}, fmt.Errorf("%q: shardRange takes 3 arguments, not %d", s, len(parts))
	}
	field := strings.TrimSpace(parts[0])
	if field != uidPath && field != namespacePath {
		return "", span{}, fmt.Errorf("%q: the field must be %s or %s", s, uidPath, namespacePath)
	}
	lo, loTop, err := parseBound(parts[1])
	if err != nil {
		return "", span{}, fmt.Errorf("%q: start: %w", s, err)
	}
	hi, hiTop, err := parseBound(parts[2])
	if err != nil {
		return "", span{}, fmt.Errorf("%q: end: %w", s, err)
	}
	if loTop || (!hiTop && lo >= hi) {
		return "", span{}, fmt.Errorf("%q: the start must be below the end", s)
	}
	return field, span{lo: lo, hi: hi, hiTop: hiTop}, nil
}

// parseBound parses a quoted bound; top: it is 2^64.
func parseBound(s string) (v uint64, isTop bool, err error) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return 0, false, fmt.Errorf("%s is not a quoted string such as '0x8000000000000000'", s)
	}
	s = s[1 : len(s)-1]
	if s == top {
		return 0, true, nil
	}
	digits, ok := strings.CutPrefix(s, "0x")
	if !ok || len(digits) != 16 {
		return 0, false, fmt.Errorf("%q must be 0x and 16 hex digits (or %s for 2^64)", s, top)
	}
	for _, c := range digits {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false, fmt.Errorf("%q: %q is not a lowercase hex digit", s, c)
		}
	}
	return v, false, nil
}

// String returns the selector, as ListOptions.ShardSelector takes it; ""
// for a nil Shard.
func (s *Shard) String() string {
	if s == nil {
		return ""
	}
	return s.selector
}

// By returns the field hashed, "uid" or "namespace"; "" for a nil Shard.
func (s *Shard) By() string {
	switch {
	case s == nil:
		return ""
	case s.field == namespacePath:
		return "namespace"
	}
	return "uid"
}

// Ordinal returns the shard's ordinal and the number of shards; 0 and 0
// for explicit ranges (Parse) or a nil Shard.
func (s *Shard) Ordinal() (ordinal, total int) {
	if s == nil {
		return 0, 0
	}
	return s.ordinal, s.total
}

// Share returns the part of the hash space the shard covers, 0 to 1 (its
// ranges may overlap: each point counts once); 1 for a nil Shard.
func (s *Shard) Share() float64 {
	if s == nil {
		return 1
	}
	rs := slices.Clone(s.ranges)
	slices.SortFunc(rs, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var sum, end float64 // end: of the covered part so far
	for _, r := range rs {
		lo, hi := float64(r.lo), float64(r.hi)
		if r.hiTop {
			hi = 1 << 64
		}
		lo = max(lo, end)
		if hi > lo {
			sum += hi - lo
			end = hi
		}
	}
	return sum / (1 << 64)
}

// hash is the API server's: FNV-1a, 64 bits, of the field's value.
func hash(value string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(value))
	return h.Sum64()
}

// owns reports whether the shard holds an object with this uid and
// namespace.
func (s *Shard) owns(uid, namespace string) bool {
	if s == nil {
		return true
	}
	v := uid
	if s.field == namespacePath {
		v = namespace
	}
	h := hash(v)
	for _, r := range s.ranges {
		if r.contains(h) {
			return true
		}
	}
	return false
}
