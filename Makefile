# kplane: the two set-up commands are `make run` and `make test`.
CARGO ?= cargo
DATA_DIR ?= ./kplane-data
BIND ?= 127.0.0.1:6443
# Extra `kplane serve` flags for `make run`, e.g. ARGS="-v 3 --log-format json".
ARGS ?=
# Where cargo puts binaries (honours CARGO_TARGET_DIR).
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
# `make install` puts kplane and its kubectl plugin names into $(PREFIX)/bin.
PREFIX ?= $(HOME)/.local
# `make dist` puts the shipped binary and its debug file here.
DIST_DIR ?= $(TARGET_DIR)/dist
# The container image `make image` builds and tags; docs/deploy's manifests name it.
IMAGE ?= ghcr.io/kplane/kplane:latest
# What builds it: podman, else docker (when its daemon answers), else buildah.
CONTAINER_ENGINE ?= $(shell for e in podman docker buildah; do command -v $$e >/dev/null 2>&1 || continue; [ $$e != docker ] || docker info >/dev/null 2>&1 || continue; echo $$e; break; done)

.PHONY: run test test-tools build build-release dist install image image-prebuilt image-engine lint fmt bench fuzz clean

## Build (release) and start the server with data in ./kplane-data.
run: build-release
	@echo "kplane: once it is ready, in another shell run:"
	@echo "  export KUBECONFIG=$(abspath $(DATA_DIR))/admin.kubeconfig"
	$(TARGET_DIR)/release/kplane serve --data-dir $(DATA_DIR) --bind $(BIND) $(ARGS)

build-release:
	$(CARGO) build --release -p kplane

build:
	$(CARGO) build -p kplane

## The release binary as shipped: $(DIST_DIR)/kplane without its DWARF (its symbol table
## stays: perf and backtraces name functions) and $(DIST_DIR)/kplane.debug, the DWARF (line
## and inline tables), which perf and gdb find through the binary's .gnu_debuglink beside
## the binary or in .debug/ next to it.
dist: build-release
	@command -v objcopy >/dev/null 2>&1 || { echo "error: make dist needs objcopy (binutils)" >&2; exit 1; }
	install -d $(DIST_DIR)
	objcopy --only-keep-debug $(TARGET_DIR)/release/kplane $(DIST_DIR)/kplane.debug
	objcopy --strip-debug --add-gnu-debuglink=$(DIST_DIR)/kplane.debug $(TARGET_DIR)/release/kplane $(DIST_DIR)/kplane

## Install the shipped binary as $(PREFIX)/bin/kplane (its debug file as
## $(PREFIX)/bin/.debug/kplane.debug), with the kubectl plugins kubectl-ws and
## kubectl-kplane as symlinks to it (`kubectl ws use root:acme`).
install: dist
	install -d $(DESTDIR)$(PREFIX)/bin/.debug
	install -m 0755 $(DIST_DIR)/kplane $(DESTDIR)$(PREFIX)/bin/kplane
	install -m 0644 $(DIST_DIR)/kplane.debug $(DESTDIR)$(PREFIX)/bin/.debug/kplane.debug
	ln -sf kplane $(DESTDIR)$(PREFIX)/bin/kubectl-ws
	ln -sf kplane $(DESTDIR)$(PREFIX)/bin/kubectl-kplane
	@echo "kplane: installed into $(PREFIX)/bin (it must be on PATH for kubectl to find the plugins)"

## Every test: unit, integration and end-to-end (e2e starts the real binary and drives it
## with kubectl, kube-rs and the Python client). One build of the binary is shared by all
## e2e tests.
test: test-tools build
	$(CARGO) fmt --all -- --check
	KPLANE_BIN=$(abspath $(TARGET_DIR)/debug/kplane) $(CARGO) test --workspace --lib --bins --tests -- --test-threads=2

## The tools the tests need beyond Rust and kubectl (PostgreSQL's server, the official
## Python client, curl): scripts/test-tools.sh installs what is missing, or stops with
## one message saying what to install.
test-tools:
	@bash scripts/test-tools.sh

## The container image $(IMAGE) from this checkout (Containerfile: a Rust build stage,
## then the binary and its shared libraries on scratch, run as uid 65532).
image: image-engine
	$(CONTAINER_ENGINE) build -f Containerfile -t $(IMAGE) .

## The same image from the release binary built here, without the Rust build image: the
## context is the root filesystem scripts/image-rootfs.sh lays out.
image-prebuilt: image-engine build-release
	rm -rf $(TARGET_DIR)/image-rootfs
	bash scripts/image-rootfs.sh $(TARGET_DIR)/release/kplane $(TARGET_DIR)/image-rootfs
	$(CONTAINER_ENGINE) build -f Containerfile --build-arg ROOTFS=prebuilt -t $(IMAGE) $(TARGET_DIR)/image-rootfs

image-engine:
	@if [ -z "$(CONTAINER_ENGINE)" ]; then echo "error: building the image needs podman, docker (with its daemon running) or buildah on PATH (Debian: apt-get install podman), or CONTAINER_ENGINE=..." >&2; exit 1; fi

## Fuzz every parser target of crates/fuzz (cargo-fuzz, libFuzzer) for FUZZ_SECONDS seconds
## each, from its seeds (crates/fuzz/seeds/<target>) and the corpus it grows
## (crates/fuzz/corpus/<target>); a crash stops it and leaves its input in
## crates/fuzz/artifacts/<target>/. cargo-fuzz is installed when missing; without
## sanitizers (-s none) its flags work on the stable toolchain.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(shell sed -n 's/^name = "\(.*\)"$$/\1/p' crates/fuzz/Cargo.toml | grep -v '^kplane-fuzz$$')
fuzz:
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p crates/fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  $(CARGO) fuzz run --fuzz-dir crates/fuzz -s none $$t \
	    crates/fuzz/corpus/$$t crates/fuzz/seeds/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -print_final_stats=1 || exit 1; \
	done

## Format check and clippy, as CI runs them.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## Micro-benchmarks (not part of `make test`).
bench:
	$(CARGO) bench -p kplane-storage --bench writes

clean:
	$(CARGO) clean
