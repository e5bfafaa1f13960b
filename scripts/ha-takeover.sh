#!/usr/bin/env bash
# Measures the masters' takeover time: a kill -9 of the active master during a job, to the
# standby ALIVE with both workers and the application re-registered (tests/zookeeper_ha.rs and
# tests/file_ha.rs, `kill_9_during_a_job`), RUNS times per recovery mode, in the release build,
# with the load average before each run. ZooKeeper: a standalone server of Debian's package,
# sessions of 3 s; filesystem: leases of 3 s. Prints each run, then the median and the max.
# Usage: scripts/ha-takeover.sh [RUNS]   (default 5; not in CI)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
export CARGO_TERM_COLOR=never
cargo test --release --all-features --no-run --test zookeeper_ha --test file_ha >/dev/null 2>&1
for mode in zookeeper file; do
  test=$([ "$mode" = zookeeper ] && echo zookeeper_ha || echo file_ha)
  times=()
  for i in $(seq 1 "$runs"); do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    line=$(cargo test -q --release --all-features --test "$test" kill_9 -- --nocapture 2>&1 |
      grep -o 'takeover ([^)]*): [0-9.]*m\?s' || true)
    secs=$(printf '%s\n' "$line" | sed -n 's/.*: \([0-9.]*\)\(m\?s\)$/\1 \2/p' |
      awk '{ if ($2 == "ms") print $1 / 1000; else print $1 }')
    if [ -z "$secs" ]; then
      echo "$mode run $i: FAILED (load $load)"
      exit 1
    fi
    echo "$mode run $i: ${secs} s (load average before: $load)"
    times+=("$secs")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk -v mode="$mode" '
    { t[NR] = $1 }
    END {
      median = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
      printf "%s: %d runs, median %.2f s, max %.2f s\n", mode, NR, median, t[NR]
    }'
done
