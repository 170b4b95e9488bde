// Package kubeclient instruments the Kubernetes API client a reconciler
// uses, so that a reconcile's time can be told apart: its own work, the wait
// for the client-side rate limiter (rest.Config's QPS and Burst), the time
// in API requests, and the wait the API server imposed with 429 Too Many
// Requests and Retry-After (API Priority and Fairness).
//
// Instrument returns a copy of a *rest.Config whose rate limiter and
// transport record:
//
//   - every API round trip as the OpenTelemetry semantic conventions' HTTP
//     client metric http.client.request.duration, with the request's
//     Kubernetes verb and resource, and, when the request's context carries a
//     span, as a client span (named "{method} {url.template}", e.g.
//     "PATCH /api/v1/namespaces/{namespace}/configmaps/{name}"), child of
//     that span, whose trace context is sent in the traceparent header (the
//     API server's own tracing joins it);
//   - every wait for the rate limiter in kubernetes.client.rate_limiter.duration
//     and, when it lasted 1 ms or more inside a traced context,
//     as a span "client rate limiter" over the wait; inside a reconcile
//     attempt (below), client-go's wait before a retry that the server asked
//     for with Retry-After, as a span "retry after";
//   - every watch stream open, from its 2xx answer to its end, in the
//     up-down counter kubernetes.client.watches by resource: an informer
//     whose watch is down (its reflector waiting out a backoff, a watch that
//     keeps failing) shows as 0, and its controller sees no change while its
//     queue reads idle.
//
// The figures are also plain numbers, for the clients instrumented with
// one MeterProvider: ServerStats (how the API server answered them) and
// ReadWatchStats (their watch streams). The provider is what ties a
// program's parts together: a queue instrumented by package otelqueue with
// the same provider (its adaptive pool, Sizer and Inspector) reads the
// same counts, and a second program in the process, with a provider of its
// own, reads its own. Those instrumented with the global provider (no
// WithMeterProvider, before or after otel.SetMeterProvider) are one
// program, the default.
//
// Inside a reconcile attempt of a queue instrumented by package otelqueue
// with otelqueue.WithClientTime, a request made with the reconciler's
// context (or one derived from it) is also added to the attempt: the
// queue's workqueue.client.* histograms and counters and
// otelqueue.Instrumentation.ClientStats say how much of its reconciles'
// work time went to the limiter, to the API server and to Retry-After
// waits. A queue records that time only with the option (an adaptive
// worker pool, otelqueue.AdaptiveWorkers, reads it then, and sees only the
// work time without): instrumenting a client changes no queue, and a queue
// without the option records none of it, whatever clients its reconcilers
// use. The spans of a
// sampled attempt's requests, "retry after" included, need neither. A
// client used outside any reconcile (informers, a workload) works as
// before and only feeds the process-wide metrics: it starts no root spans.
//
// Clients built from the returned config — client-go clientsets
// (kubernetes.NewForConfig), dynamic clients, controller-runtime's
// client.New and manager (ctrl.Options through manager.New(cfg, ...)) —
// have the request budget they have without instrumentation: the config's
// own RateLimiter, shared as client-go shares it, or the token bucket
// client-go builds from QPS and Burst for each of them (whose waits are not
// measured: see Instrument).
package kubeclient
