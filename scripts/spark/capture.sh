#!/usr/bin/env bash
# Captures real Spark standalone RPC traffic on loopback into tests/data/spark/RELEASE/SCENARIO.pcap.
#
#   bash scripts/spark/capture.sh RELEASE [SCENARIO...]   (default: every scenario of that release)
#
# RELEASE: any release of scripts/spark/releases.txt (3.0.0 ... 4.3.0).
# Scenarios: app dynalloc cluster worker-lost failover decommission (3.1 and later) refused
# app-removed reconnect
# (tests/data/spark/README.md says what each one does and which messages it puts on the wire).
# Each run starts a master, workers and applications of that Spark release (scripts/spark/env.sh) on
# free loopback ports, captures only the RPC ports (master, workers, drivers) with tcpdump, runs the
# scenario, stops every process it started by PID, checks that tcpdump dropped nothing and writes the
# capture and SCENARIO.md (the timeline). Logs stay in a temporary directory, printed at the start,
# removed on success unless SPARKWIRE_KEEP_LOGS=1. Needs root for tcpdump (installed when missing).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=releases.sh
source "$here/releases.sh"
version=${1:-}
release_check "$version" "$0 RELEASE [SCENARIO...]"
at_least() { # RELEASE: whether the release captured is RELEASE or later
  [ "$(printf '%s\n%s\n' "$1" "$version" | sort -V | head -n 1)" = "$1" ]
}
all=(app dynalloc cluster worker-lost failover)
at_least 3.1.0 && all+=(decommission)
all+=(refused app-removed reconnect)
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=("${all[@]}")

root=$(cd "$here/../.." && pwd)
outdir=$root/tests/data/spark/$version
mkdir -p "$outdir"

eval "$(bash "$here/env.sh" "$version")"
eval "$(bash "$here/env.sh" --java17 | sed 's/^export JAVA_HOME=/javac_home=/')"
if ! command -v tcpdump >/dev/null; then
  # (waiting up to 5 min for another apt-get to finish)
  apt=(apt-get -o DPkg::Lock::Timeout=300)
  { "${apt[@]}" install -y -qq tcpdump || { "${apt[@]}" update -qq && "${apt[@]}" install -y -qq tcpdump; }; } >/dev/null 2>&1 ||
    { echo "cannot install tcpdump" >&2; exit 1; }
fi

work=$(mktemp -d /tmp/sparkwire-capture.XXXXXX)
echo "capture $version: logs in $work" >&2

# The helper programs (cluster-mode driver, RPC probe, standby recovery factory).
mkdir -p "$work/classes"
"$javac_home/bin/javac" --release 11 -nowarn -cp "$SPARK_HOME/jars/*" -d "$work/classes" "$here/CaptureApps.java" 2>"$work/javac.log" ||
  { cat "$work/javac.log" >&2; exit 1; }
"$javac_home/bin/jar" cf "$work/capture-apps.jar" -C "$work/classes" .
jar=$work/capture-apps.jar
# Spark 3.3-3.5 on Java 17: a worker launches a cluster-mode driver without Spark's module options,
# and it dies (IllegalAccessError on sun.nio.ch.DirectBuffer); they are given to it by configuration.
driver_java_options=
if [ "$(release_java "$version")" = 17 ] && ! at_least 4.0.0; then
  driver_java_options=$("$JAVA_HOME/bin/java" -cp "$jar:$SPARK_HOME/jars/*" 'CaptureApps$ModuleOptions')
fi

pids=()      # every process started, stopped on exit
tcpdump_pid=
t0=0

descendants() { # PID -> its descendants, deepest first
  local c
  for c in $(pgrep -P "$1" 2>/dev/null || true); do descendants "$c"; echo "$c"; done
}

stop_pid() { # PID [SIGNAL]: signal the process and its descendants, wait up to 20 s, then SIGKILL
  local pid=$1 sig=${2:-TERM} tree i
  kill -0 "$pid" 2>/dev/null || return 0
  tree="$(descendants "$pid") $pid"
  kill -"$sig" $pid 2>/dev/null || true
  for i in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  for p in $tree; do kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true; done
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  pids=()
  if [ -n "$tcpdump_pid" ]; then kill -INT "$tcpdump_pid" 2>/dev/null || true; wait "$tcpdump_pid" 2>/dev/null || true; tcpdump_pid=; fi
}
trap cleanup EXIT

