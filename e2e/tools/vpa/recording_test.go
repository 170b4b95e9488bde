package main

import (
	"time"

	"github.com/otelqueue/otelqueue/bottleneck"
)

// The figures of testdata/inspector.json: the demo's inspector page after
// 60 s of `-churn 20 -burst-every 0`, recorded by this tool on 2026-12-06
// from example/app built at 100c64f:
//
//	/tmp/vpa -app /tmp/app -for 1m -out /tmp/vpa-record -- -churn 20 -burst-every 0
//	cp /tmp/vpa-record/inspector.json testdata/
const (
	wantQueue        = "configmaps"
	wantWorkers      = 2
	wantRun          = 1
	wantClass        = bottleneck.None
	wantCPURequest   = 0.08
	wantCPULimit     = 0.16
	wantPerReconcile = 2125763 * time.Nanosecond
	wantMemRequest   = uint64(13631488)
	wantMemLimit     = uint64(17825792)
	wantGOMEMLIMIT   = uint64(15728640)
	wantObjects      = 50
	wantOver         = 59788509234 * time.Nanosecond
)
