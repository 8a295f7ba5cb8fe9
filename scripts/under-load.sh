#!/bin/sh
# Runs a command N times in a row on a busy machine: beside it, a release
# build of the workspace into a target directory of its own, started again
# (from clean) each time it finishes, so both cores stay busy for as long as
# the runs last. This is how the test suite was checked for races that only
# a loaded machine shows (docs/build.md, "On a busy machine").
#
#   scripts/under-load.sh 20 cargo test -p olm-guard-host --test playground_browser
#   scripts/under-load.sh 1 make test
#
# Prints one line per run (its number, exit code and wall time) and, at the
# end, how many runs passed; exits 1 unless every run passed. Each run's
# output goes to target/under-load/run-<n>.log (or $UNDER_LOAD_LOGS/run-<n>.log);
# the load's target directory is a temporary one (or $UNDER_LOAD_TARGET, kept).
set -u

[ $# -ge 2 ] || { echo "usage: scripts/under-load.sh N COMMAND [ARGS...]" >&2; exit 2; }
runs=$1
shift
root="$(cd "$(dirname "$0")/.." && pwd)"
logs="${UNDER_LOAD_LOGS:-$root/target/under-load}"
mkdir -p "$logs"
load_dir="${UNDER_LOAD_TARGET:-$(mktemp -d)}"

# The load: a release build of the whole workspace, over and over, in a
# process group of its own so that stopping it stops every rustc.
setsid sh -c '
  while :; do
    cargo build --release --workspace --quiet --target-dir "$1" \
      --manifest-path "$2/Cargo.toml" >/dev/null 2>&1
    rm -rf "$1/release"
  done' load "$load_dir" "$root" &
load=$!
stop() {
  kill -- "-$load" 2>/dev/null
  [ -z "${UNDER_LOAD_TARGET:-}" ] && rm -rf "$load_dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

passed=0
n=1
while [ "$n" -le "$runs" ]; do
  start=$(date +%s)
  "$@" >"$logs/run-$n.log" 2>&1
  status=$?
  echo "run $n/$runs: exit $status, $(( $(date +%s) - start )) s ($logs/run-$n.log)"
  [ "$status" -eq 0 ] && passed=$((passed + 1))
  n=$((n + 1))
done
echo "under load: $passed/$runs runs passed: $*"
[ "$passed" -eq "$runs" ]
