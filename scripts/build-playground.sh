#!/usr/bin/env bash
# Builds the browser playground (playground/) into dist/playground/:
# the olm-guard-playground crate for wasm32-unknown-unknown (plain exports,
# no imports: playground/src/abi.rs), and the page in playground/www/, whose
# app.js instantiates it. Serve it with `olm-guard playground`.
#
# The same two routes as scripts/build-wasm.sh, for another target:
# Route 1: the rustup target wasm32-unknown-unknown when it is installed.
# Route 2: otherwise Debian's rustc-web + rust-web-src, building std for
#          wasm32-unknown-unknown ourselves (-Zbuild-std) and linking with
#          wasm-ld (no libc: this target has none). `rustup target add`
#          needs the network to rustup's servers, which some machines do not
#          have.
#
# No glue generator: the page's entry points are four plain exports, so
# there is no wasm-bindgen crate to compile nor wasm-bindgen-cli to install
# (about 140 s of CPU on a fresh 2-core machine, docs/build.md).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=wasm32-unknown-unknown
CRATE=olm-guard-playground
OUT=dist/playground
CARGO_TARGET=${CARGO_TARGET_DIR:-target}
WASM="$CARGO_TARGET/$TARGET/wasm/${CRATE//-/_}.wasm"

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

rm -rf "$OUT"
mkdir -p "$OUT"
cp "$WASM" "$OUT/olm_guard_playground.wasm"
cp playground/www/* "$OUT/"
echo "build-playground: $OUT ($(stat -c %s "$OUT/olm_guard_playground.wasm") bytes of wasm); serve it with 'olm-guard playground'" >&2
