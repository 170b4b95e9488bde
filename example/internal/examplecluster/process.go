package examplecluster

import (
	"log"

	"k8s.io/client-go/tools/cache"

	"github.com/otelqueue/otelqueue/procstat"
)

// StoreSize returns the number of objects in an informer's store, for the
// summary line's memory per object and otelqueue.cache.objects; nil
// when store is nil.
func StoreSize(store cache.Store) func() int {
	if store == nil {
		return nil
	}
	return func() int { return len(store.ListKeys()) }
}

// InstrumentProcess reports the process's CPU, memory and, when objects is
// not nil, the informer cache's size with the global MeterProvider
// (procstat.Instrument), for the dashboard's and the rules' sizing series.
// It returns the function that stops it; a failure is logged, not fatal:
// the example runs without those series.
func InstrumentProcess(objects func() int) (stop func()) {
	var opts []procstat.Option
	if objects != nil {
		opts = append(opts, procstat.WithCachedObjects(func() int64 { return int64(objects()) }))
	}
	inst, err := procstat.Instrument(opts...)
	if err != nil {
		log.Printf("no process metrics: %v", err)
		return func() {}
	}
	return func() {
		if err := inst.Stop(); err != nil {
			log.Printf("stopping the process metrics: %v", err)
		}
	}
}
