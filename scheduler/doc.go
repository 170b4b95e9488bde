// Package scheduler is a controller work queue that deduplicates, delays and
// rate-limits keys with the semantics of client-go's work queue, and that
// remembers, for every pending key, when it was first enqueued and from which
// trace span contexts.
//
// A [Scheduler] implements client-go's workqueue.TypedRateLimitingInterface,
// so it drops into any client-go controller and into controller-runtime
// through controller.Options.NewQueue:
//
//   - a key added while it is queued or delayed is coalesced: it runs once, at
//     the earliest ready time asked for;
//   - a key added while a worker processes it is handed out again exactly once
//     after Done, never to two workers at the same time;
//   - AddAfter and AddRateLimited delay a key through one heap and one timer for
//     the whole queue, driven by the injected clock;
//   - ShutDown and ShutDownWithDrain behave as client-go documents them.
//
// Beside the client-go methods sit context-aware ones: [Scheduler.AddContext],
// [Scheduler.AddAfterContext] and [Scheduler.AddRateLimitedContext] keep the
// caller's trace.SpanContext with the key, and [Scheduler.GetContext] hands a
// worker an [Item]: the key with its enqueue, ready and dequeue times, the span
// contexts to link to, and why it waited. An [Observer], such as the one
// package otelqueue installs, turns those into spans and histograms; the
// scheduler itself knows nothing of metrics and imports only the
// OpenTelemetry trace API.
//
// [Scheduler.Stats] returns the queue's numbers (depth, delayed, in flight,
// adds, retries, coalesced adds, oldest pending age, unfinished work, longest
// running) for programs that use no metrics library at all.
package scheduler
