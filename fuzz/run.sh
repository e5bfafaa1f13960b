#!/usr/bin/env bash
# Runs fuzz targets for a bounded time each, on the stable toolchain (no sanitizer).
#   fuzz/run.sh SECONDS [TARGET...]   (no TARGET: every target)
# Seeds come from the golden vectors (`sparkwire spec fuzz-seeds`). libFuzzer's memory limits are
# low, so a decoder that trusts a declared length and allocates for it is caught. Whatever fails
# is left in fuzz/artifacts/<target>/; minimise it (`cargo fuzz tmin`), fix the bug, and commit
# the minimised input under fuzz/regressions/<target>/, where `cargo test` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cargo run -q -- spec fuzz-seeds --out fuzz/corpus >/dev/null
if [ $# -eq 0 ]; then
  set -- $(cd fuzz && cargo fuzz list)
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for target in "$@"; do
  echo "== fuzz $target for ${seconds}s"
  status=0
  (cd fuzz && cargo fuzz run --sanitizer none "$target" "corpus/$target" -- \
      -max_total_time="$seconds" -rss_limit_mb=512 -malloc_limit_mb=64 -timeout=10 \
      -print_final_stats=1) >"$log" 2>&1 || status=$?
  grep -E "^(Done|stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb|INFO: Loaded|#[0-9]+[[:space:]]+DONE)" "$log" | tail -6 || true
  if [ "$status" -ne 0 ]; then
    # Show why (a panic's message, libFuzzer's report) and the input, so the log alone is enough
    # to reproduce it.
    echo "!! $target failed (exit $status)"
    grep -v -E "^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)" "$log" | tail -40
    for artifact in fuzz/artifacts/"$target"/*; do
      [ -f "$artifact" ] || continue
      echo "!! input $artifact (hex):"
      od -An -tx1 -v "$artifact" | tr -d ' \n' | fold -w 120
      echo
    done
    exit "$status"
  fi
done
