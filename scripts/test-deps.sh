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
#   (host/tests/signing.rs), installed by `npm ci` from its lockfile in
#   host/tests/sigstore-js.
#
# Installed when missing and we are root; otherwise the tests that need them
# skip with a message naming this script.
set -eu

missing=""
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] ||
  missing="$missing docker-registry"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v chromedriver >/dev/null 2>&1 || missing="$missing chromium-driver"
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing="$missing fonts-dejavu-core"
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
sigstore_js() {
  js="$(dirname "$0")/../host/tests/sigstore-js"
  [ -d "$js/node_modules/@sigstore/verify" ] || ! command -v npm >/dev/null 2>&1 ||
    npm ci --prefix "$js" --no-audit --no-fund >/dev/null
}
[ -z "$missing" ] && { sigstore_js; exit 0; }

if [ "$(id -u)" != 0 ]; then
  echo "test-deps: missing:$missing and we are not root;" \
       "install with: sudo apt-get install -y$missing" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: missing:$missing and there is no apt-get; the tests that need them skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# apt-get update once: a fresh machine has no package lists.
# shellcheck disable=SC2086 # one word per package
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update >/dev/null
  apt-get install -y --no-install-recommends $missing >/dev/null
}
# docker-registry starts a system service on :5000 where systemd runs; the
# tests start their own registries and need none.
echo "test-deps: installed$missing"
sigstore_js