note() { # the scenario's timeline
  local now
  now=$(date +%s.%N)
  printf -- '- +%.1f s: %s\n' "$(echo "$now - $t0" | bc)" "$*" >>"$work/$scenario/events"
}

# Every wait is multiplied by SPARKWIRE_CAPTURE_PATIENCE (a whole number, default 1) on a
# loaded machine, where a JVM takes minutes to start.
patience=${SPARKWIRE_CAPTURE_PATIENCE:-1}

wait_log() { # FILE PATTERN SECONDS
  local i
  for i in $(seq 1 $(($3 * 5 * patience))); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "capture $version/$scenario: timed out waiting for '$2' in $1" >&2
  tail -n 30 "$1" >&2 || true
  exit 1
}

free_base() { # a base port B with B..B+39 free on 127.0.0.1
  python3 - <<'PY'
import random, socket
for _ in range(200):
    b = random.randrange(20000, 30000, 50)
    ok = True
    for p in range(b, b + 40):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            ok = False
        finally:
            s.close()
        if not ok:
            break
    if ok:
        print(b)
        break
PY
}

common_env() {
  export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_NO_DAEMONIZE=1
  export SPARK_CONF_DIR=$work/$scenario/conf SPARK_DAEMON_MEMORY=256m
  unset SPARK_MASTER_OPTS SPARK_WORKER_OPTS SPARK_DIST_CLASSPATH
}

start_master() { # [java options...]
  local log=$work/$scenario/master.$((++masters)).log
  (common_env; export SPARK_MASTER_OPTS="$*" SPARK_DIST_CLASSPATH=$jar
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 \
      --port "$MASTER" --webui-port "$MASTER_UI") >"$log" 2>&1 &
  master_pid=$!
  pids+=("$master_pid")
  master_log=$log
}

start_worker() { # N CORES [java options...]
  local n=$1 cores=$2
  shift 2
  local log=$work/$scenario/worker$n.log
  mkdir -p "$work/$scenario/work$n"
  (common_env; export SPARK_WORKER_OPTS="$*"
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 \
      --port $((BASE + n)) --webui-port $((BASE + 20 + n)) --cores "$cores" --memory 2g \
      --work-dir "$work/$scenario/work$n" "spark://127.0.0.1:$MASTER") >"$log" 2>&1 &
  worker_pid[$n]=$!
  pids+=("${worker_pid[$n]}")
}

start_app() { # MODE [spark conf key=value...]: a client-mode PySpark application
  local mode=$1
  shift
  (common_env; exec "$PYSPARK_PYTHON" "$work/app.py" "spark://127.0.0.1:$MASTER" "$mode" "$work/$scenario/go" "$@") \
    >"$work/$scenario/app.log" 2>&1 &
  app_pid=$!
  pids+=("$app_pid")
}

wait_pid() { # PID SECONDS: wait for a process to end by itself
  local i
  for i in $(seq 1 $(($2 * 5 * patience))); do
    kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null || true; return 0; }
    sleep 0.2
  done
  echo "capture $version/$scenario: process $1 still running after $(($2 * patience)) s" >&2
  exit 1
}

probe() { # REQUEST...: ask the master over Spark's RPC client
  (common_env; exec "$JAVA_HOME/bin/java" -Xmx256m -cp "$jar:$SPARK_HOME/jars/*" 'CaptureApps$Probe' 127.0.0.1 "$MASTER" "$@") \
    >>"$work/$scenario/probe.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  wait_pid "$pid" 60
  grep -- ' -> ' "$work/$scenario/probe.log" | tail -n $# | cut -c1-200 | sed 's/^/    /' >>"$work/$scenario/events"
}

submit_cluster() { # LOG [spark-submit options...] -- DRIVER ARGS...: a cluster-mode submission (RPC client)
  local log=$1
  shift
  (common_env; exec "$SPARK_HOME/bin/spark-submit" --master "spark://127.0.0.1:$MASTER" --deploy-mode cluster \
    --driver-memory 512m --executor-memory 512m --total-executor-cores 1 --executor-cores 1 \
    --class 'CaptureApps$Driver' "$@") >"$log" 2>&1 &
  submit_pid=$!
  pids+=("$submit_pid")
}

cat >"$work/app.py" <<'PY'
import os, sys, time
from pyspark import SparkConf, SparkContext

master, mode, go = sys.argv[1:4]
conf = SparkConf().setMaster(master).setAppName("capture-" + mode)
for kv in sys.argv[4:]:
    k, v = kv.split("=", 1)
    conf.set(k, v)
