# otelqueue — build, test and benchmark every module.
#
#   make test    gofmt and staticcheck (make lint), unit tests of every module
#                with -race, the consumer test (release/), the fuzz seeds plus
#                a short fuzz run, the demo's memory over ten minutes (make
#                memory), the Prometheus rules' unit tests, the control-plane
#                suite (make test-apiserver) and the end-to-end suite (e2e/)
#   make test-apiserver   the tests that need a real kube-apiserver and etcd
#                (controllerruntime's TestAPIServer*, e2e/apiserver, and
#                e2e/kubebuilder: the README's controller-runtime steps applied
#                to a kubebuilder operator), on binaries built from the Go
#                module proxy or $KUBEBUILDER_ASSETS
#   make controlplane     build (or find) those binaries and print their directory
#   make lint    gofmt -l and staticcheck over every module, and the public surface (make api)
#   make rules   promtool check and unit tests of example/prometheus/rules.yml
#   make release VERSION=vX.Y.Z   set that version everywhere, test it, print the tags
#   make api     the exported names of each public package (issue 38 holds
#                otelqueue to 60 and all to 180), those no Example or doc uses,
#                and the API changes since the last release (release/apidiff.sh)
#   make bench   the bench/ module, several -count runs, a benchstat table
#   make demo    the example controller on its embedded fake cluster (ARGS=... for flags)
#   make demo-controller-runtime   the same with controller-runtime (example/controllerruntime)
#   make stack   Jaeger, a collector and Prometheus on 127.0.0.1, for make demo to export to

GO        ?= go
# -trimpath for every go command: a compiled package then does not depend on
# where its module cache is, so the consumer test, which builds in a fresh
# module cache, reuses what vet compiled instead of compiling client-go and
# controller-runtime again (docs/testing.md#how-long).
GOFLAGS += -trimpath
export GOFLAGS
# The fuzz budget is a number of executions, not a duration: a duration-based
# -fuzztime races Go's fuzz coordinator against its own deadline and can fail
# with a bare "context deadline exceeded" and no crasher (golang/go#75804,
# fixed in Go 1.27). How long 150000 executions take: docs/testing.md#fuzz.
FUZZTIME  ?= 150000x
# make bench: BENCH selects benchmarks (a -bench regexp), BENCHTIME is go
# test's -benchtime, COUNT the number of rounds (how long the defaults take:
# docs/testing.md#how-long), BENCHFLAGS go to cmd/ratios (-fail: exit 1
# when a target is missed).
BENCHTIME  ?= 1s
COUNT      ?= 6
BENCH      ?= .
BENCHFLAGS ?=
BENCHSTAT  ?= $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

# Modules whose unit tests `make test` runs, root first; e2e/ has a target
# of its own. example/ is the examples' module (the two example controllers,
# their embedded API server and telemetry set-up), so that the root go.mod
# requires only what the library packages import.
# e2e/tools/vpa is the check of the pod size against the Vertical Pod
# Autoscaler's recommender (docs/scaling.md): its tests pin the
# recommender's arithmetic.
MODULES := . bench controllerruntime example e2e/tools/vpa
# staticcheck, pinned (2026.x, built for Go 1.26), run through the module
# proxy. Its modules: all but the other e2e/tools/*, which only wrap pinned
# third-party builds (gofmt checks them; loading their dependencies would
# cost a Jaeger and a collector build).
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
LINT_MODULES := $(MODULES) e2e release
# Room for the cold builds of Jaeger and the collector (docs/testing.md#how-long).
E2E_TIMEOUT ?= 45m
# Room for a cold build of kube-apiserver (how long: docs/testing.md#a-real-control-plane).
APISERVER_TIMEOUT ?= 45m
# e2e/kubebuilder builds a kubebuilder operator twice and runs its tests:
# room for compiling controller-runtime, client-go and ginkgo cold (18.5
# minutes with an empty build cache, docs/testing.md).
KUBEBUILDER_TIMEOUT ?= 45m
# Prints the directory of kube-apiserver and etcd: $KUBEBUILDER_ASSETS when
# set, otherwise both built from the Go module proxy and cached in e2e/.bin.
CONTROLPLANE = cd e2e && $(GO) run ./cmd/controlplane
# Prints the path of promtool 3.16, built from the Go module proxy and
# cached in e2e/.bin ($OTELQUEUE_E2E_PROMTOOL names another).
PROMTOOL = cd e2e && $(GO) run ./cmd/prometheus promtool

