#!/usr/bin/env bash
# How long the master target takes against a reference master behind each of the suite's own
# faults (the fault proxy, `--fault NAME`), with the suite's default flags: one line per fault
# with its wall time, exit status, totals and the load average, then the slowest. Exit status 1
# when a run took LIMIT seconds or more (60 by default; issue 30: "against each of the suite's own
# faults, the master target finishes in under 60 s"), 2 when the suite or a master could not run.
#
#   bash conformance/tests/fault-times.sh                 debug builds (PROFILE=release: release)
#   LIMIT=60 FAULTS="mute keep-open" bash conformance/tests/fault-times.sh
#
# The authentication faults (auth-bypass, any-proof, bad-own-proof) run against a master holding
# a shared secret, which the suite is given. Every process this script starts is stopped when it
# exits (by the pid of its process group); every port is picked by the system.
set -euo pipefail
cd "$(dirname "$0")/../.."
profile="${PROFILE:-dev}"
case "$profile" in
  release) dir=release ;;
  dev | debug) profile=dev dir=debug ;;
  *) echo "PROFILE must be release or dev" >&2; exit 2 ;;
esac
limit="${LIMIT:-60}"
cargo build -q --profile "$profile" --bin sparkwire -p sparkwire
cargo build -q --profile "$profile" --bin sparkwire-conformance -p sparkwire-conformance
bin="$PWD/target/$dir/sparkwire"
suite="$PWD/target/$dir/sparkwire-conformance"
faults="${FAULTS:-accept-any-hello lowest-version refuse-single-version wrong-role pedantic keep-open mute duplicate silent-close failure-without-message off-route auth-bypass any-proof bad-own-proof}"

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

status=0
slowest=0
slowest_fault=""
for fault in $faults; do
  secured=()
  case "$fault" in auth-bypass | any-proof | bad-own-proof) secured=(--secret-file "$secret") ;; esac
  start_master "$fault" "${secured[@]}"
  start=$(date +%s%N)
  code=0
  setsid "$suite" --target master --addr "$addr" --fault "$fault" "${secured[@]}" \
    >"$scratch/run.txt" 2>&1 &
  pids+=($!)
  wait "$!" || code=$?
  end=$(date +%s%N)
  kill -TERM -- "-$master" 2>/dev/null || true
  ms=$(((end - start) / 1000000))
  [ "$code" -ge 2 ] && { echo "$fault: the suite could not run:" >&2; cat "$scratch/run.txt" >&2; exit 2; }
  printf '%-24s %6d.%01d s  exit %d  %s  (load average %s)\n' "$fault" $((ms / 1000)) $((ms % 1000 / 100)) \
    "$code" "$(tail -n 1 "$scratch/run.txt")" "$(cut -d' ' -f1-3 /proc/loadavg)"
  timed="$(grep -m1 '^timed out' "$scratch/run.txt" || true)"
  [ -n "$timed" ] && echo "                          ${timed:0:200}"
  if [ "$ms" -gt "$slowest" ]; then slowest=$ms slowest_fault=$fault; fi
  [ "$ms" -ge $((limit * 1000)) ] && status=1
done
echo "slowest: $slowest_fault in $((slowest / 1000)).$((slowest % 1000 / 100)) s (limit $limit s)"
exit "$status"