sc = SparkContext(conf=conf)
def job(n):
    return sc.parallelize(range(n), n).map(lambda x: (time.sleep(0.5), x * x)[1]).sum()
print("JOB1", job(4), flush=True)
if mode == "dynalloc":
    # wait for the idle executors to be killed (KillExecutors), at most 60 s
    for _ in range(300):
        if sc._jsc.sc().getExecutorIds().size() == 0:
            break
        time.sleep(0.2)
    print("EXECUTORS GONE", sc._jsc.sc().getExecutorIds().size() == 0, flush=True)
elif mode == "cancel":
    # a job whose tasks run long, cancelled while they run (KillTask); the log level pushed to the
    # executors (UpdateExecutorLogLevel, Spark 4 with spark.executor.syncLogLevel.enabled)
    import threading
    sc.setLogLevel("WARN")
    def long_job():
        try:
            sc.parallelize(range(2), 2).map(lambda x: time.sleep(60)).count()
        except Exception as e:
            print("LONG JOB", type(e).__name__, flush=True)
    t = threading.Thread(target=long_job)
    t.start()
    time.sleep(6)
    sc.cancelAllJobs()
    t.join()
    print("WAITING", flush=True)
    while not os.path.exists(go) and not sc._jsc.sc().isStopped():
        time.sleep(0.2)
    print("CONTEXT STOPPED", sc._jsc.sc().isStopped(), flush=True)
elif mode == "wait":
    print("WAITING", flush=True)
    while not os.path.exists(go):
        time.sleep(0.2)
    print("JOB2", job(4), flush=True)
sc.stop()
print("STOPPED", flush=True)
PY

run_scenario() {
  masters=0
  worker_pid=()
  mkdir -p "$work/$scenario/conf"
  BASE=$(free_base)
  [ -n "$BASE" ] || { echo "no free ports" >&2; exit 1; }
  MASTER=$BASE MASTER_UI=$((BASE + 20))
  # RPC ports BASE..BASE+9 (master, workers 1-2, drivers); web UIs and block managers BASE+20..39.
  cat >"$work/$scenario/conf/spark-defaults.conf" <<CONF
spark.master.rest.enabled false
spark.driver.host 127.0.0.1
spark.driver.bindAddress 127.0.0.1
spark.driver.port $((BASE + 5))
spark.ui.port $((BASE + 24))
spark.driver.blockManager.port $((BASE + 28))
spark.blockManager.port $((BASE + 30))
spark.port.maxRetries 4
spark.driver.memory 512m
spark.executor.memory 512m
spark.ui.showConsoleProgress false
spark.worker.cleanup.enabled false
CONF
  [ -z "$driver_java_options" ] || echo "spark.driver.extraJavaOptions $driver_java_options" >>"$work/$scenario/conf/spark-defaults.conf"
  local pcap=$work/$scenario/$scenario.pcap
  tcpdump -i lo -U -s 0 -w "$pcap" "tcp and portrange $BASE-$((BASE + 9))" 2>"$work/$scenario/tcpdump.log" &
  tcpdump_pid=$!
  wait_log "$work/$scenario/tcpdump.log" "listening on" 20
  t0=$(date +%s.%N)
  : >"$work/$scenario/events"
  note "capture started: master RPC port $MASTER, workers $((BASE + 1)) and $((BASE + 2)), driver $((BASE + 5))"
  "scenario_${scenario//-/_}"
  cleanup_scenario
  sleep 1
  kill -INT "$tcpdump_pid"
  wait "$tcpdump_pid" || true
  tcpdump_pid=
  grep -qx '0 packets dropped by kernel' "$work/$scenario/tcpdump.log" ||
    { cat "$work/$scenario/tcpdump.log" >&2; echo "tcpdump dropped packets" >&2; exit 1; }
  local packets
  packets=$(tcpdump -r "$pcap" 2>/dev/null | wc -l)
  cp "$pcap" "$outdir/$scenario.pcap"
  {
    echo "# $scenario ($version)"
    echo
    echo "\`bash scripts/spark/capture.sh $version $scenario\` on $(date -u +%Y-%m-%d): $packets packets, $(stat -c %s "$pcap") bytes, 0 dropped."
    echo "Master RPC port $MASTER, workers $((BASE + 1))/$((BASE + 2)), driver $((BASE + 5)); the capture holds ports $BASE-$((BASE + 9)) only."
    echo
    cat "$work/$scenario/events"
  } >"$outdir/$scenario.md"
  echo "capture $version/$scenario: $packets packets, $(stat -c %s "$pcap") bytes -> $outdir/$scenario.pcap" >&2
}