.PHONY: api test prebuild deps unit consumer fuzz memory rules e2e test-apiserver controlplane bench bench-compare demo demo-controller-runtime stack vet lint release

# The stages of make test, in order; each prints how long it took, so that
# a CI log says where the time went (docs/testing.md#how-long).
TEST_STAGES := deps vet rules unit test-apiserver e2e memory
# The checks that need no server run beside the stages: when make
# test-apiserver starts, lint, consumer and fuzz run one after the other in
# the background at the lowest CPU priority (nice 19), in the cores the
# tests on a real control plane leave idle (they mostly wait on servers),
# and make test waits for them before make e2e, whose last test wants the
# machine alone. Not earlier: beside make unit, whose race-instrumented
# builds take both cores, they made it far longer (docs/testing.md#how-long
# has the runs). Their output goes to
# e2e/.results/checks.log, printed when they end; one that fails fails make
# test. make memory is a stage of its own, last: it measures the demo's
# pod request at a constant load, which a process at nice 19 beside make
# test-apiserver does not get (its collector ran late and the request's
# peak crept from 14 to 16 MiB in ten minutes).
TEST_CHECKS := lint consumer fuzz

# Meanwhile make prebuild builds the binaries of the later stages at the
# same lowest priority (e2e/.results/prebuild.log); a stage that needs one
# still being built waits for it. OTELQUEUE_NO_PREBUILD=1 leaves each build
# to its stage; OTELQUEUE_SERIAL_CHECKS=1 runs the checks as stages.
test:
	@mkdir -p e2e/.results; pids=""; checks=""; stages="$(TEST_STAGES)"; \
	if [ -n "$$OTELQUEUE_SERIAL_CHECKS" ]; then stages="deps vet $(TEST_CHECKS) rules unit test-apiserver e2e memory"; fi; \
	trap 'for p in $$pids; do kill -- -$$p 2>/dev/null; done' EXIT; \
	if [ -z "$$OTELQUEUE_NO_PREBUILD" ]; then \
		setsid nice -n 19 $(MAKE) --no-print-directory prebuild > e2e/.results/prebuild.log 2>&1 & pids="$$!"; \
		echo "== make prebuild, in the background at nice 19 (e2e/.results/prebuild.log)"; \
	fi; \
	total=$$(date +%s); for stage in $$stages; do \
		if [ "$$stage" = e2e ] && [ -n "$$checks" ]; then \
			echo "== waiting for make $(TEST_CHECKS)"; \
			if wait $$checks; then cat e2e/.results/checks.log; else cat e2e/.results/checks.log; echo "== make $(TEST_CHECKS) failed (above)"; exit 1; fi; \
			checks=""; \
		fi; \
		if [ "$$stage" = test-apiserver ] && [ -z "$$OTELQUEUE_SERIAL_CHECKS" ]; then \
			setsid nice -n 19 sh -c 'for c in $(TEST_CHECKS); do s=$$(date +%s); $(MAKE) --no-print-directory $$c || { echo "== make $$c failed"; exit 1; }; echo "== make $$c: $$(( $$(date +%s) - s )) s (in the background)"; done' > e2e/.results/checks.log 2>&1 & checks=$$!; pids="$$pids $$checks"; \
			echo "== make $(TEST_CHECKS), in the background at nice 19 (e2e/.results/checks.log)"; \
		fi; \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$stage || { echo "== make $$stage failed after $$(( $$(date +%s) - start )) s"; exit 1; }; \
		echo "== make $$stage: $$(( $$(date +%s) - start )) s"; \
	done; echo "== make test: $$(( $$(date +%s) - total )) s"

