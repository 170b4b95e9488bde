package kubeclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/otelqueue/otelqueue/kubeclient"
	"github.com/otelqueue/otelqueue/otelqueue"
	"github.com/otelqueue/otelqueue/scheduler"
)

// Instrument the config the reconciler's clients are built from, and the
// queue WithClientTime: the requests a reconcile makes with its ctx count
// for its queue, here read as plain numbers from ClientStats (the
// workqueue.client.* metrics say the same). The API server is a stand-in that answers the first request with
// 429 Too Many Requests, as API Priority and Fairness does when the
// controller's share is used up.
func ExampleInstrument() {
	throttled := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !throttled {
			throttled = true
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests})
			return
		}
		_ = json.NewEncoder(w).Encode(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
	}))
	defer srv.Close()

	cfg, err := kubeclient.Instrument(&rest.Config{Host: srv.URL}) // QPS 0: client-go's 5 and 10
	if err != nil {
		log.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}

	queue := scheduler.New(scheduler.Config[string]{Name: "configmaps"})
	inst, err := otelqueue.Instrument(queue, otelqueue.WithClientTime())
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Stop()
	done := make(chan struct{})
	runner, err := otelqueue.NewRunner(queue, 1, func(ctx context.Context, key string) (otelqueue.Result, error) {
		defer close(done)
		// ctx: the request counts for this attempt.
		_, err := clientset.CoreV1().ConfigMaps("default").Get(ctx, key, metav1.GetOptions{})
		return otelqueue.Result{}, err
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- runner.Run(ctx) }()
	queue.Add("web")
	<-done
	cancel()
	if err := <-stopped; err != nil { // waits for the attempt's end
		log.Fatal(err)
	}

	st := inst.ClientStats()
	fmt.Printf("attempts %d, requests %d, answered 429: %d\n", st.Attempts, st.Requests, st.Throttled)
	fmt.Println("waited out Retry-After:", st.RetryAfterWait > 0)
	// Output:
	// attempts 1, requests 2, answered 429: 1
	// waited out Retry-After: true
}

// ReadWatchStats tells a controller that sees no change from an idle one:
// an informer holds its watch open while it is idle, and none is open while
// its reflector waits to watch again. Here a watch of a stand-in API server
// that sends one event and then ends the stream, as a restarting API server
// does.
func ExampleReadWatchStats() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		cm, _ := json.Marshal(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "7"}})
		_ = json.NewEncoder(w).Encode(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: cm}})
	}))
	defer srv.Close()
	cfg, err := kubeclient.Instrument(&rest.Config{Host: srv.URL})
	if err != nil {
		log.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	// nil: the streams of the clients instrumented with the global
	// MeterProvider, as cfg was (no WithMeterProvider).
	before := kubeclient.ReadWatchStats(nil)
	w, err := clientset.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	ev := <-w.ResultChan()
	fmt.Println("event:", ev.Type)
	for range w.ResultChan() { // the server ended the stream
	}
	w.Stop()
	var now kubeclient.WatchStats = kubeclient.ReadWatchStats(nil)
	fmt.Printf("opened %d, ended %d, open now %d\n", now.Opened-before.Opened, now.Ended-before.Ended, now.Open-before.Open)
	// Output:
	// event: ADDED
	// opened 1, ended 1, open now 0
}
