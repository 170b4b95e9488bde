package otelqueue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/otelqueue/otelqueue/internal/semconv"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// A replica that does not lead keeps its queue standby: its keys wait for
// the election, not for a worker. With controller-runtime, pass
// mgr.Elected() (package controllerruntime's Options does it); here a
// channel closed by hand stands for it.
func ExampleWithStandby() {
	ctx := context.Background()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(ctx)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)

	elected := make(chan struct{}) // mgr.Elected()
	queue := scheduler.New(scheduler.Config[string]{Name: "deployments"})
	defer queue.ShutDown()
	inst, err := otelqueue.Instrument(queue, otelqueue.WithStandby(elected),
		otelqueue.WithMeterProvider(mp), otelqueue.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()

	queue.Add("default/web") // a warm standby's informers fill the queue
	fmt.Println("standby:", inst.Standby())

	close(elected) // the replica leads
	for inst.Standby() {
		time.Sleep(time.Millisecond) // the instrumentation sees the channel closed
	}
	fmt.Println("standby:", inst.Standby())
	item, err := queue.GetContext(ctx)
	if err != nil {
		log.Fatal(err)
	}
	queue.Done(item.Key)
	for _, s := range spans.Ended() {
		for _, ev := range s.Events() {
			if ev.Name == semconv.EventActive {
				fmt.Printf("%s span: the wait for a worker began at the %q event\n", s.Name(), ev.Name)
			}
		}
	}
	// Output:
	// standby: true
	// standby: false
	// queued span: the wait for a worker began at the "active" event
}
