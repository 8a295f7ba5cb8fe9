#!/bin/sh
# Test dependencies that are not Rust crates.
#
# docker-registry: Debian's package of the CNCF distribution registry
# (https://github.com/distribution/distribution), the registry the OCI tests
# (crates/oci/tests, host/tests/oci.rs) start on loopback. Installed when
# missing and we are root; otherwise the tests skip with a message naming
# this script.
set -eu

if command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "test-deps: docker-registry is missing and we are not root;" \
       "install it with: sudo apt-get install -y docker-registry" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: docker-registry is missing and there is no apt-get;" \
       "install the CNCF distribution registry as /usr/bin/docker-registry" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# apt-get update once: a fresh machine has no package lists.
apt-get install -y --no-install-recommends docker-registry >/dev/null 2>&1 || {
  apt-get update >/dev/null
  apt-get install -y --no-install-recommends docker-registry >/dev/null
}
# The package starts a system service on :5000 where systemd runs; the tests
# start their own registries and need none.
echo "test-deps: installed $(docker-registry --version 2>/dev/null || echo docker-registry)"