cleanup_scenario() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  pids=()
}

stop_all_in_order() { # apps first (already ended), then workers, then the master
  local n
  for n in "${!worker_pid[@]}"; do note "worker $n stopped (SIGTERM)"; stop_pid "${worker_pid[$n]}"; done
  sleep 1
  note "master stopped (SIGTERM)"
  stop_pid "$master_pid"
}

scenario_app() {
  start_master
  wait_log "$master_log" "I have been elected leader" 60
  note "master elected leader"
  start_worker 1 2
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  note "worker 1 registered (2 cores)"
  start_app app spark.cores.max=2 spark.executor.cores=1
  note "client-mode PySpark app started (spark.cores.max=2, spark.executor.cores=1)"
  wait_pid "$app_pid" 120
  grep -q STOPPED "$work/$scenario/app.log" || { cat "$work/$scenario/app.log" >&2; exit 1; }
  note "app ran a 4-task job ($(grep JOB1 "$work/$scenario/app.log")) and stopped"
  stop_all_in_order
}

scenario_dynalloc() {
  start_master
  wait_log "$master_log" "I have been elected leader" 60
  start_worker 1 2
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  note "master up, worker 1 registered (2 cores)"
  start_app dynalloc spark.cores.max=2 spark.executor.cores=1 spark.dynamicAllocation.enabled=true \
    spark.dynamicAllocation.shuffleTracking.enabled=true spark.dynamicAllocation.minExecutors=0 \
    spark.dynamicAllocation.initialExecutors=0 spark.dynamicAllocation.maxExecutors=2 \
    spark.dynamicAllocation.executorIdleTimeout=3s spark.dynamicAllocation.schedulerBacklogTimeout=1s
  note "PySpark app with dynamic allocation (0..2 executors, idle timeout 3 s) started"
  wait_pid "$app_pid" 180
  grep -q "EXECUTORS GONE True" "$work/$scenario/app.log" || { cat "$work/$scenario/app.log" >&2; exit 1; }
  note "a 4-task job made it request executors (RequestExecutors); idle, they were killed (KillExecutors); app stopped"
  stop_all_in_order
}

scenario_cluster() {
  start_master
  wait_log "$master_log" "I have been elected leader" 60
  start_worker 1 3
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  note "master up, worker 1 registered (3 cores)"
  submit_cluster "$work/$scenario/submit1.log" "$jar" sleep 300
  wait_log "$work/$scenario/submit1.log" "Driver successfully submitted as" 60
  local d1
  d1=$(grep -o 'Driver successfully submitted as [^ ]*' "$work/$scenario/submit1.log" | awk '{print $5}')
  note "spark-submit --deploy-mode cluster (RPC client): $d1"
  wait_pid "$submit_pid" 60
  wait_log "$work/$scenario/work1/$d1/stderr" "CaptureApps: count = 4" 120
  note "driver $d1 running, its job done (it sleeps now)"
  probe "status:$d1" state
  note "probe: RequestDriverStatus($d1), RequestMasterState"
  (common_env; exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.Client kill "spark://127.0.0.1:$MASTER" "$d1") \
    >"$work/$scenario/kill.log" 2>&1 &
  local kpid=$!
  pids+=("$kpid")
  wait_pid "$kpid" 60
  note "org.apache.spark.deploy.Client kill $d1 (RequestKillDriver, then it polls the status)"
  wait_log "$work/$scenario/worker1.log" "Killing driver process\|Driver $d1 was killed\|killed" 60
  sleep 2
  submit_cluster "$work/$scenario/submit2.log" --supervise "$jar" fail-once "$work/$scenario/marker"
  wait_log "$work/$scenario/submit2.log" "Driver successfully submitted as" 60
  local d2
  d2=$(grep -o 'Driver successfully submitted as [^ ]*' "$work/$scenario/submit2.log" | awk '{print $5}')
  note "spark-submit --deploy-mode cluster --supervise: $d2 (exits 3 on its first launch)"
  wait_pid "$submit_pid" 60
  wait_log "$work/$scenario/worker1.log" "Driver $d2 exited successfully" 180
  note "the worker relaunched $d2 after exit status 3; the second launch ran its job and exited 0"
  if at_least 4.0.0; then
    probe state "status:$d2" readyz clear killall
    note "probe: RequestMasterState, RequestDriverStatus($d2), RequestReadyz, RequestClearCompletedDriversAndApps, RequestKillAllDrivers"
  else
    probe state "status:$d2"
    note "probe: RequestMasterState, RequestDriverStatus($d2)"
  fi
  stop_all_in_order
}

