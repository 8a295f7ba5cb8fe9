#!/usr/bin/env bash
# Builds every policy module (or those named) into dist/<name>.wasm.
#
# Route 1: the rustup target wasm32-wasip1 when it is installed.
# Route 2: otherwise Debian's rustc-web + rust-web-src, building std for
#          wasm32-wasip1 ourselves (-Zbuild-std) and linking with wasm-ld
#          against Debian's wasi-libc. `rustup target add` needs the network
#          to rustup's servers, which some machines (ours, CI) do not have.
set -euo pipefail
cd "$(dirname "$0")/.."

POLICIES=("$@")
if [ ${#POLICIES[@]} -eq 0 ]; then
  for d in policies/*/; do POLICIES+=("$(basename "$d")"); done
fi
pkg_args=()
for p in "${POLICIES[@]}"; do pkg_args+=(-p "$p"); done

TARGET=wasm32-wasip1
# Where cargo puts the wasm profile's output: under $CARGO_TARGET_DIR when set.
OUT_DIR=${CARGO_TARGET_DIR:-target}/$TARGET/wasm

have_rustup_target() {
  command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$TARGET"
}

ensure_debian_route() {
  local pkgs=(rustc-web cargo-web rust-web-src lld-19 wasi-libc wabt binaryen)
  local missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "build-wasm: installing ${missing[*]} (Debian route for $TARGET)" >&2
    if [ "$(id -u)" -ne 0 ]; then
      echo "build-wasm: need root to apt-get install ${missing[*]}, or 'rustup target add $TARGET'" >&2
      exit 1
    fi
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  fi
}

# A module starts with 4 MiB of linear memory instead of the linker's ~1 MiB
# (the stack and data): a fresh instance per request then grows its heap in
# fewer steps, each a host round trip and an mprotect; the pages are still
# only backed when written (docs/performance.md, "Against Kubewarden's waPC
# host"). Far below any memory limit a host sets (256 MiB by default).
INITIAL_MEMORY=$((4 << 20))
# The profile optimises for size ("s"), but inlines as -O2 does (LLVM's
# threshold at -O2 and -O3 is 225, at -Os 75): the time of a request on a
# large cluster is serde's reading of the list answers, whose small
# per-token functions only then are inlined into their loops. With
# `wasm-opt -O3` below, 12-18 % faster on the three large workloads for
# 5-6 % more bytes (docs/performance.md, "Inlining as -O2 does").
INLINE_THRESHOLD=225
MODULE_RUSTFLAGS="-C link-arg=--initial-memory=$INITIAL_MEMORY -C llvm-args=-inline-threshold=$INLINE_THRESHOLD"

if have_rustup_target; then
  echo "build-wasm: rustup target $TARGET" >&2
  RUSTFLAGS="$MODULE_RUSTFLAGS" cargo build --profile wasm --target "$TARGET" "${pkg_args[@]}"
else
  ensure_debian_route
  echo "build-wasm: Debian rustc $(/usr/bin/rustc --version | cut -d' ' -f2) with -Zbuild-std for $TARGET" >&2
  # Building std ourselves lets it be built for size, as the modules are:
  # - `optimize_for_size`: std's smaller sorts (merge sort, heapsort), integer
  #   formatting and string searching;
  # - `-Cpanic=immediate-abort` (overriding the profile's "abort"): a panic
  #   traps at once instead of formatting its message for stderr. No host
  #   shows that text to a requester (ours discards a module's stderr, and
  #   either host answers a trap with an error that fails closed); it only
  #   reached policy-server's log. The modules then import no WASI call but
  #   random_get.
  # 10-17 % smaller and no slower (docs/performance.md, "std built for size").
  # The rustup route above builds against the prebuilt std, without either.
  RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc \
  CARGO_TARGET_WASM32_WASIP1_LINKER=/usr/lib/llvm-19/bin/wasm-ld \
  RUSTFLAGS="-C link-self-contained=no -L /usr/lib/wasm32-wasi $MODULE_RUSTFLAGS -Zunstable-options -Cpanic=immediate-abort" \
    /usr/bin/cargo build --profile wasm --target "$TARGET" \
      -Zbuild-std=std -Zbuild-std-features=optimize_for_size "${pkg_args[@]}"
fi

mkdir -p dist
for p in "${POLICIES[@]}"; do
  src="$OUT_DIR/${p//-/_}.wasm"
  [ -f "$src" ] || { echo "build-wasm: $src was not produced" >&2; exit 1; }
  if command -v wasm-opt >/dev/null 2>&1; then
    # -O3, not -Os: binaryen then inlines and unrolls what LLVM left
    # (see INLINE_THRESHOLD above).
    wasm-opt -O3 --all-features --strip-debug "$src" -o "dist/$p.wasm" 2>/dev/null || cp "$src" "dist/$p.wasm"
  else
    cp "$src" "dist/$p.wasm"
  fi
  echo "build-wasm: dist/$p.wasm ($(stat -c %s "dist/$p.wasm") bytes)" >&2
done
