#!/usr/bin/env bash
# A long run of the deterministic simulator (release build): SEEDS seeds (default 1 000 000)
# from FIRST (default 0) in chunks, printing seeds per second and the load average; stops at the
# first seed that breaks an invariant, shrinks it and writes the case to tests/data/sim/.
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-1000000}
FIRST=${FIRST:-0}
CHUNK=${CHUNK:-10000}
cargo build --release --quiet
bin=target/release/sparkwire
start=$(date +%s.%N)
done_seeds=0
while [ "$done_seeds" -lt "$SEEDS" ]; do
  n=$(( SEEDS - done_seeds < CHUNK ? SEEDS - done_seeds : CHUNK ))
  from=$(( FIRST + done_seeds ))
  if ! "$bin" sim --seeds "$n" --first "$from" "$@" \
      --shrink-to "tests/data/sim/found-$from.txt"; then
    echo "a seed in $from..$(( from + n )) broke an invariant (above); case in tests/data/sim/found-$from.txt" >&2
    exit 1
  fi
  done_seeds=$(( done_seeds + n ))
  now=$(date +%s.%N)
  rate=$(awk -v n="$done_seeds" -v a="$start" -v b="$now" 'BEGIN { printf "%.0f", n / (b - a) }')
  echo "$done_seeds seeds clean, $rate seeds/s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
