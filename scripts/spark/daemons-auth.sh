#!/usr/bin/env bash
# A secured PySpark job on a cluster of only sparkwire daemons (issue 39, item 3): the application
# runs with `spark.authenticate=true` (SASL, or with `crypto` also
# `spark.network.crypto.enabled=true`), and its executors run on `sparkwire worker --spark-home`.
#
#   bash scripts/spark/daemons-auth.sh [sasl|crypto]
#
# 1. `sparkwire master --spark-port 0 --secret-file F` and `sparkwire worker --spark-home
#    $SPARK_HOME --secret-file F` (F holds the cluster's secret, which is also the application's
#    spark.authenticate.secret).
# 2. The PySpark application registers through the master's Spark port (Spark's bootstrap), gets
#    two executors on the worker; each executor is handed the secret in _SPARK_AUTH_SECRET (never
#    on its command line: checked with ps), authenticates to the worker's watcher port and to the
#    driver, and the job computes the sum of squares of 1..100000 (checked).
# 3. A second application with the wrong secret is refused by the master: it never registers
#    (/json shows one application only).
# JVMs run one set at a time; everything started is stopped by PID. SPARKWIRE_BIN names the
# sparkwire binary (default: target/debug/sparkwire, built when missing). Exit 0 only when every
# check held.
set -euo pipefail

mode=${1:-sasl}
case "$mode" in
  sasl | crypto) ;;
  *) echo "usage: $0 [sasl|crypto]" >&2; exit 2 ;;
esac
version=4.0.1
root=$(cd "$(dirname "$0")/../.." && pwd)
# stop, wait_for, json, field
source "$root/scripts/spark/lib.sh"
eval "$(bash "$root/scripts/spark/env.sh" "$version")"

bin=${SPARKWIRE_BIN:-$root/target/debug/sparkwire}
if [ ! -x "$bin" ]; then
  (cd "$root" && cargo build -q --all-features --bin sparkwire)
fi