scenario_worker_lost() {
  start_master
  wait_log "$master_log" "I have been elected leader" 60
  start_worker 1 1
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  note "master up, worker 1 registered (1 core)"
  start_app wait spark.cores.max=1 spark.executor.cores=1
  wait_log "$work/$scenario/app.log" "WAITING" 120
  note "PySpark app ran a job on an executor of worker 1"
  local execs
  execs=$(descendants "${worker_pid[1]}")
  kill -KILL "${worker_pid[1]}"
  wait "${worker_pid[1]}" 2>/dev/null || true
  unset 'worker_pid[1]'
  note "worker 1 killed with SIGKILL"
  wait_log "$master_log" "Removing worker" 60
  note "the master removed worker 1 and told the app (executor lost, worker removed)"
  for p in $execs; do stop_pid "$p"; done
  # Spark 3.0's master does not schedule when it removes a worker; a registration does.
  start_worker 2 1
  wait_log "$work/$scenario/worker2.log" "Successfully registered with master" 60
  wait_log "$work/$scenario/worker2.log" "Asked to launch executor" 60
  note "worker 2 registered; the master launched the app's new executor on it"
  touch "$work/$scenario/go"
  wait_pid "$app_pid" 120
  grep -q STOPPED "$work/$scenario/app.log" || { cat "$work/$scenario/app.log" >&2; exit 1; }
  note "the app ran a second job on worker 2's executor and stopped"
  stop_all_in_order
}

scenario_failover() {
  local recovery=$work/$scenario/recovery
  mkdir -p "$recovery"
  local opts="-Dspark.deploy.recoveryMode=FILESYSTEM -Dspark.deploy.recoveryDirectory=$recovery"
  start_master $opts
  wait_log "$master_log" "I have been elected leader" 60
  start_worker 1 2
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  note "master (FILESYSTEM recovery) up, worker 1 registered"
  start_app wait spark.cores.max=1 spark.executor.cores=1
  wait_log "$work/$scenario/app.log" "WAITING" 120
  note "PySpark app ran a job"
  kill -KILL "$master_pid"
  wait "$master_pid" 2>/dev/null || true
  note "master killed with SIGKILL"
  sleep 3
  start_master $opts
  wait_log "$master_log" "Recovery complete" 120
  note "master restarted on the same port, recovered the worker and the app (MasterChanged, acknowledgements)"
  sleep 2
  touch "$work/$scenario/go"
  wait_pid "$app_pid" 120
  grep -q STOPPED "$work/$scenario/app.log" || { cat "$work/$scenario/app.log" >&2; exit 1; }
  note "the app ran a second job and stopped"
  stop_all_in_order
}

scenario_decommission() {
  start_master
  wait_log "$master_log" "I have been elected leader" 60
  start_worker 1 1 -Dspark.decommission.enabled=true
  start_worker 2 1 -Dspark.decommission.enabled=true
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  wait_log "$work/$scenario/worker2.log" "Successfully registered with master" 60
  note "master up, workers 1 and 2 registered (1 core each, spark.decommission.enabled=true)"
  start_app wait spark.cores.max=2 spark.executor.cores=1 spark.decommission.enabled=true
  wait_log "$work/$scenario/app.log" "WAITING" 120
  note "PySpark app (spark.decommission.enabled=true) ran a job on executors of both workers"
  kill -PWR "${worker_pid[1]}"
  note "worker 1 got SIGPWR"
  wait_log "$master_log" "Decommissioning worker\|decommission" 60
  sleep 5
  probe "decommission-hosts:127.0.0.1"
  note "probe: DecommissionWorkersOnHosts(127.0.0.1)"
  sleep 5
  touch "$work/$scenario/go"
  sleep 8
  stop_pid "$app_pid"
  note "app stopped"
  stop_all_in_order
}

