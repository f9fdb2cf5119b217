# kubectl crdversion — build, test and demo. Needs only Go (see go.mod);
# everything else, the Kubernetes API server included, is built from the
# Go module proxy.

SHELL    := /bin/bash
MODULE   := github.com/crdversion/kubectl-crdversion
BIN      := $(CURDIR)/bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X $(MODULE)/internal/version.version=$(VERSION) -X $(MODULE)/internal/version.commit=$(COMMIT)
DEMO_DIR ?= $(CURDIR)/bin/demo
# Integration tests share one in-process kube-apiserver per package.
E2E_TIMEOUT ?= 60m
# Extra flags of the e2e test binary (test-short sets -test.short).
E2E_FLAGS ?=
# Unit tests are pure and deterministic: locally Go's test cache may answer
# for them; CI (CI=true) runs them afresh.
UNIT_COUNT := $(if $(filter true,$(CI)),-count=1)
# Parallel e2e tests at once in each shard (parallel subtests count too):
# they mostly wait (usage windows, the API server catching up), so far more
# than the two cores' default.
E2E_PARALLEL ?= 8
# E2E shards running at a time (.ci/e2e-shards): the parallel shard beside
# the solo shards one after another. More saturates two cores.
E2E_SHARDS_AT_ONCE ?= 2
export E2E_PARALLEL E2E_TIMEOUT E2E_SHARDS_AT_ONCE
# The three Go modules; tools/ is a fourth that only pins golangci-lint and
# gotestsum, tools/actionlint a fifth for actionlint (its yaml module
# version conflicts with golangci-lint's).
MODULES  := . internal/e2e cmd/crdversion-sandbox
GOLANGCI_LINT := $(BIN)/golangci-lint
ACTIONLINT := $(BIN)/actionlint
# gotestsum (pinned in tools/go.mod) runs the e2e shards and lists the slowest tests.
GOTESTSUM := $(BIN)/gotestsum
export GOTESTSUM

.PHONY: help faults all build sandbox demo test test-short unit integration check lint race race-unit race-faults fmt tidy clean \
	bench bench-promote bench-references krew-manifest krew-check docs

all: build

## help: this list
help:
	@awk '/^## [a-z-]+:/ {sub(/^## /, ""); print; next} /^## / {sub(/^## /, "    "); print}' $(MAKEFILE_LIST)

## build: the plugin binary, bin/kubectl-crdversion
build:
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-crdversion ./cmd/kubectl-crdversion

## sandbox: bin/crdversion-sandbox, a kube-apiserver + etcd in one process
sandbox:
	cd cmd/crdversion-sandbox && go build -o $(BIN)/crdversion-sandbox .

## demo: start the sandbox, install Gateway API v0.6.2 with example objects, run the walk-through
demo: build sandbox
	mkdir -p $(DEMO_DIR)
	PATH="$(BIN):$$PATH" $(BIN)/crdversion-sandbox --kubeconfig $(DEMO_DIR)/kubeconfig \
		--apply testdata/crds/gateway-api/v0.6.2 \
		--apply testdata/crds/gateway-api/v0.6.2/examples \
		-- sh cmd/crdversion-sandbox/demo.sh | tee $(DEMO_DIR)/transcript.txt; test $${PIPESTATUS[0]} -eq 0
	.ci/readme-check README.md $(DEMO_DIR)/transcript.txt

## test: every test — unit tests, then integration tests on a real kube-apiserver. go vet runs once, in make check
## (golangci-lint's govet on the three modules; go test runs vet's quick subset too); the sandbox is vetted there and
## built by make sandbox and make demo
test: unit integration

## test-short: the inner loop: unit and integration tests under -short, which skips the slow tier (the solo shards
## that restart, fill or sweep a whole API server; the corpus sweep and release pairs, the pruning differential test,
## the usage tests with windows of 30 s or more, the APF and identity measurements, the walks over every state, flag
## and permission); make test runs it all
test-short:
	go test -short $(UNIT_COUNT) ./...
	@$(MAKE) --no-print-directory integration E2E_FLAGS=-test.short

## unit: the unit tests of the root module (-count=1 only with CI=true)
unit:
	go test $(UNIT_COUNT) ./...

## integration: the integration tests of internal/e2e (a real kube-apiserver in-process) as shards side by side, each
## with its own API server (.ci/e2e-shards; each shard's go test -json stream and log are in bin/e2e/), then the 20
## slowest tests
integration: $(GOTESTSUM)
	.ci/e2e-shards $(E2E_FLAGS)

## docs: regenerate the command reference in docs/commands from the command tree
docs:
	go run ./cmd/crdversion-gendocs docs/commands

## check: the static checks, each failing with what to run: gofmt, go mod tidy -diff in every module (and tools/),
## no replace in the root go.mod, the layering test (internal/layering_test.go), the command reference, Markdown
## links and docs/ paths current (internal/clidocs), actionlint on the workflows and the action they use (action.yml),
## then golangci-lint (make lint)
check: $(ACTIONLINT)
	@test -z "$$(gofmt -l cmd internal)" || { gofmt -l cmd internal; echo "gofmt needed: make fmt"; exit 1; }
	@for m in $(MODULES) tools tools/actionlint; do \
		(cd $$m && go mod tidy -diff) || { echo "go mod tidy changes $$m: make tidy"; exit 1; }; \
	done
	@! grep -q '^replace' go.mod || { echo "the root go.mod must have no replace lines"; exit 1; }
	go test -count=1 -run '^TestLayering' ./internal
	go test -count=1 -run '^(TestCommandReferenceIsCurrent|TestMarkdownLinksResolve|TestDocPathsInGoResolve)$$' ./internal/clidocs
	$(ACTIONLINT)
	@$(MAKE) --no-print-directory lint

