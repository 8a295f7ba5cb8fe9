# olm-guard — build the policy modules, run them in the local host.
#
#   make examples   build every module, evaluate the bundled scenarios (verdict table)
#   make test       fmt + clippy + unit tests + every scenario through the real modules
#
# Both install what they need (Debian packages for the wasm route when the
# rustup wasm32-wasip1 target is absent).

POLICIES := $(notdir $(patsubst %/,%,$(wildcard policies/*/)))
# The dev profile optimises dependencies (wasmtime) already; one build of the
# host then serves annotate, the scenario suite and `cargo test`. The host is
# built by the same command as the unit tests (`--no-run`): a `cargo build -p`
# unifies other features than `cargo test --workspace`, and wasmtime would be
# compiled twice.
HOST     := target/debug/olm-guard
CARGO    ?= cargo
HOST_BUILD = $(CARGO) test $(UNIT) --no-run
# Release binaries, wherever cargo puts them.
RELEASE  := $(or $(CARGO_TARGET_DIR),target)/release

.PHONY: all examples test dist host wasm fmt-check lint unit bench fuzz deploy sessions artifacthub test-deps clean

all: examples

UNIT := --workspace --exclude olm-guard-conformance

host:
	$(HOST_BUILD)

wasm:
	scripts/build-wasm.sh $(POLICIES)

# Annotated modules: metadata.yml (+ README as usage) embedded, like `kwctl annotate`.
dist: host wasm
	@for p in $(POLICIES); do \
	  $(HOST) annotate --metadata policies/$$p/metadata.yml --usage policies/$$p/README.md \
	    --output dist/$$p.wasm dist/$$p.wasm || exit 1; \
	  echo "dist/$$p.wasm ($$(stat -c %s dist/$$p.wasm) bytes, annotated)"; \
	done

examples: dist
	$(HOST) test testdata examples/suites/*.yaml

fmt-check:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Debian's docker-registry (the CNCF distribution registry) for the OCI tests.
test-deps:
	scripts/test-deps.sh

unit: test-deps
	$(CARGO) test $(UNIT)

SESSIONS := target/sessions

# Record every scenario's host-capability session (kwctl's format), then answer
# every scenario from those files alone (no cluster.yaml): same verdicts required.
sessions: dist
	rm -rf $(SESSIONS)
	$(HOST) test testdata --record-dir $(SESSIONS)
	$(HOST) test testdata --replay-dir $(SESSIONS)

# Everything: fmt, clippy, every module built, the playground built, unit and
# integration tests (the playground's in headless Chromium among them, required
# here rather than skipped), every scenario recorded and replayed, and
# Kubewarden's own waPC host on every scenario.
test: export OLM_GUARD_REQUIRE_BROWSER := 1
test: fmt-check lint dist playground unit sessions
	$(CARGO) test -p olm-guard-conformance -- --nocapture

# Modules vs the same rules compiled natively, on the large built-in inputs;
# one-shot runs with and without the compile cache; every context-aware module
# at 10..10,000 objects, as a table and docs/performance-scale.png. Then every
# module on our host (a fresh instance per evaluation) against Kubewarden's waPC
# host (wapc + wasmtime-provider, one long-lived instance, as `kwctl bench`);
# then the audit of a 10,000-object snapshot with all six modules (its last
# line gives the time and the threads, one per core).
#
# Everything here is release-built in one cargo command (one feature set, so
# wasmtime compiles once), and the modules are annotated by that release host:
# a fresh clone builds no debug workspace for a benchmark.
bench: HOST := $(RELEASE)/olm-guard
bench: HOST_BUILD = $(CARGO) build --release -p olm-guard-host -p olm-guard-conformance --bins
bench: dist
	$(RELEASE)/olm-guard bench --workload all --scale --plot docs/performance-scale.png
	$(RELEASE)/olm-guard-reference-bench --dist dist --testdata testdata
	@mkdir -p target
	python3 scripts/audit-snapshot.py 10000 > target/audit-10k.json
	$(RELEASE)/olm-guard audit --cluster target/audit-10k.json -o json > target/audit-10k-report.json

# deploy/: a ClusterAdmissionPolicy per module and policies.yml for a bare
# policy-server, generated from the modules' metadata (a test checks drift).
deploy: dist
	@mkdir -p deploy
	@for p in $(POLICIES); do \
	  $(HOST) scaffold manifest --type ClusterAdmissionPolicy --allow-context-aware \
	    dist/$$p.wasm -o deploy/$$p.yaml 2>/dev/null || exit 1; \
	done
	$(HOST) scaffold policies $(patsubst %,dist/%.wasm,$(POLICIES)) -o deploy/policies.yml

# artifacthub/: Artifact Hub package files from policies/*/metadata.yml and
# README.md (a test checks drift).
artifacthub: host
	$(HOST) scaffold artifacthub policies/*/ --dir artifacthub

# The long fuzz run (docs/reliability.md); a bounded, seeded run is part of
# `make test` (crates/fuzz/tests/bounded.rs).
FUZZ_EXECUTIONS ?= 1000000
fuzz: dist
	$(CARGO) run --release -p olm-guard-fuzz -- --iterations 0 --executions $(FUZZ_EXECUTIONS) --seed 1 --findings target/findings

clean:
	rm -rf dist
	$(CARGO) clean

# The browser playground (playground/, issue 19) in dist/playground/: the rules
# compiled to wasm32-unknown-unknown with wasm-bindgen, and the page. Serve it
# with `olm-guard playground`; host/tests/playground_browser.rs drives it in
# headless Chromium.
.PHONY: playground
playground:
	scripts/build-playground.sh
