# agentbox build, test and benchmark entry points.
GO      ?= go
BIN     := bin/agentbox
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
FUZZTIME ?= 10s

.PHONY: build test test-long test-all test-vm test-k8s bench bench-quick bench-goals fuzz lint install clean demo

# agentbox and, next to it, agentbox-helper: the small binary agentbox starts
# as each run's in-sandbox helper (without it agentbox starts itself, ~1.5 ms
# slower per launch), and agentbox-export: the OTLP exporter (audit export,
# run --audit-export), in a binary of its own so agentbox links no
# OpenTelemetry code.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentbox
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)-helper ./cmd/agentbox-helper
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)-export ./cmd/agentbox-export

# Unit and integration tests: what every change must pass, in minutes.
# Kernel-feature tests skip with a reason when the feature (Landlock,
# cgroups, ptrace) is missing; run as root to exercise all. The tests that
# run agentbox as a program take the binaries just built
# (AGENTBOX_TEST_BINDIR) instead of linking their own.
test: build
	$(GO) vet ./...
	AGENTBOX_TEST_BINDIR=$(CURDIR)/bin $(GO) test -count=1 -timeout 30m ./...

# make test and the long suites it leaves out: the whole real-project
# corpus (AGENTBOX_CORPUS=full; make test runs its quick part), the real
# agent CLIs from npm (AGENTBOX_AGENTS=1) and the headless-browser tests
# (AGENTBOX_BROWSER=1). Without those variables the tests skip, saying so.
test-long: build
	$(GO) vet ./...
	AGENTBOX_CORPUS=full AGENTBOX_AGENTS=1 AGENTBOX_BROWSER=1 AGENTBOX_TEST_BINDIR=$(CURDIR)/bin \
	  $(GO) test -count=1 -timeout 60m ./...

# Everything: make test-long, then the VM matrix. .ci/run runs the same
# (the VM matrix within its time budget).
test-all: test-long test-vm

# The VM matrix (docs/vm.md): agentbox's boundary checked from outside in
# Debian's 6.1 and 6.12 kernels under software-emulated QEMU, systemd and
# cgroup v2, as root and as a regular user. Needs root; the guest image is
# cached in /var/cache/agentbox-vm. AGENTBOX_VM_REPORT_ONLY=1 prints the
# matrix without failing on a check that does not hold.
test-vm:
	AGENTBOX_VM=1 $(GO) test -count=1 -v -timeout 90m -run '^TestVMMatrix$$' ./test/vm/

# A real single-node Kubernetes cluster (docs/operations.md, "Testing on a
# real node"): Kubernetes built from the Go module proxy, etcd, containerd,
# runc and the CNI plugins from Debian's packages, the images made by hand,
# all cached in /var/cache/agentbox-k8s; the shipped examples/kubernetes Job
# run on it, then everything torn down. Needs root; skips in one line
# otherwise. Cold: ~15-30 min (the Kubernetes build); warm: ~1-2 min.
test-k8s: build
	AGENTBOX_K8S=1 $(GO) test -count=1 -v -timeout 60m ./test/k8s/

# Every benchmark, then issue 47's goals beside their figures and floors
# (scripts/bench.sh says what runs; 51 minutes on a shared 2-vCPU machine at
# load 2-43, before the export's library benchmarks ran once instead of 5x).
# bench-quick: the same steps with fewer rounds.
bench: build
	./scripts/bench.sh

bench-quick: build
	BENCH_QUICK=1 ./scripts/bench.sh

# Only the steps issue 47's table comes from (BENCH_QUICK=1 for fewer rounds).
bench-goals: build
	BENCH_ONLY=goals ./scripts/bench.sh

# Short run of every fuzz target (go test -fuzz takes one target at a time).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

install: build
	install -D -m 0755 $(BIN) $(DESTDIR)/usr/local/bin/agentbox
	install -D -m 0755 $(BIN)-helper $(DESTDIR)/usr/local/bin/agentbox-helper
	install -D -m 0755 $(BIN)-export $(DESTDIR)/usr/local/bin/agentbox-export

clean:
	rm -rf bin

# Build agentbox and run it on an example workspace (see scripts/demo.sh).
demo:
	./scripts/demo.sh