# Every binary make test runs (promtool, Prometheus, etcd, kube-apiserver,
# the collector, Jaeger), built into e2e/.bin if not cached there
# (e2e/cmd/prebuild).
prebuild:
	cd e2e && $(GO) run ./cmd/prebuild

# What the tests need from Debian and a fresh machine lacks: docker-compose
# validates docker-compose.yaml (e2e); headless Chromium loads the queue
# inspector's page (e2e/inspector_test.go); git applies the README's diffs
# to a kubebuilder operator (e2e/kubebuilder; a clone has it, a tarball's
# machine may not). Prometheus and promtool are built from the Go module
# proxy (PROMTOOL below, and the e2e stack).
deps:
	@missing=""; \
	command -v docker-compose >/dev/null || missing="$$missing docker-compose"; \
	command -v git >/dev/null || missing="$$missing git"; \
	command -v chromium-headless-shell >/dev/null || missing="$$missing chromium-headless-shell"; \
	if [ -n "$$missing" ]; then \
		echo "== installing$$missing with apt-get"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

vet:
	@for m in $(MODULES) e2e release; do echo "== go vet ($$m)"; (cd $$m && $(GO) vet ./...) || exit 1; done

# The tests on a real control plane are test-apiserver's.
unit:
	@for m in $(MODULES); do echo "== go test -race ($$m)"; (cd $$m && $(GO) test -race -count=1 -skip '^TestAPIServer' ./...) || exit 1; done
	@echo "== go test -race with an adaptive worker pool on every Runner and controller-runtime queue of the tests (OTELQUEUE_TEST_ADAPTIVE=1)"
	@OTELQUEUE_TEST_ADAPTIVE=1 $(GO) test -race -count=1 ./otelqueue/ && \
	(cd controllerruntime && OTELQUEUE_TEST_ADAPTIVE=1 $(GO) test -race -count=1 -skip '^TestAPIServer' .)

controlplane:
	@$(CONTROLPLANE)

# The tests on a real kube-apiserver and etcd, started on 127.0.0.1 by
# envtest: controllerruntime's integration tests on a real cache, the
# two examples run with -kubeconfig (e2e/apiserver, which prints a table of
# the examples on the real control plane and on the fake cluster), and
# otelqueue adopted into a kubebuilder v4 operator by the README's steps
# (e2e/kubebuilder, which prints its manager's metrics before and after;
# after e2e/apiserver, not beside it: its builds would take the cores that
# e2e/apiserver's measured runs need). A missing binary fails them here
# rather than skipping them.
test-apiserver:
	@assets=$$($(CONTROLPLANE)) || exit 1; \
	export KUBEBUILDER_ASSETS="$$assets" OTELQUEUE_REQUIRE_APISERVER=1; \
	echo "== go test -race -run '^TestAPIServer' (controllerruntime, KUBEBUILDER_ASSETS=$$assets)"; \
	(cd controllerruntime && $(GO) test -race -count=1 -run '^TestAPIServer' ./...) || exit 1; \
	echo "== the same with an adaptive worker pool on every controller-runtime queue (OTELQUEUE_TEST_ADAPTIVE=1)"; \
	(cd controllerruntime && OTELQUEUE_TEST_ADAPTIVE=1 $(GO) test -race -count=1 -run '^TestAPIServer' .) || exit 1; \
	echo "== go test -race (e2e/apiserver)"; \
	mkdir -p e2e/.results && cd e2e && \
	OTELQUEUE_E2E_REPORT=$(CURDIR)/e2e/.results/apiserver.md $(GO) test -race -count=1 -timeout $(APISERVER_TIMEOUT) ./apiserver/... && \
	echo "== the examples on the real control plane and on the embedded API server (e2e/.results/apiserver.md)" && \
	cat .results/apiserver.md && \
	echo "== go test -race (e2e/kubebuilder: the README's controller-runtime steps applied to a kubebuilder v4 operator)" && \
	OTELQUEUE_E2E_REPORT=$(CURDIR)/e2e/.results/kubebuilder.md $(GO) test -race -count=1 -timeout $(KUBEBUILDER_TIMEOUT) ./kubebuilder/ && \
	cat .results/kubebuilder.md