scenario_refused() {
  start_master -Dspark.deploy.recoveryMode=CUSTOM "-Dspark.deploy.recoveryMode.factory=CaptureApps\$StandbyFactory"
  wait_log "$master_log" "Starting Spark master at" 60
  sleep 3
  note "master started with a leader election that never elects it: it stays in STANDBY"
  start_worker 1 1
  wait_log "$work/$scenario/worker1.log" "Connecting to master" 60
  sleep 6
  note "worker 1 asked to register and got MasterInStandby"
  submit_cluster "$work/$scenario/submit.log" "$jar" run
  wait_log "$work/$scenario/submit.log" "Current state is not alive\|not alive" 60
  sleep 1
  stop_pid "$submit_pid"
  note "spark-submit --deploy-mode cluster: SubmitDriverResponse(success = false), the client waited for another master; stopped"
  (common_env; exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.Client kill "spark://127.0.0.1:$MASTER" driver-00000000000000-0000) \
    >"$work/$scenario/kill.log" 2>&1 &
  local kpid=$!
  pids+=("$kpid")
  sleep 8 # its INFO log, where Spark 4's client would say "not alive", is off: give the answer time to come
  stop_pid "$kpid"
  note "Client kill: KillDriverResponse(success = false); stopped"
  if at_least 4.0.0; then
    probe status:driver-00000000000000-0000 state readyz
    note "probe: RequestDriverStatus (the answer carries an exception), RequestMasterState, RequestReadyz"
  else
    probe status:driver-00000000000000-0000 state
    note "probe: RequestDriverStatus (the answer carries an exception), RequestMasterState"
  fi
  note "worker 1 stopped (SIGTERM)"
  stop_pid "${worker_pid[1]}"
  unset 'worker_pid[1]'
  note "standby master stopped (SIGTERM)"
  stop_pid "$master_pid"
  start_master
  wait_log "$master_log" "I have been elected leader" 60
  note "a normal master started on the same port"
  start_worker 2 1
  wait_log "$work/$scenario/worker2.log" "Successfully registered with master" 60
  note "worker 2 registered"
  probe "same-address:$((BASE + 2))"
  note "probe: RegisterWorker with a new id and worker 2's address; the master refused it (RegisterWorkerFailed to worker 2's address)"
  wait_log "$master_log" "Attempted to re-register worker at same address" 30
  stop_all_in_order
}

scenario_app_removed() {
  start_master -Dspark.deploy.maxExecutorRetries=0
  wait_log "$master_log" "I have been elected leader" 60
  start_worker 1 1
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  note "master (spark.deploy.maxExecutorRetries=0) up, worker 1 registered (1 core)"
  start_app cancel spark.cores.max=1 spark.executor.cores=1 spark.executor.syncLogLevel.enabled=true
  wait_log "$work/$scenario/app.log" "WAITING" 120
  note "PySpark app ran a job, set its log level (pushed to executors in Spark 4), started a long job and cancelled it (KillTask)"
  local execs
  execs=$(pgrep -P "${worker_pid[1]}" || true)
  [ -n "$execs" ] || { echo "no executor process under worker 1" >&2; exit 1; }
  kill -KILL $execs
  note "the app's only executor killed with SIGKILL"
  wait_log "$master_log" "Removing app" 60
  wait_log "$work/$scenario/app.log" "CONTEXT STOPPED" 60
  note "the master removed the application (no executor left, no retries allowed: ApplicationRemoved); its SparkContext stopped"
  wait_pid "$app_pid" 60
  stop_all_in_order
}

scenario_reconnect() {
  # The worker heartbeats every 15 s (its spark.worker.timeout is the default 60 s); the master's
  # timeout of 4 s makes it drop the worker between two heartbeats, and the next heartbeat, from a
  # worker it no longer knows, gets ReconnectWorker.
  start_master -Dspark.worker.timeout=4
  wait_log "$master_log" "I have been elected leader" 60
  start_worker 1 1
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master" 60
  note "master (spark.worker.timeout=4) up, worker 1 registered"
  wait_log "$master_log" "Removing worker" 60
  note "the master timed the worker out"
  wait_log "$master_log" "Asking it to re-register" 60
  note "the worker's next heartbeat got ReconnectWorker"
  wait_log "$work/$scenario/worker1.log" "Successfully registered with master.*" 60
  sleep 3
  note "the worker registered again"
  stop_all_in_order
}

for scenario in "${scenarios[@]}"; do
  case " ${all[*]} " in *" $scenario "*) ;; *) echo "unknown scenario for $version: $scenario (known: ${all[*]})" >&2; exit 2 ;; esac
  mkdir -p "$work/$scenario"
  run_scenario
done
cleanup
[ "${SPARKWIRE_KEEP_LOGS:-0}" = 1 ] || rm -rf "$work"
