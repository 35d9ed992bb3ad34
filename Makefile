# The README's two commands are `make run` and `make test`; everything else is a helper.
SHELL := /bin/bash
GO ?= go
SERVICES := infra/local/services.sh
BIN := bin/trending
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit is passed explicitly: Go stamps it into the build info only when VCS stamping is
# on, and environments that set GOFLAGS=-buildvcs=false turn it off.
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
# Integration and end-to-end tests against real Kafka, MinIO and ClickHouse take minutes.
TEST_TIMEOUT ?= 30m
BENCH ?= .

.PHONY: all build run test test-short bench bench-api bench-reads bench-peers soak soak-split services-up services-down services-status lint fmt clean

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/trending

## run: the whole pipeline in one process on embedded defaults (in-process Kafka broker and
## S3 server, data in ./data). Extra flags: make run ARGS="--listen 127.0.0.1:9000".
run: build
	./$(BIN) up $(ARGS)

## test: start the real servers (installing them once), run every test with the integration
## variables set, and stop the servers even when tests fail.
test:
	@set -euo pipefail; \
	trap '$(SERVICES) down' EXIT; \
	infra/local/testdeps.sh; \
	$(SERVICES) up; \
	eval "$$($(SERVICES) env)"; \
	$(GO) vet ./...; \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...; \
	TRENDING_IT_FAULTS=1 $(GO) test -count=1 -p 1 -timeout $(TEST_TIMEOUT) -run '^TestFault' ./...

## test-short: unit, property and fuzz-seed tests only; integration tests skip with a message.
test-short:
	$(GO) test -short -count=1 ./...

## bench: every benchmark BENCHMARKS.md cites, each with the flags of its rows, into bench.out
## (the Go benchmark format: compare two runs with benchstat old.out new.out), with the command
## and load average before each; then the table of the goals, into bench-summary.md. A subset:
## make bench BENCH=sketch (a regexp over package and benchmark pattern). Benchmarks on the
## real servers need them: make services-up; eval "$$(infra/local/services.sh env)".
bench:
	$(GO) run ./internal/benchsum run -out bench.out -summary bench-summary.md -bench '$(BENCH)'

## bench-api: the serving API against nginx and bare net/http over HTTP (wrk, pinned cores;
## needs nginx and wrk), 3 rounds, into bench-api.out; then the summary of it and bench.out.
bench-api:
	set -o pipefail; ROUNDS=3 serving/api/bench/run.sh 2>&1 | tee bench-api.out
	$(GO) run ./internal/benchsum summary -summary bench-summary.md $$(ls bench.out 2>/dev/null) bench-api.out

## bench-reads: reads under load while the pipeline runs (issue 33): `trending serve` pinned to
## core 0, `trending up` (its load generator at RATE views/s) and an open-loop client on core 1,
## at 64, 256 and 1,024 connections and 20,000 requests/s, then a step up; the serving store is a
## database of its own on the local ClickHouse (make services-up), else up serves the API itself.
## Markdown rows into bench-reads.out.
bench-reads:
	set -o pipefail; serving/api/bench/reads.sh 2>&1 | tee bench-reads.out

## bench-peers: Apache Flink's Window Top-N (HOP 1h/1m, heap state, parallelism = cores; fetched
## from Maven Central once) beside `trending speed` on one pre-filled Kafka topic of PEERS_EVENTS
## events (default 5M): events per CPU-second, wall, peak RSS, and the top K of one closed hour
## compared with each other and the truth; into peers-report.md. Starts Kafka and MinIO when they
## are not running (and stops only those). Not part of test: it needs Java and Maven, and minutes.
PEERS_EVENTS ?= 5000000
bench-peers: build
	@set -euo pipefail; \
	started=(); trap 'for s in "$${started[@]}"; do infra/local/$$s.sh stop; done' EXIT; \
	for s in kafka minio; do \
	  infra/local/$$s.sh status >/dev/null 2>&1 || { infra/local/$$s.sh start; started+=($$s); }; \
	done; \
	eval "$$($(SERVICES) env)"; \
	infra/bench/peers/flink.sh install; \
	PEERS_EVENTS=$(PEERS_EVENTS) $(GO) run ./infra/bench/peers -bin $(BIN) -report peers-report.md $(ARGS)

## soak: the real stack at a sustained rate for SOAK_DURATION (default 30m): throughput,
## freshness and memory over time, and the exact batch against the truth. Not part of test.
SOAK_DURATION ?= 30m
SOAK_RATE ?= 20000
soak:
	@set -euo pipefail; \
	trap '$(SERVICES) down' EXIT; \
	$(SERVICES) up; \
	eval "$$($(SERVICES) env)"; \
	SOAK_DURATION=$(SOAK_DURATION) SOAK_RATE=$(SOAK_RATE) SOAK_REPORT=$(CURDIR)/soak-report.md \
	  $(GO) test -tags soak -count=1 -v -timeout 3h -run TestSoak ./internal/soak

## soak-split: issue 33's soak, the split roles as child processes on the real servers
## (speed x2, archive, merge, serve on the ClickHouse serving store, `batch run` every
## SOAK_BATCH_EVERY), fed by loadgen at SOAK_RATE views/s for SOAK_DURATION, then SOAK_PEAK_RATE
## for SOAK_PEAK_DURATION (defaults: seed 000's 58,000 for an hour, then 175,000 for 5 minutes,
## pre-summed by 500 servers). Report in soak-split-report.md: events/s, lag, freshness, RSS and
## CPU per role, CPU-seconds per million events and the cores they project, the end checks.
## Servers already running (services-up) are used and left running; otherwise started and stopped.
## SOAK_DURATION and SOAK_RATE given (command line or environment) win over these defaults.
given = $(if $(filter command line environment,$(origin $(1))),$($(1)),$(2))
SOAK_PEAK_RATE ?= 175000
SOAK_PEAK_DURATION ?= 5m
soak-split:
	@set -euo pipefail; \
	if ! $(SERVICES) status >/dev/null 2>&1; then trap '$(SERVICES) down' EXIT; $(SERVICES) up; fi; \
	eval "$$($(SERVICES) env)"; \
	SOAK_DURATION=$(call given,SOAK_DURATION,1h) SOAK_RATE=$(call given,SOAK_RATE,58000) SOAK_PEAK_RATE=$(SOAK_PEAK_RATE) \
	  SOAK_PEAK_DURATION=$(SOAK_PEAK_DURATION) SOAK_REPORT=$(CURDIR)/soak-split-report.md \
	  $(GO) test -tags soak -count=1 -v -timeout 3h -run '^TestSoakSplit$$' ./internal/soak

services-up:
	$(SERVICES) up
	@echo "export these to run integration tests by hand:"; $(SERVICES) env

services-down:
	$(SERVICES) down

services-status:
	$(SERVICES) status

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin bench.out bench-summary.md bench-api.out peers-report.md
