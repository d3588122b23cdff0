# Continuum: `make demo` runs the main job (after the core setup only: the quickstart needs no
# system's stack), `make test` runs the tests (after `make setup`: every stack).
GO      ?= go
# -trimpath: file names in what go builds are module-relative, so a package's compile, vet and
# staticcheck results do not depend on where the clone is and a fresh clone (CI's) finds them in
# the caches an earlier clone filled. Without it the clone's directory is part of go's cache keys:
# a fresh clone recompiled and re-vetted the whole module under -race (measured in issue 43's
# notes).
export GOFLAGS := -trimpath $(GOFLAGS)
BIN     := bin/continuum
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/continuum-project/continuum/internal/version.Commit=$(COMMIT)
OUT     ?= results

.PHONY: setup setup-core build build-continuum lint lint-gofmt lint-vet lint-staticcheck lint-tidy lint-ruff lint-mypy vulncheck test test-dev test-python test-python-functions test-python-fl test-results-shipped test-kubernetes test-short soak demo bench-testbed clean proto proto-check results-schema results-schema-check

# The core (Debian packages of the testbed and the report, Go): scripts/setup.sh. Each system's
# stack installs on first use (`continuum setup STACK`, internal/setup); `make setup` installs all
# of them, with a progress line each (`bin/continuum setup --status` shows what is there).
setup-core:
	./scripts/setup.sh

setup: setup-core build
	$(BIN) setup all

# Static binaries (no cgo): the same file runs on the host, in the testbed's nodes and as the only
# program in the container images (`continuum image build`, which has no libc to offer).
build: build-continuum
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS) -s -w" -o bin/continuum-proxy ./cmd/continuum-proxy

# The main binary alone: all `make demo` needs.
build-continuum:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/continuum

# The lint gate, the first step of `make test` (so of .ci/run); each check names its fix when it
# fails. Needs `make setup` (the test stack builds staticcheck; the venvs carry ruff and mypy).
#   gofmt -l                  nothing unformatted (fix: gofmt -w FILE)
#   go vet ./...
#   staticcheck ./...         pinned in tools/lint; checks: staticcheck.conf
#   go mod tidy drift         tidy runs on a copy of the module (fix: go mod tidy, commit go.mod/go.sum)
#   ruff check, ruff format --check over python/
#   mypy --strict             continuum_results in the functions venv, continuum_fl in the FL venv
#                             (torch, flwr); config in python/pyproject.toml
# govulncheck is `make vulncheck`, not part of the gate: it runs offline (the test stack indexes the
# Go vulnerability database from the module proxy, tools/lint), but it reports the standard
# library's vulnerabilities fixed after the pinned Go release (13 at go1.26.8, fixed in go1.26.9),
# which only a Go upgrade fixes; a gate that is red until then would be ignored.
STATICCHECK := .tools/bin/staticcheck
GOVULNCHECK := .tools/bin/govulncheck
LINTS := lint-gofmt lint-vet lint-staticcheck lint-tidy lint-ruff lint-mypy
# Every check runs (make -k), so one failure does not hide the next; any failure fails lint.
# They run side by side (-j, each one's output kept together): vet and staticcheck each load
# every package, and the rest wait on them otherwise.
lint:
	@$(MAKE) --no-print-directory -k -j3 --output-sync=target $(LINTS) || { echo "lint: FAILED (the checks above say what to fix)" >&2; exit 1; }

lint-gofmt:
	@echo "lint: gofmt -l" && out=$$(gofmt -l $$(git ls-files '*.go')) && \
		if [ -n "$$out" ]; then echo "lint: gofmt: not formatted (fix: gofmt -w FILE):" >&2; echo "$$out" >&2; exit 1; fi

lint-vet:
	@echo "lint: go vet ./..." && $(GO) vet ./... || { echo "lint: go vet failed (above)" >&2; exit 1; }

lint-staticcheck:
	@echo "lint: staticcheck ./..." && { test -x $(STATICCHECK) || { echo "lint: $(STATICCHECK) missing: run make setup (or bin/continuum setup test)" >&2; exit 1; }; } && \
		$(STATICCHECK) ./... || { echo "lint: staticcheck found the problems above (where a check is wrong for one case: a //lint:ignore CHECK reason line)" >&2; exit 1; }

