# Continuum: `make demo` runs the main job (after the core setup only: the quickstart needs no
# system's stack), `make test` runs the tests (after `make setup`: every stack).
GO      ?= go
BIN     := bin/continuum
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/continuum-project/continuum/internal/version.Commit=$(COMMIT)
OUT     ?= results

.PHONY: setup setup-core build build-continuum test test-python test-results-shipped test-kubernetes test-short soak demo bench-testbed clean proto proto-check results-schema results-schema-check

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

# Unit and integration tests (network namespaces, delays, faults, cleanup, the Chromium report test).
# Needs root; tests that need root fail rather than skip when CONTINUUM_REQUIRE_ROOT=1. Two passes,
# both always run (make fails if either failed):
# 1. All packages but SERIAL_TESTS, TEST_P at a time, the longest (TEST_FIRST) first since the pass
#    ends with its slowest package. Their tests assert behaviour and ordering and wait with
#    deadlines; most of their time is spent waiting on processes and sockets. This pass also
#    compiles, in parallel, what the second pass needs.
# 2. SERIAL_TESTS one at a time (-p 1): packages with tests that time delays, rates or latencies
#    against a budget (testbed/fabric, netbench, loadgen, httptarget, httpecho, kv/replication's
#    linger, kv/server's stall bound under compaction, shareddata/freshness, experiment), that
#    bring up testbeds in network namespaces (cmd/continuum, experiment, kv/nemesis, testbed) or
#    a cluster that changes the host's network and mounts and checks they are restored
#    (kubernetes/cluster, the chart's end-to-end run included; kubernetes/kubeplatform, which
#    runs a scenario on one; cmd/continuum, whose TestREADMETour runs the README's tour), or that
#    render in Chromium (report, proxy/kinds, stream/rtdb): the
#    delay-accuracy tests must not share the 2 CPUs with a Chromium render or with other
#    packages. A new package goes here only if it is of one of these kinds.
# GORACE: a -race binary sleeps 1 s before exiting (atexit_sleep_ms=1000), a minute over all the
# packages; by then every test has returned and been checked for races by package testing.
TEST_P       ?= 3
TEST_FIRST   := ./internal/kv/mvcc ./internal/baselines ./internal/kv/compat ./internal/fl/orchestrator \
	./internal/shareddata ./internal/stream/aggregator ./internal/baselines/kinds \
	./internal/kubernetes/controlplane ./internal/kv/kvbench
SERIAL_TESTS := ./cmd/continuum ./internal/experiment ./internal/kv/nemesis ./internal/testbed/... \
	./internal/netbench ./internal/loadgen ./internal/loadgen/httptarget ./internal/httpecho \
	./internal/kv/replication ./internal/shareddata/freshness ./internal/report ./internal/proxy/kinds \
	./internal/kv/server ./internal/stream/rtdb ./internal/kubernetes/cluster ./internal/kubernetes/kubeplatform \
	./internal/app/kinds
TEST_ENV     := CONTINUUM_BIN=$(CURDIR)/$(BIN) CONTINUUM_REQUIRE_ROOT=1 GORACE=atexit_sleep_ms=50
test: setup build test-python proto-check results-schema-check
	@serial=$$($(GO) list $(SERIAL_TESTS)) && first=$$($(GO) list $(TEST_FIRST)) && \
	parallel="$$first $$($(GO) list ./... | grep -vxF "$$serial" | grep -vxF "$$first")" && \
	echo "$(GO) test -race -count=1 -p $(TEST_P) [all but SERIAL_TESTS, TEST_FIRST first]" && \
	$(TEST_ENV) $(GO) test -race -count=1 -p $(TEST_P) -timeout 30m $$parallel; p=$$?; \
	echo "$(GO) test -race -count=1 -p 1 [SERIAL_TESTS]" && \
	$(TEST_ENV) $(GO) test -race -count=1 -p 1 -timeout 30m $$serial; s=$$?; \
	test $$p = 0 && test $$s = 0
	@$(MAKE) --no-print-directory test-results-shipped

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

# The Python side (python/): ruff over all of it, the function runtimes and handlers in the venv
# make setup built for them,
PYTHON := .tools/venv/bin/python
# and the federated-learning tests (tests/test_fl_*) in their own venv (PyTorch, Flower).
PYTHON_FL := .tools/venv-fl/bin/python
test-python:
	cd python && ../$(PYTHON) -m ruff check . && ../$(PYTHON) -m ruff format --check . && \
		../$(PYTHON) -m pytest -q --ignore-glob='tests/test_fl_*'
	cd python && ../$(PYTHON_FL) -m pytest -q tests/test_fl_*.py

# The chart's end-to-end run on a one-node cluster (internal/kubernetes/cluster TestChartOnCluster),
# alone: builds the continuum, proxy and Python images, starts Kafka on the node, installs
# deploy/helm/continuum with every component but the FL orchestrator and talks to each. `make
# test` runs it too, in the serial pass (kubernetes/cluster): kept out, it let a chart whose proxy
# could not read its token Secret ship (issue 42).
test-kubernetes: setup build
	CONTINUUM_BIN=$(CURDIR)/$(BIN) CONTINUUM_REQUIRE_ROOT=1 $(GO) test -count=1 -v -run 'TestChartOnCluster' ./internal/kubernetes/cluster/

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
