#!/usr/bin/env bash
# Runs the conformance suite against the four reference endpoints and keeps the reports in
# target/conformance/ (JUnit XML and JSON per run). Exit status: the worst of the suite's runs
# (0 every MUST passed, 1 a case failed, 2 the suite could not run).
#
#   bash conformance/ci.sh              release builds (what a user runs)
#   PROFILE=dev bash conformance/ci.sh  debug builds (.ci/run, after `cargo run` built sparkwire)
#   CARGO_ARGS='--features …'           extra flags for both builds
#
# Every process this script starts (masters, the suite, and through the suite the workers,
# drivers and executors it spawns) is stopped when it exits or is interrupted (INT, TERM, HUP;
# nothing can trap a KILL). Every endpoint listens on a port the system picks (port 0): nothing
# here depends on a free well-known port.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-release}"
case "$profile" in
  release) dir=release ;;
  dev | debug) profile=dev dir=debug ;;
  *) echo "PROFILE must be release or dev" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086 # CARGO_ARGS is a list of flags
cargo build -q --profile "$profile" ${CARGO_ARGS:-} --bin sparkwire -p sparkwire
# shellcheck disable=SC2086
cargo build -q --profile "$profile" ${CARGO_ARGS:-} --bin sparkwire-conformance -p sparkwire-conformance
bin="$PWD/target/$dir/sparkwire"
suite="$PWD/target/$dir/sparkwire-conformance"
out="target/conformance"
mkdir -p "$out"
"$suite" --check-cases-md conformance/CASES.md
# COVERAGE.md: every normative sentence of protocol/*.md mapped (conformance/coverage.json), to
# case ids that exist, and the file as generated.
"$suite" --check-coverage-md conformance/COVERAGE.md
# The verdict on real Spark, from the stored runs (scripts/spark/conformance.sh makes them).
"$suite" --check-spark-md conformance/SPARK.md --spark-results conformance/spark

scratch="$(mktemp -d)"
pids=()
# Each process starts in a process group of its own (setsid), so that stopping the group stops
# what it started too: the workers, drivers and executors a suite spawns die with it.
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

# start_master NAME FLAGS...: starts a reference master on a free port in this shell (so that its
# pid is known to cleanup) and sets $addr to its HOST:PORT. The master target runs against a master
# with its default flags (issue 30: it passes every MUST), a --strict one (it also enforces
# protocol/rules.md, where the spec lets a master close), and one speaking each protocol version
# alone (the other version's cases are skipped).
start_master() {
  local name="$1"; shift
  local log="$scratch/$name.log"
  setsid "$bin" master --host 127.0.0.1 --port 0 --webui-port 0 "$@" >"$log" 2>&1 &
  pids+=($!)
  local pid=$! line="" i
  for i in $(seq 1 300); do
    line="$(grep -m1 -o 'sparkwire://[^ ]*' "$log" || true)"
    [ -n "$line" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "the master ($name) exited:" >&2; cat "$log" >&2; exit 2; }
    sleep 0.1
  done
  [ -n "$line" ] || { echo "the master ($name) printed no address in 30 s" >&2; exit 2; }
  addr="${line#sparkwire://}"
}

status=0
# run NAME ARGS...: one run of the suite, in the background of this shell (so that cleanup stops
# it too) with its reports under $out/NAME.{json,xml}; records the worst exit status.
run() {
  local name="$1"; shift
  setsid "$suite" "$@" --json "$out/$name.json" --junit "$out/$name.xml" &
  pids+=($!)
  local code=0
  wait "$!" || code=$?
  [ "$code" -gt "$status" ] && status=$code
  return 0
}

secret="$scratch/secret"
printf 'conformance-shared-secret\n' >"$secret"
chmod 600 "$secret"

start=$(date +%s%N)
start_master master
run master --target master --addr "$addr"
# The cases about server settings (resource limits, the admin secret, TLS) start a master of
# their own for each case, with the settings the case chooses (--spawn-server).
run master-servers --target master --addr "$addr" --cases handshake/5/0/ --cases spec/8/limits/ \
  --cases spec/13/admin/ --cases handshake/10.1/admin-proof-ignored \
  --cases handshake/10.1/wrong-admin-proof-refused --cases handshake/11/ \
  --spawn-server "$bin master --port {port} --port-retries 0 --no-webui --exit-with-stdin --max-connections {max_connections} --idle-timeout {idle_timeout} --frame-read-timeout {frame_read_timeout} --max-queued-bytes {max_queued_bytes} --max-frame-bytes {max_frame_bytes} [[--secret-file {secret_file}]] [[--admin-secret-file {admin_secret_file}]] [[--tls-cert {tls_cert} --tls-key {tls_key}]]"
start_master master-strict --strict
run master-strict --target master --addr "$addr"
start_master master-v1 --protocol-versions 1
run master-v1 --target master --addr "$addr"
start_master master-v2 --protocol-versions 2
run master-v2 --target master --addr "$addr"
start_master master-consolidate --spread-out false --worker-timeout 2
run master-consolidate --target master --addr "$addr" --spread-out false --worker-timeout 2 \
  --cases flow/master/scheduling --cases flow/master/heartbeat
run worker --target worker \
  --spawn "$bin worker {master_url} --cores {cores} --memory {memory} --worker-timeout {worker_timeout} --register-retry 1 --work-dir {work_dir} --allow-exec-any {allowed_exec} --webui-port 0 --exit-with-stdin"
run driver --target driver \
  --spawn "$bin driver --master {master_url} --job {job} --partitions {partitions} --param {param} --max-message-size {max_message_size} --executor-cores {cores}"
run executor --target executor \
  --spawn "$bin executor --driver-url {driver_url} --executor-id {executor_id} --cores {cores} --app-id {app_id} --worker-url {worker_url}"
# Each target once more, the whole suite against an endpoint holding a shared secret that the
# suite is given (--secret-file): every connection the suite opens or accepts then authenticates
# (protocol/handshake.md §10) before its case's own bytes, and the authentication cases run too.
# The executor reads the secret from SPARKWIRE_SECRET_FILE, which the suite sets as a worker does.
start_master master-secured --secret-file "$secret"
run master-secured --target master --addr "$addr" --secret-file "$secret"
run worker-secured --target worker --secret-file "$secret" \
  --spawn "$bin worker {master_url} --cores {cores} --memory {memory} --worker-timeout {worker_timeout} --register-retry 1 --work-dir {work_dir} --allow-exec-any {allowed_exec} --webui-port 0 --exit-with-stdin --secret-file {secret_file}"
run driver-secured --target driver --secret-file "$secret" \
  --spawn "$bin driver --master {master_url} --job {job} --partitions {partitions} --param {param} --max-message-size {max_message_size} --executor-cores {cores} --secret-file {secret_file}"
run executor-secured --target executor --secret-file "$secret" \
  --spawn "$bin executor --driver-url {driver_url} --executor-id {executor_id} --cores {cores} --app-id {app_id} --worker-url {worker_url}"
end=$(date +%s%N)
echo "conformance: every target in $(( (end - start) / 1000000 )) ms (load average: $(cut -d' ' -f1-3 /proc/loadavg)); reports in $out/"
exit "$status"
