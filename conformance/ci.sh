#!/usr/bin/env bash
# Runs the conformance suite against the four reference endpoints (release builds) and keeps the
# reports in target/conformance/ (JUnit XML and JSON per target). Exit status: the suite's worst.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q --bin sparkwire -p sparkwire
cargo build --release -q -p sparkwire-conformance
bin="$PWD/target/release/sparkwire"
suite="$PWD/target/release/sparkwire-conformance"
out="target/conformance"
mkdir -p "$out"
"$suite" --check-cases-md conformance/CASES.md

master_pids=()
start_master() { # prints the master's address
  local fifo
  fifo="$(mktemp -u)"; mkfifo "$fifo"
  "$bin" master --port 0 --webui-port 0 --strict "$@" >"$fifo" 2>/dev/null &
  master_pids+=($!)
  local line; read -r line <"$fifo"; rm -f "$fifo"
  echo "${line##*sparkwire://}"
}
cleanup() { for p in "${master_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

status=0
start=$(date +%s.%N)
# The reference master needs --strict today to refuse misrouted messages (route/…, rules/…).
addr="$(start_master)"
"$suite" --target master --addr "$addr" --json "$out/master.json" --junit "$out/master.xml" || status=$?
addr2="$(start_master --spread-out false --worker-timeout 2)"
"$suite" --target master --addr "$addr2" --spread-out false --worker-timeout 2 \
  --cases flow/master/scheduling --cases flow/master/heartbeat \
  --json "$out/master-consolidate.json" --junit "$out/master-consolidate.xml" || status=$?
"$suite" --target worker --json "$out/worker.json" --junit "$out/worker.xml" \
  --spawn "$bin worker {master_url} --cores {cores} --memory {memory} --worker-timeout {worker_timeout} --register-retry 1 --work-dir {work_dir} --allow-exec-any {allowed_exec} --webui-port 0 --exit-with-stdin" || status=$?
"$suite" --target driver --json "$out/driver.json" --junit "$out/driver.xml" \
  --spawn "$bin driver --master {master_url} --job {job} --partitions {partitions} --param {param} --max-message-size {max_message_size} --executor-cores {cores}" || status=$?
"$suite" --target executor --json "$out/executor.json" --junit "$out/executor.xml" \
  --spawn "$bin executor --driver-url {driver_url} --executor-id {executor_id} --cores {cores} --app-id {app_id} --worker-url {worker_url}" || status=$?
end=$(date +%s.%N)
echo "conformance: all targets in $(echo "$end - $start" | bc) s; reports in $out/"
exit "$status"