lint-tidy:
	@echo "lint: go mod tidy drift" && tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		cp go.mod go.sum "$$tmp/" && $(GO) mod tidy -modfile="$$tmp/go.mod" && \
		if ! diff -u go.mod "$$tmp/go.mod" >&2 || ! diff -u go.sum "$$tmp/go.sum" >&2; then \
			echo "lint: go.mod/go.sum are not tidy (fix: go mod tidy, and commit both)" >&2; exit 1; fi

lint-ruff:
	@echo "lint: ruff check, ruff format --check" && cd python && ../$(PYTHON) -m ruff check . && ../$(PYTHON) -m ruff format --check . || \
		{ echo "lint: ruff failed (fix: ruff check --fix . and ruff format . in python/)" >&2; exit 1; }

# mypy's cache lives outside the clone (one per venv: their third-party packages differ), so a
# fresh clone checks only what changed.
MYPY_CACHE := $(HOME)/.cache/continuum/mypy
lint-mypy:
	@echo "lint: mypy --strict" && cd python && ../$(PYTHON) -m mypy --cache-dir $(MYPY_CACHE)/functions src/continuum_results && \
		../$(PYTHON_FL) -m mypy --cache-dir $(MYPY_CACHE)/fl src/continuum_fl || { echo "lint: mypy found type errors (above)" >&2; exit 1; }

vulncheck:
	$(GOVULNCHECK) -db file://$(CURDIR)/.tools/vulndb ./...

# Unit and integration tests (network namespaces, delays, faults, cleanup, the Chromium report test).
# Needs root; tests that need root fail rather than skip when CONTINUUM_REQUIRE_ROOT=1. Three
# groups, all always run (make fails if any failed):
# 1. All packages but SERIAL_TESTS and HOST_TESTS, TEST_P at a time, the longest (TEST_FIRST)
#    first since the pass ends with its slowest package. Their tests assert behaviour and
#    ordering and wait with deadlines; most of their time is spent waiting on processes and
#    sockets. This pass also compiles, in parallel, what the serial pass needs.
# 1b. Beside it, the host lanes: HOST_TESTS (clusters), with the tour's cluster section
#    (TOUR_CLUSTER) between their packages, and HOST_TESTBED_TESTS (testbeds) then the rest of
#    the tour (TOUR_RUN); their tests time nothing (below).
# 1c. Once the parallel pass is done, beside what is left of 1b: $(2) (make test: Python); then
#    the wait for 1b, whose testbeds' lane ends with HOST_RUN (tests of serial packages that
#    time nothing).
# 2. Then SERIAL_TESTS one at a time (-p 1), alone: packages with tests that time delays, rates or
#    latencies against a budget (testbed/fabric, netbench, loadgen, httptarget, httpecho,
#    kv/replication's linger, kv/server's stall bound under compaction (SERIAL_RUN below),
#    shareddata/freshness, experiment), that bring up testbeds and measure on them
#    (cmd/continuum, experiment, testbed; the README's tour is TOUR_RUN, in 1b), or that
#    render in Chromium (report, proxy/kinds, stream/rtdb's dashboard: SERIAL_RUN): the
#    delay-accuracy tests must not share the 2 CPUs with a Chromium render or with other
#    packages. A new package goes here only if it is of one of these kinds.
# GORACE: a -race binary sleeps 1 s before exiting (atexit_sleep_ms=1000), a minute over all the
# packages; by then every test has returned and been checked for races by package testing.
# Each pass runs through testtime (tools/testtime): go test's usual lines, the output of whatever
# failed in full, then a table of every package's time, result and test count, slowest first,
# with its compile and link time (-debug-actiongraph), and the pass's build totals. TEST_JSON=DIR
# keeps the raw -json streams there (parallel.json, serial.json) to compare runs.
TEST_P       ?= 3
# TEST_FIRST: the parallel pass's slowest packages, slowest first, from its table (issue 43:
# aggregator 429 s, mvcc 267, compat 263, oci 250, archive 110, baselines 102, faas/gateway 87,
# shareddata 79, fl/orchestrator 77, faas 65, streamload 58, controlplane 52, baselines/kinds 51,
# kvbench 50 with TEST_P=3 on 2 cores, before aggregator's and bridge's tests shared a Kafka
# broker; one run on the shared machine); oci and archive, left to their place, started 9 and
# 10 minutes in, aggregator (6th in the old list) 5 minutes in. kv/server's tests, 234 s in the
# serial pass, now run here but for SERIAL_RUN.
TEST_FIRST   := ./internal/stream/aggregator ./internal/stream/rtdb ./internal/kv/mvcc ./internal/kv/compat ./internal/kv/server \
	./internal/app/oci ./internal/archive ./internal/baselines ./internal/faas/gateway ./internal/shareddata \
	./internal/fl/orchestrator ./internal/faas ./internal/stream/streamload ./internal/stream/bridge \
	./internal/kubernetes/controlplane ./internal/baselines/kinds ./internal/kv/kvbench