work=$(mktemp -d /tmp/sparkwire-spark-daemons-auth.XXXXXX)
echo "spark daemons ($mode): logs in $work (removed at the end unless it fails or SPARKWIRE_KEEP_LOGS=1)" >&2
pids=()
executor_pids() { # the executor JVMs started under this run's work directory
  pgrep -f "CoarseGrainedExecutorBackend.*--app-id" 2>/dev/null | while read -r p; do
    if [ -r "/proc/$p/cwd" ] && [[ "$(readlink "/proc/$p/cwd")" == "$work"/* ]]; then echo "$p"; fi
  done
}
finish() {
  local status=$?
  local pid
  for pid in "${pids[@]}"; do stop "$pid"; done
  for pid in $(executor_pids); do kill -KILL "$pid" 2>/dev/null || true; done
  if [ "$status" != 0 ]; then
    echo "spark daemons ($mode): FAILED; logs kept in $work" >&2
    for f in "$work"/*.log "$work"/worker-work/app-*/*/stderr; do
      [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 25 "$f" >&2; }
    done
  elif [ "${SPARKWIRE_KEEP_LOGS:-0}" != 1 ]; then
    rm -rf "$work"
  fi
}
trap finish EXIT
fail() { echo "spark daemons ($mode): FAIL: $*" >&2; exit 1; }
ok() { echo "spark daemons ($mode): ok: $*"; }

export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1
unset SPARK_DIST_CLASSPATH

secret="daemons-auth-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')"
umask 077
printf '%s' "$secret" >"$work/secret"
umask 022

# 1. The master and the worker, both with the secret.
"$bin" master --port 0 --webui-port 0 --spark-port 0 --spark-release "$version" --worker-timeout 10 \
  --secret-file "$work/secret" >"$work/master.out" 2>"$work/master.log" </dev/null &
master_pid=$!
pids+=("$master_pid")
wait_for 20 "$work/master.out" "Spark wire on" "$master_pid" || fail "the master did not start"
spark_url=$(sed -n 's/^sparkwire master Spark wire on //p' "$work/master.out")
ui=$(sed -n 's|^sparkwire master web UI at http://||p' "$work/master.out")
sw_url=$(sed -n 's/^sparkwire master listening on //p' "$work/master.out")
ok "sparkwire master with a secret: $sw_url, Spark wire $spark_url"

mkdir -p "$work/worker-work"
"$bin" worker "$sw_url" --port 0 --webui-port 0 --cores 2 --memory 2048 --work-dir "$work/worker-work" \
  --worker-timeout 10 --spark-home "$SPARK_HOME" --spark-port 0 --exit-with-stdin \
  --secret-file "$work/secret" >"$work/worker.out" 2>"$work/worker.log" < <(sleep 100000) &
pids+=("$!")
wait_for 20 "$work/worker.out" "their watchers connect to" "$!" || fail "the sparkwire worker did not start"
for _ in $(seq 1 50); do
  state=$(json "$ui")
  [ "$(echo "$state" | field '[w["state"] for w in s["workers"]]')" = "['ALIVE']" ] && break
  sleep 0.2
done
[ "$(echo "$state" | field '[w["state"] for w in s["workers"]]')" = "['ALIVE']" ] || fail "/json: $state"
ok "the sparkwire worker with the secret registered"

# 2. The secured PySpark job.
cat >"$work/job.py" <<'PY'
import sys
from pyspark.sql import SparkSession
b = (SparkSession.builder.master(sys.argv[1]).appName(sys.argv[3])
     .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
     .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
     .config("spark.driver.host", "127.0.0.1")
     .config("spark.authenticate", "true")
     .config("spark.authenticate.secret", open(sys.argv[2]).read()))
if sys.argv[4] == "crypto":
    b = b.config("spark.network.crypto.enabled", "true")
spark = b.getOrCreate()
n = 100000
print("RESULT", spark.sparkContext.parallelize(range(1, n + 1), 4).map(lambda x: x * x).sum(), flush=True)
spark.stop()
PY
timeout 240 "$PYSPARK_PYTHON" "$work/job.py" "$spark_url" "$work/secret" secured "$mode" \
  >"$work/job.out" 2>"$work/job.log" &
job_pid=$!
pids+=("$job_pid")
# While the job runs: the executors hold the secret in their environment, never in their arguments.
seen=0
for _ in $(seq 1 600); do
  for p in $(executor_pids); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "_SPARK_AUTH_SECRET=$secret"; then
      seen=1
      tr '\0' ' ' <"/proc/$p/cmdline" | grep -q -- "$secret" && fail "the secret is on executor $p's command line"
    fi
  done
  [ "$seen" = 1 ] && break
  kill -0 "$job_pid" 2>/dev/null || break
  sleep 0.2
done
wait "$job_pid" || fail "the secured PySpark driver exited with an error: $(tail -5 "$work/job.log")"
want=$((100000 * 100001 * 200001 / 6))
got=$(sed -n 's/^RESULT //p' "$work/job.out")
[ "$got" = "$want" ] || fail "sum of squares: got '$got', want $want"
[ "$seen" = 1 ] || fail "no executor JVM held _SPARK_AUTH_SECRET"
grep -rq -- "$secret" "$work"/*.log "$work"/worker-work 2>/dev/null && fail "the secret is in a log"
ok "the secured PySpark job ($mode) computed $got on Spark executors the sparkwire worker ran with _SPARK_AUTH_SECRET"

# 3. The wrong secret: refused, never registered.
printf 'not-%s' "$secret" >"$work/wrong"
timeout 120 "$PYSPARK_PYTHON" "$work/job.py" "$spark_url" "$work/wrong" intruder "$mode" \
  >"$work/wrong.out" 2>"$work/wrong.log" </dev/null &
wrong_pid=$!
pids+=("$wrong_pid")
wait "$wrong_pid" && fail "an application with the wrong secret ran: $(cat "$work/wrong.out")"
state=$(json "$ui")
[ "$(echo "$state" | field 'sorted(a["name"] for a in s["activeapps"] + s["completedapps"])')" = "['secured']" ] \
  || fail "/json: $state"
ok "an application with the wrong secret was refused and left no trace in the master's state"
echo "spark daemons ($mode): all checks passed"
