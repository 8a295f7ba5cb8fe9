#!/bin/sh
# Kubewarden's policy-server, which the webhook tests register as
# kube-apiserver's admission webhook (crates/kube-harness/src/webhook/,
# docs/live-cluster.md "The webhook path"): the program every Kubewarden user
# runs our modules in.
#
# - $POLICY_SERVER, when set: that binary (any policy-server 1.30 or newer,
#   the container image's `/policy-server` for one), checked to run; nothing
#   is built.
# - Otherwise it is built once per machine from a source archive, by default
#   ../shared/kubewarden/kubewarden-1.36.0-beta.1-src.tar.xz beside the
#   checkout ($POLICY_SERVER_SRC names another): the Rust workspace of
#   kubewarden/kubewarden-controller (crates/policy-server and what it
#   compiles, its Cargo.lock), built as its own README says,
#   `cargo build --release --locked -p policy-server`, in a target directory
#   of its own that is removed afterwards. The binary is kept in
#   ${XDG_CACHE_HOME:-~/.cache}/olm-guard/policy-server/<sha256 of the archive>/,
#   so a second checkout, or a later `make test`, finds it built.
#
# Prints, last on stdout, `build-policy-server: <path of the binary>`, which
# the tests read (crates/kube-harness/src/lib.rs, `policy_server`). Exits 3
# when there is neither $POLICY_SERVER nor a source archive; 1 on any other
# failure.
#
#   scripts/build-policy-server.sh
#   POLICY_SERVER=/usr/local/bin/policy-server scripts/build-policy-server.sh
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
say() { echo "build-policy-server: $*" >&2; }

if [ -n "${POLICY_SERVER:-}" ]; then
  if ! "$POLICY_SERVER" --version >/dev/null 2>&1; then
    say "POLICY_SERVER=$POLICY_SERVER does not run (\`$POLICY_SERVER --version\` failed);" \
        "point it at a policy-server binary, 1.30 or newer, or unset it to build one"
    exit 1
  fi
  echo "build-policy-server: $POLICY_SERVER"
  exit 0
fi

archive="${POLICY_SERVER_SRC:-$root/../shared/kubewarden/kubewarden-1.36.0-beta.1-src.tar.xz}"
if [ ! -f "$archive" ]; then
  say "no policy-server: set POLICY_SERVER to a policy-server binary (1.30 or newer," \
      "for instance the one in Kubewarden's container image), or POLICY_SERVER_SRC to" \
      "its source archive ($archive is missing)"
  exit 3
fi
hash=$(sha256sum "$archive" | cut -c1-64)
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/olm-guard/policy-server/$hash"
binary="$cache/policy-server"
mkdir -p "$cache"

# One build at a time: the tests may ask from several processes at once.
exec 9>"$cache/lock"
flock 9

if [ -x "$binary" ] && "$binary" --version >/dev/null 2>&1; then
  echo "build-policy-server: $binary"
  exit 0
fi

cargo="${CARGO:-cargo}"
work="$cache/build.$$"
trap 'rm -rf "$work"' EXIT
rm -rf "$cache"/build.*
mkdir -p "$work"
say "building policy-server from $archive (once per machine; about 20 minutes on 2 cores)"
tar -xJf "$archive" -C "$work"
(
  cd "$work"
  # Its own target directory, never the caller's: a CARGO_TARGET_DIR or
  # RUSTFLAGS meant for olm-guard's workspace must not reach this build.
  env -u RUSTFLAGS -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS -u CARGO_BUILD_TARGET \
    CARGO_TARGET_DIR="$work/target" CARGO_INCREMENTAL=0 \
    "$cargo" build --release --locked -p policy-server
) || {
  say "cargo build -p policy-server failed (above)"
  exit 1
}
mv "$work/target/release/policy-server" "$binary"
echo "build-policy-server: $binary"
