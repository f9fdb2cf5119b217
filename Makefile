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

.PHONY: faults all build sandbox demo test unit integration check fmt tidy clean bench krew-manifest krew-check docs

all: build

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

## test: every test — unit tests, then integration tests on a real kube-apiserver
test: unit integration

unit:
	go vet ./...
	go test -count=1 ./...

integration:
	cd internal/e2e && go vet ./... && go test -count=1 -timeout $(E2E_TIMEOUT) ./...
	cd cmd/crdversion-sandbox && go vet ./...

## docs: regenerate the command reference in docs/commands from the command tree
docs:
	go run ./cmd/crdversion-gendocs docs/commands

## check: formatting, go.mod tidiness of all three modules, the command reference up to date
check:
	@test -z "$$(gofmt -l cmd internal)" || { gofmt -l cmd internal; echo "gofmt needed"; exit 1; }
	@for m in . internal/e2e cmd/crdversion-sandbox; do \
		(cd $$m && cp go.mod /tmp/crdversion-go.mod && cp go.sum /tmp/crdversion-go.sum && go mod tidy && \
		 if ! cmp -s go.mod /tmp/crdversion-go.mod || ! cmp -s go.sum /tmp/crdversion-go.sum; then \
		   cp /tmp/crdversion-go.mod go.mod; cp /tmp/crdversion-go.sum go.sum; echo "go mod tidy changes $$m"; exit 1; fi) || exit 1; \
	done
	@grep -q '^replace' go.mod && { echo "the root go.mod must have no replace lines"; exit 1; } || true
	@go test -count=1 -run TestCommandReferenceIsCurrent ./internal/clidocs >/dev/null || { go test -count=1 -run TestCommandReferenceIsCurrent ./internal/clidocs; exit 1; }

fmt:
	gofmt -w cmd internal

tidy:
	for m in . internal/e2e cmd/crdversion-sandbox; do (cd $$m && go mod tidy); done

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

## faults: the fault-injection and race tests of docs/reliability.md, each run FAULT_RUNS times (default 5),
## with a pass/fail count per test
FAULT_RUNS ?= 5
FAULT_TESTS = TestMigrateSurvivesAPIServerRestart|TestMigrateEtcdCompactionDuringPaging|TestMigrateSlowConversionWebhook|TestMigrateConversionWebhookDown|TestMigrateWithConcurrentWritersAndDeletes|TestMigrateFailuresBlockTheTrim|TestMigrateCRDChangedMidRun|TestMigrateRecoversFromExpiredContinue|TestMigrateResumesFromCheckpoint|TestPromoteStorageRace|TestPermissionPreflight|TestConcurrentCRDEdit|TestDryRunOnAStaleRead
faults:
	@mkdir -p bin
	cd internal/e2e && go test -count=$(FAULT_RUNS) -timeout 90m -v -run '^($(FAULT_TESTS))$$' . > $(CURDIR)/bin/faults.log 2>&1; rc=$$?; \
	grep -E '^--- (PASS|FAIL)' $(CURDIR)/bin/faults.log | awk '{sub(":", "", $$2); n[$$3" "$$2]++} END {for (k in n) print n[k], k}' | sort -k2; \
	echo "log: bin/faults.log"; exit $$rc

## bench: migrate vs. a sequential loop vs. the API server's ceiling (N objects, default 10000; N=100000 on request),
## in ROUNDS rounds (default 4; the verdict is the geometric mean of each round's ratios); ONLY_MIGRATE=1 runs migrate once
N ?= 10000
ROUNDS ?= 4
bench:
	cd internal/e2e && CRDVERSION_BENCH_OBJECTS=$(N) CRDVERSION_BENCH_ROUNDS=$(ROUNDS) CRDVERSION_BENCH_ONLY_MIGRATE=$(ONLY_MIGRATE) go test -run '^$$' -bench BenchmarkMigrate -benchtime 1x -timeout 90m .
