# otelqueue — build, test and benchmark every module.
#
#   make test    unit tests of every module with -race, the fuzz seeds plus a
#                short fuzz run, and the end-to-end suite (e2e/)
#   make bench   the bench/ module, several -count runs, a benchstat table
#   make demo    the example controller on its embedded fake cluster (ARGS=... for flags)

GO        ?= go
FUZZTIME  ?= 20s
BENCHTIME ?= 1s
COUNT     ?= 6
BENCH     ?= .
BENCHSTAT ?= $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

# Modules whose tests `make test` runs, root first.
MODULES := . bench

.PHONY: test unit fuzz bench demo vet

test: vet unit fuzz

vet:
	@for m in $(MODULES); do echo "== go vet ($$m)"; (cd $$m && $(GO) vet ./...) || exit 1; done

unit:
	@for m in $(MODULES); do echo "== go test -race ($$m)"; (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done

# The seed corpus runs with the unit tests; this adds a short coverage-guided run.
fuzz:
	$(GO) test ./scheduler -run '^$$' -fuzz '^FuzzModel$$' -fuzztime $(FUZZTIME)

bench:
	@mkdir -p bench/results
	cd bench && $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -count $(COUNT) . | tee results/bench.txt
	cd bench && $(GO) run ./cmd/ratios results/bench.txt

# The example controller on its embedded fake cluster, until Ctrl-C.
demo:
	$(GO) run ./example/app $(ARGS)