SERIAL_TESTS := ./cmd/continuum ./internal/experiment ./internal/testbed/... \
	./internal/netbench ./internal/loadgen ./internal/loadgen/httptarget ./internal/httpecho \
	./internal/kv/replication ./internal/shareddata/freshness ./internal/report ./internal/proxy/kinds
# HOST_TESTS: packages that bring up a cluster or testbeds (host state, one at a time) but time
# nothing against a budget: they run one at a time beside the parallel pass, whose packages make
# no network namespaces, links, cgroups under /continuum or firewall rules (the cluster's host
# comparison leaves out mounts under other tests' temporary directories). Their tests wait on
# daemons and pods, at 18-48% of the CPUs alone: beside the parallel pass they cost it less than
# the 210 s they took in the serial pass (issue 43's table).
# Two lanes: the clusters' packages one at a time, the tour's cluster section (TOUR_CLUSTER)
# between them, and beside them the packages with testbeds only (HOST_TESTBED_TESTS), then the
# rest of the tour. The cluster package compares the host's network namespaces, links and
# cgroups before and after its clusters, so it starts once the testbeds' lane is done:
# HOST_TESTS' first package and TOUR_CLUSTER run before, the rest (the cluster package) after.
HOST_TESTS   := ./internal/kubernetes/kubeplatform ./internal/kubernetes/cluster
HOST_TESTBED_TESTS := ./internal/app/kinds ./internal/kv/nemesis
# TOUR_RUN: the README's tour (TestREADMETour in cmd/continuum, a SERIAL_TESTS package, which
# the serial pass then skips). Its sections run side by side and time nothing (a bench's
# verdict is a report, not a failure), and its Kubernetes block brings up a cluster, so it runs
# in the host lanes (TOUR_CLUSTER below). In the serial pass it took 116 s at 52% of the CPUs, then the rest of
# that pass ran at 16% (a fresh-clone run at 8270597: serial pass 297 s of 747).
TOUR_RUN_PKG := ./cmd/continuum
TOUR_RUN     := ^TestREADMETour$$
# TOUR_CLUSTER: the tour's section that brings up a cluster (its Kubernetes block, joined with the
# compose line whose images it loads) runs in the clusters' lane; the rest of the tour (testbeds,
# servers, benches: about 80 s) runs at the end of the testbeds' lane, beside the clusters'.
# TestREADMETourSections checks that this pattern names the section with `cluster up`.
TOUR_CLUSTER := ^TestREADMETour$$/^sections$$/^bin$$/^continuum_image_build_--out_images$$
# HOST_RUN: tests of SERIAL_TESTS packages that time nothing and may share the CPUs: the
# testbeds' lane runs them in HOST_RUN_PKGS at its end (after it has let the cluster package
# start: they make no testbeds), the serial pass skips them (so their names must be the
# module's only ones). After the parallel pass they took 60-78 s, on the path to the serial
# pass (fresh-clone runs at 35ec5d0 and 47c1929). experiment: the Chromium render of every shipped scenario's
# report (44 s of the serial pass).
HOST_RUN_PKGS := ./internal/experiment
HOST_RUN      := ^TestShippedScenarioReportsFitThePage$$
# SERIAL_RUN: tests of the kinds above in packages whose other tests are not: the parallel pass
# skips them (-skip, so their names must be the module's only ones), the serial pass then runs
# them alone in SERIAL_RUN_PKGS. kv/server: its stall bound under compaction and its
# authentication timing ratio; its 58 other tests wait on sockets, and took 220 s of the serial
# pass (issue 43's table). stream/rtdb: its dashboard render in Chromium; its other tests (the
# Firebase SDKs under node included) assert protocol behaviour, and took 346 s of the serial pass.
SERIAL_RUN_PKGS := ./internal/kv/server ./internal/stream/rtdb
SERIAL_RUN      := ^(TestCompactionAndDefragUnderLoad|TestAuthTimingUnknownUserVsWrongPassword|TestDashboardInChromium)$$
# Test binaries are linked without DWARF (-ldflags=-w). go test links the binaries it runs so
# already; the serial pass's, built with go test -c (SERIAL_PREBUILD), would keep it: a third
# more link CPU (kv/compat: 3.4 s of user time, 2.4 without). Panics and race reports name
# functions, files and lines from the runtime's own tables, not DWARF.
GO_TEST_FLAGS := -race -ldflags=-w
TEST_ENV     := CONTINUUM_BIN=$(CURDIR)/$(BIN) CONTINUUM_REQUIRE_ROOT=1 GORACE=atexit_sleep_ms=50
TEST_JSON    ?=
TESTTIME     := bin/testtime
# The passes; $(1) is added to every go test command line (make test: -count=1), $(2) runs
# after the parallel pass beside HOST_RUN (make test: the Python tests; it sets st=1 on
# failure), $(3) set runs the serial pass from prebuilt binaries (make test; make test-dev
# keeps go test's cache). A failure to set up (testtime, the package lists) ends the recipe.
define GO_TEST_PASSES
	@$(GO) build -o $(TESTTIME) ./tools/testtime || exit 1; \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && json=$(if $(TEST_JSON),$(TEST_JSON),$$tmp) && mkdir -p "$$json" && \
	serial=$$($(GO) list $(SERIAL_TESTS)) && first=$$($(GO) list $(TEST_FIRST)) && \
	host=$$($(GO) list $(HOST_TESTS) $(HOST_TESTBED_TESTS)) && hostfirst=$$($(GO) list $(firstword $(HOST_TESTS))) && \
	hostrest=$$($(GO) list $(wordlist 2,99,$(HOST_TESTS))) && \
	parallel="$$first $$($(GO) list ./... | grep -vxF "$$serial" | grep -vxF "$$first" | grep -vxF "$$host")" || exit 1; \
	{ ( $(TEST_ENV) $(TESTTIME) -title "host lane, testbeds" -actiongraph $$tmp/host-testbeds.graph -json "$$json/host-testbeds.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/host-testbeds.graph $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m $(HOST_TESTBED_TESTS) \
		> $$tmp/host-testbeds.out 2>&1; b=$$?; \
	  $(TEST_ENV) $(TESTTIME) -title "host lane, testbeds: TOUR_RUN but TOUR_CLUSTER" -actiongraph $$tmp/tour.graph -json "$$json/tour.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/tour.graph $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m -run '$(TOUR_RUN)' -skip '$(TOUR_CLUSTER)' \
		$(TOUR_RUN_PKG) >> $$tmp/host-testbeds.out 2>&1 || b=1; echo $$b > $$tmp/host-testbeds.rc; \
	  $(TEST_ENV) $(TESTTIME) -title "host lane, testbeds: HOST_RUN" -json "$$json/host-run.json" -- \
		$(GO) test -json $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m -run '$(HOST_RUN)' $(HOST_RUN_PKGS) > $$tmp/host-run.out 2>&1; \
	  echo $$? > $$tmp/host-run.rc ) & } && \
	{ ( h=0; $(if $(3),$(HOST_PREBUILD)) \
	  $(TEST_ENV) $(TESTTIME) -title "host lane" -actiongraph $$tmp/host.graph -json "$$json/host.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/host.graph $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m $$hostfirst || h=1; \
	  $(if $(3),$(HOST_PREBUILT_REST),$(HOST_GO_TEST_REST)) \
	  exit $$h ) > $$tmp/host.out 2>&1 & } && \
	hostpid=$$! && \
	echo "$(GO) test $(GO_TEST_FLAGS) $(1) -p $(TEST_P) [all but SERIAL_TESTS, HOST_TESTS and HOST_TESTBED_TESTS, TEST_FIRST first; the host lanes -p 1 beside it]" && \
	$(TEST_ENV) $(TESTTIME) -title "parallel pass" -actiongraph $$tmp/parallel.graph -json "$$json/parallel.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/parallel.graph $(GO_TEST_FLAGS) $(1) -p $(TEST_P) -timeout 30m \
		-skip '$(SERIAL_RUN)' $$parallel; p=$$?; \
	$(if $(3),$(SERIAL_PREBUILD)) \
	st=0; $(2) until test -e $$tmp/host-run.rc; do sleep 1; done; test "$$(cat $$tmp/host-run.rc)" = 0 || st=1; \
	echo "$(GO) test $(GO_TEST_FLAGS) $(1) -p 1 [HOST_RUN in HOST_RUN_PKGS, at the end of the testbeds' lane]" && \
	cat $$tmp/host-run.out; t=$$st; \
	wait $$hostpid; h=$$?; test "$$(cat $$tmp/host-testbeds.rc)" = 0 || h=1; \
	echo "$(GO) test $(GO_TEST_FLAGS) $(1) -p 1 [the host lanes, run beside the parallel pass: HOST_TESTBED_TESTS; HOST_TESTS with TOUR_RUN]" && \
	cat $$tmp/host-testbeds.out $$tmp/host.out; \
	echo "$(GO) test $(GO_TEST_FLAGS) $(1) -p 1 [SERIAL_TESTS, then SERIAL_RUN in SERIAL_RUN_PKGS]" && \
	$(if $(3),$(SERIAL_PREBUILT_PASS),$(SERIAL_GO_TEST_PASS)) \
	test $$p = 0 && test $$h = 0 && test $$t = 0 && test $$s = 0 && test $$r = 0
endef
# The clusters' lane after its first package: TOUR_CLUSTER, then, once the testbeds' lane is
# done, the rest of HOST_TESTS; as go test runs them (make test-dev: its test cache),
HOST_GO_TEST_REST = \
	$(TEST_ENV) $(TESTTIME) -title "host lane, TOUR_CLUSTER" -actiongraph $$tmp/tour-cluster.graph -json "$$json/tour-cluster.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/tour-cluster.graph $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m -run '$(TOUR_CLUSTER)' $(TOUR_RUN_PKG) || h=1; \
	until test -e $$tmp/host-testbeds.rc; do sleep 1; done; \
	$(TEST_ENV) $(TESTTIME) -title "host lane, after the testbeds' lane" -actiongraph $$tmp/host-rest.graph -json "$$json/host-rest.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/host-rest.graph $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m $$hostrest || h=1;
# or (make test) from test binaries linked while the lane's first package runs (HOST_PREBUILD):
# go test would link each only when its turn came, 15 and 8 s on the lane's critical path (a
# fresh-clone run at 810f0e9).
HOST_PREBUILD = \
	{ $(GO) test $(GO_TEST_FLAGS) $(1) -c -o $$tmp/host-bin/ $(TOUR_RUN_PKG) $$hostrest > $$tmp/host-build.out 2>&1 & } && hostbuild=$$! &&
HOST_PREBUILT_REST = \
	wait $$hostbuild || { echo "building the host lane's test binaries failed:"; h=1; }; cat $$tmp/host-build.out; \
	$(TEST_ENV) $(TESTTIME) -title "host lane, TOUR_CLUSTER" -json "$$json/tour-cluster.json" -bin $$tmp/host-bin -go $(GO) \
		-arg -test.timeout=30m -arg '-test.run=$(TOUR_CLUSTER)' -- $(TOUR_RUN_PKG) || h=1; \
	until test -e $$tmp/host-testbeds.rc; do sleep 1; done; \
	$(TEST_ENV) $(TESTTIME) -title "host lane, after the testbeds' lane" -json "$$json/host-rest.json" -bin $$tmp/host-bin -go $(GO) \
		-arg -test.timeout=30m -- $$hostrest || h=1;
# The serial pass as go test runs it (make test-dev: its test cache),
SERIAL_GO_TEST_PASS = \
	$(TEST_ENV) $(TESTTIME) -title "serial pass" -actiongraph $$tmp/serial.graph -json "$$json/serial.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/serial.graph $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m -skip '$(HOST_RUN)|$(TOUR_RUN)' $$serial; s=$$?; \
	$(TEST_ENV) $(TESTTIME) -title "serial pass, SERIAL_RUN" -actiongraph $$tmp/serial-run.graph -json "$$json/serial-run.json" -- \
		$(GO) test -json -debug-actiongraph=$$tmp/serial-run.graph $(GO_TEST_FLAGS) $(1) -p 1 -timeout 30m \
		-run '$(SERIAL_RUN)' $(SERIAL_RUN_PKGS); r=$$?;
# or (make test) with its test binaries linked beforehand, once the parallel pass is done,
# beside HOST_RUN, the Python tests and what is left of the host lane (SERIAL_PREBUILD), and
# run one at a time by testtime -bin as go test would: go test -p 1 links a package's binary
# only once the previous package's tests ended, about 20 s of links waiting in line (a
# fresh-clone run at c3329dc: 323 s of serial pass for 300 s of tests).
SERIAL_PREBUILD = \
	{ ( $(GO) test $(GO_TEST_FLAGS) $(1) -c -o $$tmp/serial-bin/ -debug-actiongraph=$$tmp/serial.graph \
		$$serial $(SERIAL_RUN_PKGS) > $$tmp/serial-build.out 2>&1 ) & } && buildpid=$$! && \
	echo "$(GO) test $(GO_TEST_FLAGS) $(1) -c [SERIAL_TESTS and SERIAL_RUN_PKGS: the serial pass's test binaries]" &&
SERIAL_PREBUILT_PASS = \
	s=0; wait $$buildpid || { echo "building the serial pass's test binaries failed:"; s=1; }; cat $$tmp/serial-build.out; \
	$(TEST_ENV) $(TESTTIME) -title "serial pass" -actiongraph $$tmp/serial.graph -json "$$json/serial.json" -bin $$tmp/serial-bin -go $(GO) \
		-arg -test.timeout=30m -arg '-test.skip=$(HOST_RUN)|$(TOUR_RUN)' -- $$serial || s=1; \
	$(TEST_ENV) $(TESTTIME) -title "serial pass, SERIAL_RUN" -json "$$json/serial-run.json" -bin $$tmp/serial-bin -go $(GO) \
		-arg -test.timeout=30m -arg '-test.run=$(SERIAL_RUN)' -- $(SERIAL_RUN_PKGS); r=$$?;
# The Python tests (about 45 s, most of it the FL suite's training) and test-results-shipped
# (about 20 s) run after the parallel pass, beside HOST_RUN and what is left of the host lane:
# they touch no host state. After HOST_RUN they were the last 74 s before the serial pass (a
# fresh-clone run at c3329dc: parallel pass done at 376 s, HOST_RUN 49 s, host lane done
# at 430 s, these at 499 s). The host lane, since issue 44 added its multi-node cluster tests
# (two clusters, about 140 s), outlasts the parallel pass (a fresh-clone run at bd0250c: parallel
# 352 s, host lane about 430 s without them), so what need not be in it is not. The three run
# side by side: one after the other they ended 95 s after the parallel pass, after the clusters'
# lane (a fresh-clone run at 35ec5d0).
test: setup lint build proto-check results-schema-check
	$(call GO_TEST_PASSES,-count=1,$(MAKE) --no-print-directory -j3 --output-sync=target test-python-functions test-python-fl test-results-shipped || st=1;,prebuilt)

# The inner loop: the same two passes with go's test cache (no -count=1), so a package whose
# code, test files and the files and environment variables its tests read did not change is not
# run again. It skips `make setup` (run it once), the Python tests, proto-check and
# test-results-shipped. The cache does not see programs a test only executes: after changing a
# command that tests run as bin/continuum (kv, the proxy, the function runtimes), run `make test`
# or `go clean -testcache`.
test-dev: build
	$(call GO_TEST_PASSES,)

# The Python results package (python/src/continuum_results) on the results of every shipped
# scenario, made up by the runner's own writers from each file (Go's TestWriteShippedResults).
test-results-shipped:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	CONTINUUM_RESULTS_OUT=$$tmp $(GO) test -count=1 -run '^TestWriteShippedResults$$' ./internal/experiment && \
	cd python && CONTINUUM_SHIPPED_RESULTS=$$tmp ../$(PYTHON) -m pytest -q tests/test_results_shipped.py

# Go code generated from .proto files by the generators pinned in tools/protogen (protoc-gen-go and
# protoc-gen-go-vtproto run in process on protocompile's parse: no protoc). `make proto` rewrites
# it; proto-check (part of `make test`) regenerates into a temporary directory and fails on drift.
# vtproto: size-first marshal, and unmarshal into pooled messages aliasing the input (wire.go).
PROTOGEN := $(GO) -C tools/protogen run . -I ../../internal/kv/replication -module github.com/continuum-project/continuum \
	-vtproto marshal+unmarshal_unsafe+size+pool -vtpool 'github.com/continuum-project/continuum/internal/kv/replication/replicationpb.*'
PROTO_GO := internal/kv/replication/replicationpb
proto:
	$(PROTOGEN) -out $(CURDIR) replication.proto

proto-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PROTOGEN) -out "$$tmp" replication.proto && \
	if ! diff -ru "$$tmp/$(PROTO_GO)" $(PROTO_GO); then \
		echo "proto-check: $(PROTO_GO) differs from what its .proto generates: run 'make proto' and commit the result" >&2; \
		exit 1; \
	fi

# The Python results package's column tables (continuum_results/_schema.py), generated from
# internal/results/tables.go: `make results-schema` rewrites them; results-schema-check (part of
# `make test`) regenerates into a temporary directory and fails on drift.
RESULTS_SCHEMA_PY := python/src/continuum_results/_schema.py
results-schema:
	$(GO) run ./internal/results/pyschema -o $(RESULTS_SCHEMA_PY)

results-schema-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) run ./internal/results/pyschema -o "$$tmp/_schema.py" && \
	if ! diff -u "$$tmp/_schema.py" $(RESULTS_SCHEMA_PY); then \
		echo "results-schema-check: $(RESULTS_SCHEMA_PY) differs from what internal/results generates: run 'make results-schema' and commit the result" >&2; \
		exit 1; \
	fi

