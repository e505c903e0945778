# codemode: make test (what CI runs), make bench (the benchmark suite).
GO ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHSTAT ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
FUZZTIME ?= 10s
FUZZ ?= FuzzRun
COUNT ?= 6
ROUNDS ?= 10
CC ?= gcc
# The modules besides the root, each with its own go.mod; make test covers them all.
MODULES = bench typescript mcp remote otel cmd/codemode adapters/openai adapters/anthropic adapters/genai adapters/eino examples
ENGINE_INCLUDE = $(shell $(GO) list -m -f '{{.Dir}}' github.com/buke/quickjs-go)/deps/quickjs

# The daemon's image (make image): its name, and the version stamped into
# the binary and tagged (the manifests in deploy/kubernetes run IMAGE).
IMAGE ?= ghcr.io/codemode-go/codemode
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
DOCKER ?= docker

BUF ?= github.com/bufbuild/buf/cmd/buf@v1.75.0
PROTOC_GEN_GO ?= google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC ?= google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0

.PHONY: image test bench bench-callgrind microbench fuzz fuzz-all soak leakcheck lint fmt check proto conformance

# vet, then every test under the race detector, in both modes: snapshot
# slots (the default) and checked (every sandbox built and freed on libc,
# so JS_FreeRuntime's assertions catch a leaked reference); then once with
# cgocheck2, which traps any unpinned Go pointer stored in C memory, with
# the plain build's own tests (the batch harness's reproducibility under
# load) and the conformance gate on a fixed subset of test262 (1 in 20 of
# every directory's tests) in the same build; then every module's tests;
# then the root module's under ASan and LSan in both modes (leakcheck).
# vet runs with -race so that it type-checks against the race build the
# tests use: a plain vet compiled every dependency of every module a second
# time (issue 47). No build besides race, cgocheck2 and ASan is made.
test:
	$(GO) vet -race ./...
	$(GO) vet -race -tags soak . && cd remote && $(GO) vet -race -tags soak .
	$(GO) vet -race -tags conformance .
	$(GO) test -race ./...
	$(GO) test -race -tags codemode_checked ./...
	GOEXPERIMENT=cgocheck2 $(GO) test . && GOEXPERIMENT=cgocheck2 $(GO) test -count=1 -run TestOutcomesAreTheJobs ./batch
	GOEXPERIMENT=cgocheck2 $(MAKE) conformance CONFORMANCE_SUBSET=20
	for m in $(MODULES); do (cd $$m && $(GO) vet -race ./... && $(GO) test -race ./...) || exit 1; done
	cd deploy && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test ./...
	$(MAKE) leakcheck

# The daemon's image from the Dockerfile: $(IMAGE):$(VERSION) and
# $(IMAGE):latest (push them, then apply deploy/kubernetes: README,
# Deploying). deploy/'s tests check the Dockerfile and the manifests
# without a registry (make test runs them; it is a module of its own,
# outside the workspace).
image:
	$(DOCKER) build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) -t $(IMAGE):latest .

# The suite against peers (bench/, its own module): prints one markdown
# table and writes bench/results/latest.md and latest.svg.
bench:
	cd bench && $(GO) run . -rounds $(ROUNDS)

# Instructions per call, codemode against the raw QuickJS-ng floor.
bench-callgrind:
	bench/callgrind.sh

# The library's own benchmarks, COUNT runs each, summarised by benchstat.
microbench:
	$(GO) test -run '^$$' -bench . -count $(COUNT) . | tee bench.out
	$(GO) run $(BENCHSTAT) bench.out

fuzz:
	$(GO) test -run '^$$' -fuzz '^$(FUZZ)$$' -fuzztime $(FUZZTIME) .

