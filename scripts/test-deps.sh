#!/bin/sh
# Test dependencies that are not Rust crates, from Debian:
#
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
#   (host/tests/signing.rs), and cel-js with re2js, the second CEL
#   implementation that type-checks and evaluates the generated policies
#   (crates/native/tests/cel_js.rs, crates/conformance/tests/
#   cel_js_evaluation.rs), each
#   installed by `npm ci` from its lockfile in host/tests/sigstore-js and
#   crates/native/tests/cel-js (npm's registry, no root needed).
#
# Installed when missing and we are root with apt-get. Otherwise the script
# exits 1 naming each missing package and the command that installs it: the
# tests that need them fail without them, so `make test` stops here rather
# than reporting those failures after its build.
#
#   scripts/test-deps.sh           install what is missing (as root)
#   scripts/test-deps.sh --check   install nothing: exit 1, naming the fix, when
#                                  something is missing and cannot be installed
#                                  here (not root, no apt-get). `make test` runs
#                                  it before its build, so such a machine fails
#                                  in a second, not after ten minutes.
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
# sigstore-js, then cel-js.
npm_packages() {
  root="$(dirname "$0")/.."
  npm_ci "$root/host/tests/sigstore-js" @sigstore/verify "the signing tests need sigstore-js"
  npm_ci "$root/crates/native/tests/cel-js" re2js \
    "the native policies' type check and second evaluation need cel-js and re2js"
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
