#!/usr/bin/env bash
# How long the master target takes against a reference master, first as it is (the passing time,
# plain and holding a shared secret) and then behind each of the suite's own faults (the fault
# proxy, `--fault NAME`; every fault the suite has, from `sparkwire-conformance --list-faults`),
# with the suite's default flags. It prints a table: one row per run with its wall time, that time
# over the passing time, the exit status, the totals and the cases that timed out or were not run,
# then the load average before and after and the slowest run. Exit status 1 when a run took LIMIT
# seconds or more (60 by default; issue 30: "against each of the suite's own faults, the master
# target finishes in under 60 s"), 2 when the suite or a master could not run.
#
#   bash conformance/tests/fault-times.sh                 debug builds (PROFILE=release: release)
#   LIMIT=60 FAULTS="mute keep-open" bash conformance/tests/fault-times.sh
#   BIN_DIR=/some/dir bash conformance/tests/fault-times.sh   binaries already built, not rebuilt
#
# The authentication faults (auth-bypass, any-proof, bad-own-proof) run against a master holding
# a shared secret, which the suite is given; their times are compared with the secured passing
# time. Every process this script starts is stopped when it exits (by the pid of its process
# group); every port is picked by the system.
set -euo pipefail
cd "$(dirname "$0")/../.."
profile="${PROFILE:-dev}"
case "$profile" in
  release) dir=release ;;
  dev | debug) profile=dev dir=debug ;;
  *) echo "PROFILE must be release or dev" >&2; exit 2 ;;
esac
limit="${LIMIT:-60}"
if [ -n "${BIN_DIR:-}" ]; then
  bin="$BIN_DIR/sparkwire"
  suite="$BIN_DIR/sparkwire-conformance"
else
  cargo build -q --profile "$profile" --bin sparkwire -p sparkwire
  cargo build -q --profile "$profile" --bin sparkwire-conformance -p sparkwire-conformance
  bin="$PWD/target/$dir/sparkwire"
  suite="$PWD/target/$dir/sparkwire-conformance"
fi
faults="${FAULTS:-$("$suite" --list-faults)}"

scratch="$(mktemp -d)"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  sleep 0.2
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

secret="$scratch/secret"
printf 'fault-times-secret\n' >"$secret"
chmod 600 "$secret"

# start_master NAME FLAGS...: a reference master on a free port (its pid in $master, its log
# $scratch/NAME.log), $addr its address.
start_master() {
  local log="$scratch/$1.log"
  shift
  setsid "$bin" master --host 127.0.0.1 --port 0 --webui-port 0 --strict "$@" >"$log" 2>&1 &
  master=$!
  pids+=("$master")
  local line="" i
  for i in $(seq 1 300); do
    line="$(grep -a -m1 -o 'sparkwire://[^ ]*' "$log" 2>/dev/null || true)"
    [ -n "$line" ] && break
    kill -0 "$master" 2>/dev/null || { echo "the master exited:" >&2; cat "$log" >&2; exit 2; }
    sleep 0.1
  done
  [ -n "$line" ] || { echo "the master printed no address in 30 s" >&2; exit 2; }
  addr="${line#sparkwire://}"
}

# measure NAME FAULT|"" SECURED(0|1): one run of the master target; sets $ms and $code and keeps
# its report in $scratch/run.txt.
measure() {
  local name="$1" fault="$2" secured=()
  [ "$3" = 1 ] && secured=(--secret-file "$secret")
  start_master "$name" "${secured[@]}"
  local with=()
  [ -n "$fault" ] && with=(--fault "$fault")
  local start end
  start=$(date +%s%N)
  code=0
  setsid "$suite" --target master --addr "$addr" "${with[@]}" "${secured[@]}" \
    >"$scratch/run.txt" 2>&1 &
  pids+=($!)
  wait "$!" || code=$?
  end=$(date +%s%N)
  kill -TERM -- "-$master" 2>/dev/null || true
  ms=$(((end - start) / 1000000))
  if [ "$code" -ge 2 ]; then
    echo "$name: the suite could not run:" >&2
    cat "$scratch/run.txt" >&2
    exit 2
  fi
}

# row NAME BASE_MS: prints one row of the table for the run just measured.
row() {
  local totals timed notrun
  totals="$(tail -n 1 "$scratch/run.txt")"
  timed="$(grep -Ec 'seen: +the case (timed out|was still running)' "$scratch/run.txt" || true)"
  notrun="$(grep -Ec 'seen: +not run:' "$scratch/run.txt" || true)"
  printf '| %-26s | %6d.%01d | %5s | %4d | %-60s | %4d | %4d |\n' "$1" $((ms / 1000)) \
    $((ms % 1000 / 100)) "$(awk -v a="$ms" -v b="$2" 'BEGIN { printf "%.1f", a / b }')" "$code" \
    "$totals" "$timed" "$notrun"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| run                        |  time s | × pass | exit | totals                                                       | timed out | not run |"
echo "|---|---:|---:|---:|---|---:|---:|"
measure passing "" 0
pass_ms=$ms
row "(no fault)" "$pass_ms"
[ "$code" = 0 ] || { echo "the master target does not pass without a fault:" >&2; cat "$scratch/run.txt" >&2; exit 2; }
measure passing-secured "" 1
secured_ms=$ms
row "(no fault, secret)" "$secured_ms"

status=0
slowest=0
slowest_fault=""
for fault in $faults; do
  case "$fault" in
    auth-bypass | any-proof | bad-own-proof) measure "$fault" "$fault" 1; base=$secured_ms ;;
    *) measure "$fault" "$fault" 0; base=$pass_ms ;;
  esac
  row "$fault" "$base"
  if [ "$ms" -gt "$slowest" ]; then slowest=$ms slowest_fault=$fault; fi
  [ "$ms" -ge $((limit * 1000)) ] && status=1
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "slowest: $slowest_fault in $((slowest / 1000)).$((slowest % 1000 / 100)) s (limit $limit s)"
exit "$status"
