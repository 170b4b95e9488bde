package program

import (
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestGlobalProvider: the instrumentations made with the global delegate
// (before otel.SetMeterProvider) and with the provider set global after
// are one program for their readers; an SDK provider that is not global
// is a program of its own; every noop.MeterProvider{} is one provider.
func TestGlobalProvider(t *testing.T) {
	prev := otel.GetMeterProvider()
	t.Cleanup(func() { otel.SetMeterProvider(prev) })

	before := Of(otel.GetMeterProvider()) // the delegate: none set yet
	if before != Of(nil) {
		t.Fatal("the global delegate's program is not nil's")
	}
	before.Server.RoundTripEnded(false)

	set := sdkmetric.NewMeterProvider()
	other := sdkmetric.NewMeterProvider()
	otel.SetMeterProvider(set)
	after := Of(otel.GetMeterProvider())
	if after == before {
		t.Fatal("the provider set global shares the delegate's State: its own instrumentations must count in its own")
	}
	after.Server.RoundTripEnded(false)
	Of(other).Server.RoundTripEnded(false)

	sum := func(st *State) (n uint64) {
		for _, s := range Sources(st) {
			n += s.Server.Read(time.Now()).Requests
		}
		return n
	}
	base := before.Server.Read(time.Now()).Requests + after.Server.Read(time.Now()).Requests
	if got := sum(after); got != base {
		t.Errorf("a reader of the global provider reads %d requests, want %d: the delegate's and its own", got, base)
	}
	if got := sum(before); got != base {
		t.Errorf("a reader of the delegate reads %d requests, want %d: its own and the global provider's", got, base)
	}
	if got := Sources(Of(other)); !slices.Equal(got, []*State{Of(other)}) {
		t.Errorf("a provider that is not global reads %d States, want its own", len(got))
	}
	if Of(noop.MeterProvider{}) != Of(noop.NewMeterProvider()) {
		t.Error("two noop.MeterProvider values are two programs")
	}
}

// TestClaim: one live owner at a time, released only by itself.
func TestClaim(t *testing.T) {
	st := Of(sdkmetric.NewMeterProvider())
	a, b := new(int), new(int)
	if !st.Claim(a) || st.Claim(b) {
		t.Fatal("Claim: want the first owner only")
	}
	st.Release(b) // not the owner: nothing
	if st.Claim(b) {
		t.Fatal("Release by another owner freed the claim")
	}
	st.Release(a)
	if !st.Claim(b) {
		t.Fatal("Claim after Release failed")
	}
}