# Every fuzz target, as module-directory:package:Target; fuzz-all runs
# them in turn for FUZZTIME each (FUZZPARALLEL workers, 5 s to minimize a
# find) and prints, per target, the last progress line: executions and
# new interesting inputs. A failure stops it with the crasher written to
# the package's testdata/fuzz/<Target>/ (make it a regression test).
FUZZ_TARGETS = .:.:FuzzRun .:.:FuzzExecute .:.:FuzzDispatchCodec .:.:FuzzDispatchAnswer .:.:FuzzValidate .:.:FuzzCall \
	.:.:FuzzShapes .:.:FuzzShapeJSON .:.:FuzzArgPlan .:.:FuzzFlatDecode .:.:FuzzContinuation .:.:FuzzContinuationBody .:.:FuzzSessionOpen .:.:FuzzPlainJSON .:.:FuzzJSIdentifier .:./internal/jspos:FuzzInstrument \
	typescript:.:FuzzDeclarations typescript:.:FuzzShapes cmd/codemode:.:FuzzBatchInput mcp:.:FuzzUnwrap mcp:.:FuzzTaskMessages remote:.:FuzzDaemonFrames remote:.:FuzzDaemonStandalone remote:.:FuzzDaemonText
FUZZPARALLEL ?= 1
fuzz-all:
	@for t in $(FUZZ_TARGETS); do \
		dir=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; name=$${rest#*:}; \
		echo "== $$dir $$pkg $$name ($(FUZZTIME))"; \
		(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s \
			-parallel $(FUZZPARALLEL) $$pkg >/tmp/codemode-fuzz-$$$$.log 2>&1; status=$$?; \
			grep -v '^fuzz: elapsed' /tmp/codemode-fuzz-$$$$.log; grep '^fuzz: elapsed' /tmp/codemode-fuzz-$$$$.log | tail -1; \
			rm -f /tmp/codemode-fuzz-$$$$.log; exit $$status) || exit 1; \
	done

# The soak: 1,000,000 mixed runs on one executor from 8 goroutines, then
# 100,000 programs through one daemon with clients dropping mid-run; each
# asserts RSS, goroutines and descriptors at the end (SOAK_RUNS and
# SOAK_PROGRAMS shorten them).
soak:
	$(GO) test -tags soak -run '^TestSoak$$' -v -count=1 -timeout 60m .
	cd remote && $(GO) test -tags soak -run '^TestDaemonSoak$$' -v -count=1 -timeout 60m .

# The differential conformance gate (conformance_test.go): test262, from
# ../shared/conformance/test262, through the plain engine (the same
# QuickJS-ng and intrinsics, nothing of codemode's) and through a sandbox,
# as global code and as Run's body, on identical text; it fails on any test
# the plain engine passes and the sandbox fails, and prints the table of
# every directory. CONFORMANCE_SUBSET=N runs the first and every Nth test
# of each directory (all of it: about 8 minutes on 2 cores, and the table
# goes to testdata/conformance/latest.md).
CONFORMANCE_SUBSET ?= 1
conformance:
	CODEMODE_CONFORMANCE_SUBSET=$(CONFORMANCE_SUBSET) \
		$(if $(filter 1,$(CONFORMANCE_SUBSET)),CODEMODE_CONFORMANCE_REPORT=testdata/conformance/latest.md) \
		$(GO) test -tags conformance -run '^TestConformance$$' -count=1 -timeout 60m -v .

# The tests under AddressSanitizer; LeakSanitizer checks at exit (go -asan).
leakcheck:
	$(GO) test -asan -count=1 ./...
	$(GO) test -asan -count=1 -tags codemode_checked ./...

lint:
	$(GO) vet ./...
	for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done
	$(GO) run $(STATICCHECK) ./...
	for f in bridge*.c; do \
		$(CC) -std=gnu11 -fsyntax-only -Wall -Wextra -Werror -D_GNU_SOURCE -DBRIDGE_LINT -Iquickjs $$f && \
		$(CC) -std=gnu11 -fsyntax-only -Wall -Wextra -Werror -D_GNU_SOURCE -DBRIDGE_LINT -I$(ENGINE_INCLUDE) -include quickjs.h -Iquickjs $$f || exit 1; \
	done

fmt:
	gofmt -w $$(git ls-files '*.go')

# Fails when formatting or go.mod/go.sum are not as fmt and tidy leave them.
check: fmt
	$(GO) mod tidy
	cd bench && $(GO) mod tidy
	git diff --exit-code

# Regenerates remote/remotepb from remote/proto (the generated code is
# committed; the generators are pinned above).
proto:
	for t in $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC); do GOBIN=$(CURDIR)/.bin $(GO) install $$t || exit; done
	cd remote && PATH=$(CURDIR)/.bin:$$PATH buf generate
