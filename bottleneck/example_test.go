package bottleneck_test

import (
	"fmt"
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// Example_window classifies a window made of two readings of a queue's
// numbers ten seconds apart: scheduler.Stats (adds, coalesced adds,
// retries, delayed adds), the workers' busy time and finished reconciles
// (a Runner's Stats), and the process's CPU (package procstat: two Reads
// and procstat.Between). Here the process used all of its half core.
func Example_window() {
	w := bottleneck.Window{
		Duration: 10 * time.Second,
		Workers:  8,
		Adds:     300, Retries: 20, DelayedAdds: 20, // RequeueAfter: no errors
		Busy: 79 * time.Second, Reconciles: 50,
		CPU: bottleneck.CPUUse{Known: true, Used: 0.49, Cores: 0.5, Throttled: 0.97, ThrottledKnown: true},
	}
	v := w.Classify()
	fmt.Println("class:", v.Class)
	fmt.Println("Little's law:", w.LittlesLaw(), "recommended:", v.Recommend(w.Workers, w.LittlesLaw()))
	s := w.Size()
	fmt.Printf("CPU per reconcile %v, cores needed %.1f\n", s.CPUPerReconcile, s.Cores)
	// Output:
	// class: cpu
	// Little's law: 68 recommended: 8
	// CPU per reconcile 98ms, cores needed 4.2
}