# gofmt over every Go file git tracks or would track (so not the module
# cache of a CI that keeps it in the tree), then staticcheck per module.
lint:
	@echo "== gofmt -l"; out=$$(git ls-files -co --exclude-standard -- '*.go' | xargs gofmt -l); \
	if [ -n "$$out" ]; then echo "these files need gofmt -w:"; echo "$$out"; exit 1; fi
	@for m in $(LINT_MODULES); do echo "== staticcheck ($$m)"; (cd $$m && $(STATICCHECK) ./...) || exit 1; done
	@echo "== the public surface: otelqueue at most 60 names, all at most 180, each used by an Example or a doc (make api)"
	@cd release && $(GO) run ./cmd/apisurface -undocumented -max-otelqueue 60 -max-total 180

# The published modules at the version of internal/semconv/version.go, fetched with
# go get from a file-based module proxy by a fresh module that builds and
# runs a client-go and a controller-runtime controller (release/).
consumer:
	cd release && $(GO) test -count=1 -timeout 30m ./...

# The public surface: exported top-level names per package, the names no
# Example function and no doc uses, and the API changes since the last
# release. make lint fails when a name is unused, otelqueue exports more
# than 60 names or the public packages more than 180 (issue 38's bounds).
api:
	@cd release && $(GO) run ./cmd/apisurface -undocumented || true
	@GO=$(GO) bash release/apidiff.sh

# make release VERSION=vX.Y.Z: see docs/releasing.md.
release:
	release/release.sh $(VERSION)

# The demo for ten minutes at a constant load: the memory it says its pod
# needs holds still (e2e/memory). Mostly waiting: make test runs it beside
# the control-plane suite, with the other checks.
memory:
	cd e2e && $(GO) test -count=1 -timeout 20m ./memory/

# The seed corpus runs with the unit tests; this adds a short coverage-guided run.
fuzz:
	$(GO) test ./scheduler -run '^$$' -fuzz '^FuzzModel$$' -fuzztime $(FUZZTIME)

# The recording and alerting rules (example/prometheus/rules.yml): first
# that it and queue-figures.sh are their rendering from their templates and
# the classifier's table (package bottleneck), and that both tests have the
# table's boundary cases (example/prometheus's Go test, with the renderer
# internal/rulesgen; cd example && go test ./prometheus -update regenerates
# them); syntax and PromQL checked (with
# docker-compose's Prometheus config, which loads them), then
# rules_test.yml run against them; then queue-figures.sh, which computes the
# same figures from two scrapes, on the same cases (queue-figures_test.sh,
# testdata/). promtool is that of the Prometheus the
# e2e stack runs (3.16, built from the Go module proxy and cached in
# e2e/.bin: 8 to 19 minutes cold, docs/testing.md#how-long).
rules:
	cd example && $(GO) test -count=1 ./prometheus/
	@promtool=$$($(PROMTOOL)) || exit 1; \
	echo "== $$promtool check config example/prometheus/prometheus.yml"; \
	$$promtool check config example/prometheus/prometheus.yml && \
	echo "== promtool test rules rules_test.yml" && \
	(cd example/prometheus && $$promtool test rules rules_test.yml)
	sh example/prometheus/queue-figures_test.sh
	sh example/prometheus/fleet-figures_test.sh

