#!/usr/bin/env bash
# A long run of the deterministic simulator (release build): SEEDS seeds (default 1 000 000)
# from FIRST (default 0), every fault kind unless arguments say otherwise (they go to
# `sparkwire sim`), in chunks of CHUNK seeds, JOBS chunks at a time (default 1; one process a
# core at most), printing seeds per second and the load average after each round; stops at the
# first round where a seed broke an invariant, whose case is shrunk and written to
# tests/data/sim/found-FIRST.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-1000000}
FIRST=${FIRST:-0}
CHUNK=${CHUNK:-10000}
JOBS=${JOBS:-1}
cargo build --release --quiet --bin sparkwire
bin=${CARGO_TARGET_DIR:-target}/release/sparkwire
start=$(date +%s.%N)
done_seeds=0
while [ "$done_seeds" -lt "$SEEDS" ]; do
  pids=()
  froms=()
  round=0
  for _ in $(seq 1 "$JOBS"); do
    left=$(( SEEDS - done_seeds - round ))
    [ "$left" -gt 0 ] || break
    n=$(( left < CHUNK ? left : CHUNK ))
    from=$(( FIRST + done_seeds + round ))
    "$bin" sim --seeds "$n" --first "$from" "$@" \
      --shrink-to "tests/data/sim/found-$from.txt" &
    pids+=("$!")
    froms+=("$from")
    round=$(( round + n ))
  done
  failed=0
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      echo "a seed from ${froms[$i]} broke an invariant (above); case in tests/data/sim/found-${froms[$i]}.txt" >&2
      failed=1
    fi
  done
  [ "$failed" -eq 0 ] || exit 1
  done_seeds=$(( done_seeds + round ))
  now=$(date +%s.%N)
  rate=$(awk -v n="$done_seeds" -v a="$start" -v b="$now" 'BEGIN { printf "%.0f", n / (b - a) }')
  echo "$done_seeds seeds clean from $FIRST, $rate seeds/s, $(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.0f", b - a }') s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