## lint: golangci-lint (pinned in tools/go.mod, built into bin/; configuration .golangci.yml) on the three modules
lint: $(GOLANGCI_LINT)
	@for m in $(MODULES); do \
		echo "golangci-lint run: $$m"; (cd $$m && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) || exit 1; \
	done

$(GOTESTSUM): tools/go.mod tools/go.sum
	cd tools && go build -o $(GOTESTSUM) gotest.tools/gotestsum

$(ACTIONLINT): tools/actionlint/go.mod tools/actionlint/go.sum
	cd tools/actionlint && go build -o $(ACTIONLINT) github.com/rhysd/actionlint/cmd/actionlint

$(GOLANGCI_LINT): tools/go.mod tools/go.sum
	cd tools && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

## race: the unit tests, then the fault tests (TestFault…) of internal/e2e, under the race detector
race: race-unit race-faults

race-unit:
	go test -race -count=1 ./...

race-faults: $(GOTESTSUM)
	RACE=1 .ci/e2e-shards -test.run '^TestFault'

## fmt: gofmt -w
fmt:
	gofmt -w cmd internal

## tidy: go mod tidy in every module
tidy:
	for m in $(MODULES) tools tools/actionlint; do (cd $$m && go mod tidy); done

## clean: remove bin/ and dist/
clean:
	rm -rf $(BIN) dist

## krew-manifest: a snapshot release in dist/: archives (binary, LICENSE, completion script) for PLATFORMS
## (host, all, or e.g. linux/amd64,darwin/arm64), checksums.txt, and plugin.yaml rendered as dist/krew/crdversion.yaml
PLATFORMS ?= host
krew-manifest:
	go run ./cmd/crdversion-krew-snapshot -version "$(VERSION)" -ldflags "$(LDFLAGS)" -platforms "$(PLATFORMS)" -dist dist

## krew-check: validate dist/krew/crdversion.yaml with krew's validator, krew-install each archive, run the plugin through kubectl
krew-check: krew-manifest
	VERSION="$(VERSION)" .ci/krew-check

## faults: the fault-injection and race tests of docs/reliability.md (every e2e test named TestFault…), each run
## FAULT_RUNS times (default 5), with a pass/fail count per test
FAULT_RUNS ?= 5
faults:
	@mkdir -p bin
	cd internal/e2e && go test -count=$(FAULT_RUNS) -timeout 90m -v -run '^TestFault' . > $(CURDIR)/bin/faults.log 2>&1; rc=$$?; \
	grep -E '^--- (PASS|FAIL)' $(CURDIR)/bin/faults.log | awk '{sub(":", "", $$2); n[$$3" "$$2]++} END {for (k in n) print n[k], k}' | sort -k2; \
	echo "log: bin/faults.log"; exit $$rc

## bench: migrate (default with its loss measurement, without it, --max-speed, --own-priority-level) vs. a
## sequential loop vs. the API server's ceiling, as each identity of IDENTITIES (admin, user, serviceaccount: exempt,
## global-default, workload-low), with a foreground probe's latency idle and per phase (N objects, default 10000;
## N=100000 on request), in ROUNDS rounds (default 4; the verdicts are geometric means of each round's ratios);
## ONLY_MIGRATE=1 runs migrate once as admin
N ?= 10000
ROUNDS ?= 4
IDENTITIES ?= admin,user,serviceaccount
bench:
	cd internal/e2e && CRDVERSION_BENCH_OBJECTS=$(N) CRDVERSION_BENCH_ROUNDS=$(ROUNDS) CRDVERSION_BENCH_IDENTITIES=$(IDENTITIES) CRDVERSION_BENCH_ONLY_MIGRATE=$(ONLY_MIGRATE) go test -run '^$$' -bench BenchmarkMigrate -benchtime 1x -timeout 300m .

## bench-promote: promote-storage's object preflight against a bare loop of its own requests, as each identity of
## IDENTITIES, N objects, ROUNDS rounds (the verdict: the geometric mean of each round's loop/preflight, target ≥ 0.8)
bench-promote:
	cd internal/e2e && CRDVERSION_BENCH_OBJECTS=$(N) CRDVERSION_BENCH_ROUNDS=$(ROUNDS) CRDVERSION_BENCH_IDENTITIES=$(IDENTITIES) go test -run '^$$' -bench BenchmarkPromoteStoragePreflight -benchtime 1x -timeout 120m .

## bench-references: the references inventory (status --references as a user) over objects of KINDS kinds (default
## 50) at each size of INVENTORY (default 10000,100000): wall time, objects/s, LIST requests, peak RSS, CPU
INVENTORY ?= 10000,100000
KINDS ?= 50
bench-references:
	cd internal/e2e && CRDVERSION_BENCH_INVENTORY=$(INVENTORY) CRDVERSION_BENCH_KINDS=$(KINDS) CRDVERSION_BENCH_ROUNDS=$(or $(INVENTORY_ROUNDS),3) go test -run '^$$' -bench BenchmarkReferenceInventory -benchtime 1x -timeout 120m .