# The real stack on loopback: Jaeger, a collector and Prometheus built from
# the Go module proxy (cached in e2e/.bin), and the example app; it prints
# TestNativeHistograms' table of quantiles, classic against native.
e2e:
	mkdir -p e2e/.results && rm -f e2e/.results/native-histograms.md
	cd e2e && OTELQUEUE_E2E_RESULTS=$(CURDIR)/e2e/.results $(GO) test -race -count=1 -timeout $(E2E_TIMEOUT) $$($(GO) list ./... | grep -v -e '/e2e/apiserver$$' -e '/e2e/kubebuilder$$' -e '/e2e/cpulimit$$' -e '/e2e/memory$$')
	@echo "== go test -race (e2e/cpulimit: the demo in a cgroup of half a core, alone on the machine)"
	cd e2e && OTELQUEUE_REQUIRE_CGROUP=$${CI:+1} OTELQUEUE_E2E_RESULTS=$(CURDIR)/e2e/.results $(GO) test -race -count=1 -timeout 10m ./cpulimit/
	@echo "== quantiles from classic and from native buckets, on Prometheus 3.16 (e2e/.results/native-histograms.md)"
	@cat e2e/.results/native-histograms.md

# The test binary is built once and run COUNT times, each round running
# every benchmark once (go test -count would run each one COUNT times in a
# row): on a busy 2-core machine a burst of other work then spreads over all
# variants instead of landing on one. Ratios come from one such run only:
# between runs, or machines, they mean nothing.
bench:
	@mkdir -p bench/results
	cd bench && $(GO) test -c -o results/bench.test .
	cd bench && : > results/bench.txt && bash -o pipefail -c 'for i in $$(seq $(COUNT)); do echo "== round $$i of $(COUNT)" >&2; ./results/bench.test -test.run "^$$" -test.bench "$(BENCH)" -test.benchmem -test.benchtime $(BENCHTIME) | tee -a results/bench.txt || exit 1; done'
	cd bench && bash -o pipefail -c "$(BENCHSTAT) -table .name -col /variant results/bench.txt | tee results/benchstat.txt"
	cd bench && bash -o pipefail -c "$(GO) run ./cmd/ratios $(BENCHFLAGS) results/bench.txt | tee results/ratios.txt"
	$(MAKE) --no-print-directory bench-compare

# How far each variant moved since the last release (BASE, a git ref: the
# newest commit "release vX.Y.Z", release/lastrelease.sh): both bench binaries built, run in COUNT interleaved
# rounds, compared by benchstat, and gated by bench/cmd/moved, which fails
# when one of otelqueue's variants got slower by more than 2% with
# significance or allocates more (bench/compare.sh). make bench ends with it.
BASE ?= $(shell bash release/lastrelease.sh)
bench-compare:
	COUNT=$(COUNT) BENCHTIME=$(BENCHTIME) GO=$(GO) BENCHSTAT="$(BENCHSTAT)" bash bench/compare.sh $(BASE) '$(if $(filter .,$(BENCH)),^BenchmarkLifecycle$$,$(BENCH))'

# The example controller on its embedded fake cluster, until Ctrl-C. Built
# into bin/ (git ignores it) and run, not `go run`: after a Ctrl-C `go run`
# exits 1 however the program ended, so make reported "Error 1" for a clean
# stop. Now Ctrl-C stops the app, which flushes and exits 0, and make prints
# no error (GNU make then ends itself with the SIGINT, as after any Ctrl-C:
# status 130 in the shell); an app that fails exits 1 and fails make.
demo:
	cd example && $(GO) build -o ../bin/demo ./app
	exec bin/demo $(ARGS)

# The same on controller-runtime: a manager and a builder-made controller
# with otelqueue's queue (example/controllerruntime).
demo-controller-runtime:
	cd example && $(GO) build -o ../bin/demo-controller-runtime ./controllerruntime
	exec bin/demo-controller-runtime $(ARGS)

# The native loopback stack (Jaeger, collector, Prometheus) for users without
# Docker; it prints the URLs and how to point make demo at it.
stack:
	cd e2e && $(GO) run ./cmd/stack