# The Python tests (python/; ruff and mypy are make lint's): the function runtimes and handlers in the venv
# make setup built for them,
PYTHON := .tools/venv/bin/python
# and the federated-learning tests (tests/test_fl_*) in their own venv (PyTorch, Flower).
PYTHON_FL := .tools/venv-fl/bin/python
# The Python tests: the functions' and results' side, and FL's in the FL venv. make test runs
# the two and test-results-shipped side by side (the FL suite alone takes about a minute,
# most of it training).
test-python: test-python-functions test-python-fl
test-python-functions:
	cd python && ../$(PYTHON) -m pytest -q --ignore-glob='tests/test_fl_*'
test-python-fl:
	cd python && ../$(PYTHON_FL) -m pytest -q tests/test_fl_*.py

# The chart's end-to-end run on a one-node cluster (internal/kubernetes/cluster TestChartOnCluster),
# alone: builds the continuum, proxy and Python images, starts Kafka on the node, installs
# deploy/helm/continuum with every component but the FL orchestrator and talks to each. `make
# test` runs it too, in the serial pass (kubernetes/cluster): kept out, it let a chart whose proxy
# could not read its token Secret ship (issue 42).
# Then FL on a cluster (internal/kubernetes/kubeplatform TestFLOnCluster): builds the fl image
# (PyTorch, about 1.7 GB), imports it and trains with services as pods, one leaving mid-job. Only
# here: the image alone would add minutes of the host lanes to make test.
test-kubernetes: setup build
	CONTINUUM_BIN=$(CURDIR)/$(BIN) CONTINUUM_REQUIRE_ROOT=1 $(GO) test -count=1 -v -run 'TestChartOnCluster' ./internal/kubernetes/cluster/
	CONTINUUM_BIN=$(CURDIR)/$(BIN) CONTINUUM_REQUIRE_ROOT=1 CONTINUUM_FL_CLUSTER=1 $(GO) test -count=1 -v -timeout 40m -run 'TestFLOnCluster' ./internal/kubernetes/kubeplatform/

# The kv replication simulations with SOAK times their seeds (default 20x: thousands of seeds).
SOAK ?= 20
soak:
	CONTINUUM_SOAK=$(SOAK) $(GO) test -count=1 -timeout 60m -run 'TestReplicasConverge|TestDeletionsCollected|TestKDurable' ./internal/kv/mvcc/

test-short: setup-core build
	CONTINUUM_BIN=$(CURDIR)/$(BIN) $(GO) test -short -count=1 ./...

demo: setup-core build-continuum
	$(BIN) run scenarios/quickstart.yaml --out $(OUT)

bench-testbed: build
	$(BIN) bench testbed --out docs/benchmarks/testbed.md

clean:
	rm -rf bin results
