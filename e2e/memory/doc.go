// Package memory runs the example app (example/app) for ten minutes at a
// constant load and checks that the memory it says its pod needs holds
// still: the Sizer's memory request (the summary line's pod part) and the
// process's otelqueue.memory.needed at minute 10 within 10% of minute 2. A
// sizing figure that grew with the time the process has run would be no
// sizing figure: the demo's used to climb without end (its embedded API
// server, in its process then, kept the last 10,000 to 20,000 writes).
//
// TestMemoryHoldsStill takes 10.5 minutes of wall time and little CPU:
// make test runs it beside the control-plane suite.
package memory
