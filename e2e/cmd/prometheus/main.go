// Command prometheus prints the path of Prometheus or promtool (its
// argument), built from the Go module proxy (e2e/tools/prometheus; about
// 8 to 19 minutes when cold, 33 s from a warm Go build cache) and cached in
// e2e/.bin or $OTELQUEUE_E2E_BIN_DIR, or the binary named by
// $OTELQUEUE_E2E_PROMETHEUS or $OTELQUEUE_E2E_PROMTOOL. Progress goes to
// stderr, the path alone to stdout, so that
//
//	promtool=$(cd e2e && go run ./cmd/prometheus promtool)
//
// gives make rules the promtool of the Prometheus the stack runs. Run it
// from e2e/.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/otelqueue/otelqueue/e2e"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) != 2 || (os.Args[1] != "prometheus" && os.Args[1] != "promtool") {
		fmt.Fprintln(os.Stderr, "usage: prometheus prometheus|promtool (prints the path of that binary, building it if it is not cached)")
		os.Exit(2)
	}
	prometheus, promtool, err := e2e.BuildPrometheus(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prometheus:", err)
		os.Exit(1)
	}
	if os.Args[1] == "promtool" {
		fmt.Println(promtool)
	} else {
		fmt.Println(prometheus)
	}
}
