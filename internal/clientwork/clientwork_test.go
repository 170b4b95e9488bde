package clientwork

import (
	"context"
	"testing"
	"time"
)

// TestRetryAfterWaitIsTheGapAfterA429: the time from the end of a 429 with
// Retry-After to the start of the next limiter wait or round trip counts
// once, as the wait before the retry; a 429 without Retry-After (client-go
// does not retry it) starts no such wait.
func TestRetryAfterWaitIsTheGapAfterA429(t *testing.T) {
	w := &Work{}
	t0 := time.Unix(1000, 0)
	if since := w.Begin(t0); !since.IsZero() {
		t.Fatalf("a first request begins a retry wait at %v", since)
	}
	w.RoundTrip(10*time.Millisecond, t0.Add(10*time.Millisecond), true, true)
	if since := w.Begin(t0.Add(1010 * time.Millisecond)); !since.Equal(t0.Add(10 * time.Millisecond)) {
		t.Errorf("the retry's begin: wait since %v, want the 429's end", since)
	}
	w.LimiterWaited(5 * time.Millisecond)
	if since := w.Begin(t0.Add(1020 * time.Millisecond)); !since.IsZero() {
		t.Errorf("the round trip after the retry's limiter wait counts the same wait again (since %v)", since)
	}
	w.RoundTrip(10*time.Millisecond, t0.Add(1030*time.Millisecond), true, false)
	if since := w.Begin(t0.Add(2 * time.Second)); !since.IsZero() {
		t.Errorf("a 429 without Retry-After began a retry wait")
	}
	got := w.Totals()
	want := Totals{Used: true, LimiterWait: 5 * time.Millisecond, RequestTime: 20 * time.Millisecond, RetryAfterWait: time.Second, Requests: 2, Throttled: 2}
	if got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
}

func TestContext(t *testing.T) {
	w := &Work{}
	ctx := NewContext(context.Background(), w)
	var none context.Context // nil is input too
	if FromContext(ctx) != w || FromContext(context.Background()) != nil || FromContext(none) != nil {
		t.Error("FromContext does not return the Work NewContext put in, or nil without one")
	}
	if !IsKey(key{}) || IsKey(struct{}{}) {
		t.Error("IsKey")
	}
}
