#!/usr/bin/env bash
# Builds the browser playground (playground/) into dist/playground/:
# the olm-guard-playground crate for wasm32-unknown-unknown, its wasm-bindgen
# glue (`--target web`: an ES module, no bundler), and the page in
# playground/www/, whose app.js imports the glue. Serve it with
# `olm-guard playground`.
#
# The same two routes as scripts/build-wasm.sh, for another target:
# Route 1: the rustup target wasm32-unknown-unknown when it is installed.
# Route 2: otherwise Debian's rustc-web + rust-web-src, building std for
#          wasm32-unknown-unknown ourselves (-Zbuild-std) and linking with
#          wasm-ld (no libc: this target has none). `rustup target add`
#          needs the network to rustup's servers, which some machines do not
#          have.
#
# wasm-bindgen-cli must be exactly the version of the wasm-bindgen crate in
# Cargo.lock (the glue and the crate's custom sections are versioned
# together, and the CLI refuses another). It is installed from crates.io
# into the target directory (tools/wasm-bindgen-<version>) the first time,
# and found there afterwards. Unoptimised (--debug), without debug info and
# only its `wasm-bindgen` binary: it runs for under a second per build on one
# small module, where an optimised build of its ~150 crates would cost a
# fresh machine about a minute more than it saves, and debug info a 134 MB
# binary instead of 24 MB (docs/build.md).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=wasm32-unknown-unknown
CRATE=olm-guard-playground
OUT=dist/playground
CARGO_TARGET=${CARGO_TARGET_DIR:-target}
WASM="$CARGO_TARGET/$TARGET/wasm/${CRATE//-/_}.wasm"

# The wasm-bindgen version Cargo.lock resolves (`name = "wasm-bindgen"`
# followed by its `version = "..."` line).
BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
if [ -z "$BINDGEN_VERSION" ]; then
  echo "build-playground: Cargo.lock has no wasm-bindgen (playground/Cargo.toml depends on it)" >&2
  exit 1
fi
TOOLS="$CARGO_TARGET/tools/wasm-bindgen-$BINDGEN_VERSION"
BINDGEN="$TOOLS/bin/wasm-bindgen"

have_rustup_target() {
  command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$TARGET"
}

ensure_debian_route() {
  local pkgs=(rustc-web cargo-web rust-web-src lld-19)
  local missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "build-playground: installing ${missing[*]} (Debian route for $TARGET)" >&2
    if [ "$(id -u)" -ne 0 ]; then
      echo "build-playground: need root to apt-get install ${missing[*]}, or 'rustup target add $TARGET'" >&2
      exit 1
    fi
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  fi
}

ensure_bindgen() {
  if [ -x "$BINDGEN" ] && [ "$("$BINDGEN" --version 2>/dev/null)" = "wasm-bindgen $BINDGEN_VERSION" ]; then
    return
  fi
  echo "build-playground: installing wasm-bindgen-cli $BINDGEN_VERSION into $TOOLS (once)" >&2
  # Its own target directory, removed once installed: not the workspace's,
  # which `make test`'s test build holds locked at the same time.
  local build="$TOOLS.build"
  rm -rf "$TOOLS" "$build"
  # Without its default features: they give the test runner's HTTP client
  # TLS (rustls with ring's C build, webpki-roots), which `wasm-bindgen`
  # itself never uses; a quarter of the install's CPU.
  local install=(env CARGO_PROFILE_DEV_DEBUG=0 cargo install wasm-bindgen-cli --version "=$BINDGEN_VERSION" --debug
    --no-default-features --bin wasm-bindgen --root "$TOOLS" --target-dir "$build")
  # --locked first: the dependencies wasm-bindgen-cli was released with. A
  # registry that lacks one of them (seen: a crates.io mirror without
  # webpki-roots 1.0.11, which only its HTTP client uses) makes that
  # unresolvable; then the newest compatible ones, saying so. The CLI's own
  # version is exact either way.
  if ! "${install[@]}" --locked >&2; then
    echo "build-playground: wasm-bindgen-cli $BINDGEN_VERSION with its locked dependencies" \
         "is not resolvable from this registry (above); installing it with the newest" \
         "compatible dependencies" >&2
    "${install[@]}" >&2 || {
      echo "build-playground: cannot install wasm-bindgen-cli $BINDGEN_VERSION (above); install it" \
           "yourself at $BINDGEN:" \
           "cargo install wasm-bindgen-cli --version =$BINDGEN_VERSION --locked --root $TOOLS" >&2
      exit 1
    }
  fi
  rm -rf "$build"
}

if have_rustup_target; then
  echo "build-playground: rustup target $TARGET" >&2
  cargo build --profile wasm --target "$TARGET" -p "$CRATE"
else
  ensure_debian_route
  echo "build-playground: Debian rustc $(/usr/bin/rustc --version | cut -d' ' -f2) with -Zbuild-std for $TARGET" >&2
  RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc \
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/lib/llvm-19/bin/wasm-ld \
    /usr/bin/cargo build --profile wasm --target "$TARGET" \
      -Zbuild-std=std,panic_abort -p "$CRATE"
fi
[ -f "$WASM" ] || { echo "build-playground: $WASM was not produced" >&2; exit 1; }

ensure_bindgen
rm -rf "$OUT"
mkdir -p "$OUT"
"$BINDGEN" --target web --no-typescript --out-dir "$OUT" --out-name olm_guard_playground "$WASM"
# No wasm-opt here, unlike build-wasm.sh: Debian bookworm's binaryen (108)
# rewrites wasm-bindgen's externref table so that the glue's
# `table.set(0, undefined)` throws at start-up (seen in Node 20; Chromium not
# tried). The profile's opt-level "s" and LTO already apply.
cp playground/www/* "$OUT/"
echo "build-playground: $OUT ($(stat -c %s "$OUT/olm_guard_playground_bg.wasm") bytes of wasm); serve it with 'olm-guard playground'" >&2
