#!/usr/bin/env bash
# An unmodified PySpark job on a cluster of only sparkwire daemons (issue 26, item 3):
# `sparkwire master --spark-port` and `sparkwire worker --spark-home`, the worker running Spark's
# own executors (CoarseGrainedExecutorBackend) with the command line Spark's worker builds.
#
#   bash scripts/spark/daemons.sh [4.0.1|3.0.3]
#
# 1. `sparkwire master --spark-port 0`; `sparkwire worker --spark-home $SPARK_HOME` registers
#    with it on sparkwire's wire (the master's /json shows one ALIVE worker).
# 2. A PySpark application on the master's Spark wire gets two executors on that worker, which
#    start Spark's executor JVMs; their WorkerWatchers check the worker's Spark-wire port; the job
#    computes the sum of squares of 1..100000 (333338333350000, checked) and a second job
#    survives the loss of one executor (kill -9 of its JVM: the master launches another).
# 3. The application stops: /json lists it FINISHED and the worker's executor JVMs are gone.
# JVMs run one set at a time; everything started is stopped by PID. SPARKWIRE_BIN names the
# sparkwire binary (default: target/debug/sparkwire, built when missing). Exit 0 only when every
# check held.
set -euo pipefail

version=${1:-4.0.1}
case "$version" in
  4.0.1 | 3.0.3) ;;
  *) echo "usage: $0 [4.0.1|3.0.3]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
# stop, wait_for, json, field, start_sparkwire_worker, executor_pids, finish_daemons
source "$root/scripts/spark/lib.sh"
eval "$(bash "$root/scripts/spark/env.sh" "$version")"

bin=${SPARKWIRE_BIN:-$root/target/debug/sparkwire}
if [ ! -x "$bin" ]; then
  (cd "$root" && cargo build -q --all-features --bin sparkwire)
fi

work=$(mktemp -d /tmp/sparkwire-spark-daemons.XXXXXX)
echo "spark daemons: logs in $work (removed at the end unless it fails or SPARKWIRE_KEEP_LOGS=1)" >&2
pids=()
trap 'finish_daemons "spark daemons"' EXIT
fail() { echo "spark daemons: FAIL: $*" >&2; exit 1; }
ok() { echo "spark daemons: ok: $*"; }

export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1
unset SPARK_DIST_CLASSPATH


# 1. The master, and a sparkwire worker running Spark's executors.
"$bin" master --port 0 --webui-port 0 --spark-port 0 --spark-release "$version" --worker-timeout 10 \
  >"$work/master.out" 2>"$work/master.log" </dev/null &
master_pid=$!
pids+=("$master_pid")
wait_for 20 "$work/master.out" "Spark wire on" "$master_pid" || fail "the master did not start"
spark_url=$(sed -n 's/^sparkwire master Spark wire on //p' "$work/master.out")
ui=$(sed -n 's|^sparkwire master web UI at http://||p' "$work/master.out")
sw_url=$(sed -n 's/^sparkwire master listening on //p' "$work/master.out")
ok "sparkwire master: $sw_url, Spark wire $spark_url, web UI $ui"

start_sparkwire_worker worker "$sw_url" 10
worker_pid=$sw_worker_pid
watchers=$(sed -n 's/.*their watchers connect to //p' "$work/worker.out")
for _ in $(seq 1 50); do
  state=$(json "$ui")
  [ "$(echo "$state" | field '[w["state"] for w in s["workers"]]')" = "['ALIVE']" ] && break
  sleep 0.2
done
[ "$(echo "$state" | field '[w["state"] for w in s["workers"]]')" = "['ALIVE']" ] || fail "/json: $state"
ok "the sparkwire worker registered; Spark executors' watchers go to $watchers"

# 2. An unmodified PySpark job, then the loss of an executor.
cat >"$work/job.py" <<'PY'
import os, signal, sys, time
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[1]).appName("sparkwire-daemons")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").getOrCreate())
sc = spark.sparkContext
n = 100000
print("RESULT", sc.parallelize(range(1, n + 1), 4).map(lambda x: x * x).sum(), flush=True)
# Kill one executor JVM while a job runs; the job still ends with the right count.
def slow(x):
    time.sleep(0.2)
    return x
print("READY", flush=True)
sys.stdin.readline()
print("COUNT", sc.parallelize(range(40), 40).map(slow).count(), flush=True)
spark.stop()
PY
mkfifo "$work/job.in"
timeout 240 "$PYSPARK_PYTHON" "$work/job.py" "$spark_url" <"$work/job.in" >"$work/job.out" 2>"$work/job.log" &
job_pid=$!
pids+=("$job_pid")
exec 3>"$work/job.in"
wait_for 180 "$work/job.out" "^READY" "$job_pid" || fail "the first PySpark job did not finish"
want=$((100000 * 100001 * 200001 / 6))
got=$(sed -n 's/^RESULT //p' "$work/job.out")
[ "$got" = "$want" ] || fail "sum of squares: got '$got', want $want"
execs=($(executor_pids))
[ "${#execs[@]}" = 2 ] || fail "expected 2 executor JVMs under the worker, found ${#execs[@]}"
grep -q -- "--worker-url\" \"$watchers\"" "$work"/worker-work/app-*/0/stderr 2>/dev/null \
  || grep -q -- "$watchers" "$work/worker.log" \
  || ps -o args= -p "${execs[0]}" | grep -q -- "--worker-url $watchers" \
  || fail "the executor was not given the worker's watcher URL"
ok "the PySpark job computed $got on 2 Spark executors the sparkwire worker ran"
echo go >&3
sleep 3
kill -KILL "${execs[0]}"
wait_for 180 "$work/job.out" "^COUNT" "$job_pid" || fail "the second job did not finish after an executor was lost"
[ "$(sed -n 's/^COUNT //p' "$work/job.out")" = 40 ] || fail "count: $(cat "$work/job.out")"
exec 3>&-
wait "$job_pid" || fail "the PySpark driver exited with an error"
ok "an executor JVM killed with kill -9 mid-job: the job still counted 40"

# 3. The application ended.
state=$(json "$ui")
[ "$(echo "$state" | field 'len(s["activeapps"])')" = 0 ] || fail "/json: an application still active: $state"
[ "$(echo "$state" | field '[a["state"] for a in s["completedapps"]]')" = "['FINISHED']" ] \
  || fail "/json: $state"
for _ in $(seq 1 50); do [ -z "$(executor_pids)" ] && break; sleep 0.2; done
[ -z "$(executor_pids)" ] || fail "executor JVMs still run after the application ended: $(executor_pids)"
ok "/json lists the application FINISHED; no executor JVM is left"
echo "spark daemons: all checks passed"
