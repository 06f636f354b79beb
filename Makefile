# layoutlab — one Makefile for a fresh Debian machine: every target installs what it needs.
SHELL := /bin/bash
CARGO ?= cargo
DEBS := python3 e2fsprogs libext2fs-dev comerr-dev pkg-config gcc make fio xfsprogs btrfs-progs util-linux jq chromium slurmctld slurmd munge slurm-client
BIN := target/release/layoutlab
# Upstream e2fsprogs tarballs (1.40.2, 1.41.4, 1.41.14) for the period checkers: beside the clone.
VENDOR ?= $(CURDIR)/../shared/vendor

.PHONY: all deps debs period-e2fsprogs build demo test lint bench clean-work docs-figures docs-budgets equivalence

all: build

# Everything the tests need: the Debian packages and Rust (debs), then the period e2fsprogs.
deps: debs period-e2fsprogs

# Debian packages the rig and the image writer need (real mke2fs/e2fsck/debugfs, libext2fs
# headers for the C shim, fio, mkfs.xfs, mkfs.btrfs; Slurm and munge for the private cluster of the
# sweep test). apt-get runs only if something is missing.
debs:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@command -v $(CARGO) >/dev/null || { echo "installing Rust (Debian cargo)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo rustc; }

# The period e2fsprogs (e2fsck, mke2fs, debugfs, dumpe2fs of 1.40.2, 1.41.4, 1.41.14) from
# $(VENDOR) into ~/.cache/layoutlab/e2fsprogs, reused while the tarball and flags are unchanged.
# Only `--e2fsck VERSION` and the period oracle tests use them, so `make build`/`demo` do not wait
# for them (nor need ../shared beside the clone).
period-e2fsprogs:
	scripts/build-period-e2fsprogs.sh $(VENDOR)

build: debs
	$(CARGO) build --release --locked -p layoutlab-cli

# The main job: the first headline result, at the experiment's default scale (~1 minute).
demo: build
	$(BIN) reproduce metacluster-fsck

# Every test binary, as `cargo test --workspace` runs them, then a summary: the ten slowest
# tests, the tests skipped for want of root (none as root), the #[ignore]d full-scale runs and
# the command for each (scripts/run-tests.py; FILTER=name runs the matching tests only).
test: deps
	CARGO=$(CARGO) python3 scripts/run-tests.py $(FILTER)

lint: debs
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

# The experiments whose scale 1 took under 10 minutes here (docs/reproduce-all.md, "Scale 1"):
# `make bench` times each one's stages beside that budget. Left out, over it here (r16,
# 2026-11-29, quiet): large-delete (774 s), metacluster-aging (823 s beside others, 570 s
# alone) and metadata-on-ssd-ext3 (726 s); docs/reproduce-all.md, "Where issue 28 stops".
BENCH_SCALE1 := metacluster-fsck,fio-randread,mkfs-overhead,metacluster-io,ext4-fsck-allocator,ext3-vs-ext4-fsck,request-merging,cache-policies,metadata-on-ssd,metadata-on-ssd-tree,metadata-on-ssd-aging,metadata-on-ssd-today,metadata-on-ssd-aging-today,inode-readahead,random-read

# Performance targets live here, not in timed tests.
bench: build
	$(BIN) bench replay
	$(BIN) bench plan
	$(BIN) bench experiment metacluster-fsck --scale default,1
	$(BIN) bench experiment all --scale 1 --only $(BENCH_SCALE1)

# Every figure and generated table of docs/experiments/metacluster-fsck.md (and README's
# headline) from one build: scale 1 (~1 min with --sensitivity) and scale 0.05, with the sensitivity tables.
docs-figures: build
	LAYOUTLAB=$(BIN) docs/regenerate-figures.sh

# docs/fidelity.md's error-budget blocks (issue 27): about an hour here; ONLY="fio mkfs" for the
# two instant ones (docs/regenerate-budgets.sh says which blocks each name writes).
docs-budgets: build period-e2fsprogs
	LAYOUTLAB=$(BIN) docs/regenerate-budgets.sh

# Before/after equivalence (docs/testing.md, "Equivalence"): record this build's outputs in
# EQUIV_AFTER and compare them with two baseline recordings in EQUIV_BASE/base-1 and base-2
# (plans, images, goldens, streams and replays byte for byte; every experiment's request counts
# exactly and results within the baselines' spread). EQUIV_QUICK=1 leaves out the slow experiments.
EQUIV_BASE ?= /work/equiv
EQUIV_AFTER ?= $(EQUIV_BASE)/after
equivalence: build
	python3 scripts/equivalence.py record $(BIN) $(EQUIV_AFTER) $(if $(EQUIV_QUICK),--quick)
	python3 scripts/equivalence.py compare $(EQUIV_BASE)/base-1 $(EQUIV_BASE)/base-2 $(EQUIV_AFTER)
