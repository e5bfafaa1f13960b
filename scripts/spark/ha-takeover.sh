#!/usr/bin/env bash
# Measures real Spark 4.0.1's master takeover under ZooKeeper recovery, to put beside
# scripts/ha-takeover.sh (sparkwire's): one standalone ZooKeeper server (Debian's package, its
# default tickTime of 2 s), two Spark masters (spark.deploy.recoveryMode=ZOOKEEPER, everything else
# Spark's defaults), one worker and one PySpark application given both masters; then a kill -9 of
# the active master, timed until the standby's /json says ALIVE and lists the worker ALIVE and the
# application (polled every 100 ms). After the takeover the application runs a second job, which
# must give the right answer. RUNS times, one cluster per run, each process stopped by its PID.
# Prints each run (time to the standby RECOVERING, i.e. elected, and to ALIVE) with the load
# average, then the median and the max. Spark 4.0.1's Curator client asks for a 60 s session
# (fixed in SparkCuratorUtil, no setting); the server grants at most 20 ticks, 40 s here.
# Usage: scripts/spark/ha-takeover.sh [RUNS]   (default 3; not in CI; about 1 min a run)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
eval "$(bash scripts/spark/env.sh 4.0.1)"
zk_jar=/usr/share/java/zookeeper.jar
zk_log_conf=/etc/zookeeper/conf_example
[ -f "$zk_jar" ] || { echo "ZooKeeper is not installed: apt-get install zookeeper" >&2; exit 1; }

work=$(mktemp -d /tmp/spark-ha-takeover.XXXXXX)
pids=()

free_port() {
  "$PYSPARK_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Stops one process we started: SIGTERM, up to 10 s, then SIGKILL; then its own children that
# outlived it (the application's gateway JVM) the same way.
stop_pid() {
  local pid=$1 kids
  kids=$(pgrep -P "$pid" 2>/dev/null || true)
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  for k in $kids; do
    kill -TERM "$k" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$k" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$k" 2>/dev/null || true
  done
}

# In reverse order of start: the application before the worker (whose executors it then kills),
# the masters, ZooKeeper last.
stop_all() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
  pids=()
}

finish() {
  local rc=$?
  stop_all
  if [ "$rc" = 0 ]; then rm -rf "$work"; else echo "logs kept in $work" >&2; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

# The master's /json as one line (empty when it does not answer).
master_json() {
  curl -s --max-time 1 "http://127.0.0.1:$1/json/" | tr -d '\n' || true
}
json_status() { "$PYSPARK_PYTHON" -c 'import json, sys
try: print(json.loads(sys.stdin.read())["status"])
except Exception: print("")'; }
# ALIVE when the status is ALIVE, one worker is ALIVE and the application is listed.
json_ready() { "$PYSPARK_PYTHON" -c 'import json, sys
try:
    j = json.loads(sys.stdin.read())
    ok = j["status"] == "ALIVE" and any(w["state"] == "ALIVE" for w in j["workers"]) \
        and any(a["name"] == sys.argv[1] for a in j["activeapps"])
except Exception:
    ok = False
print("yes" if ok else "no")' "$1"; }

status_is() { [ "$(master_json "$1" | json_status)" = "$2" ]; }
some_master_alive() { status_is "$1" ALIVE || status_is "$2" ALIVE; }
ready() { [ "$(master_json "$1" | json_ready "$2")" = yes ]; }
file_written() { # FILE PID: 0 once FILE is written; the run fails when PID is gone
  [ -s "$1" ] && return 0
  kill -0 "$2" 2>/dev/null || { echo "the application exited" >&2; exit 1; }
  return 1
}

wait_for() { # SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out waiting for $what" >&2; return 1; fi
    sleep 0.2
  done
}

now() { date +%s.%N; }

one_run() {
  local run=$1
  local dir=$work/run$run
  mkdir -p "$dir/zk/data" "$dir/conf" "$dir/worker" "$dir/logs"
  local zkp m1 m2 u1 u2 wu
  zkp=$(free_port); m1=$(free_port); m2=$(free_port); u1=$(free_port); u2=$(free_port); wu=$(free_port)

  cat >"$dir/zk/zoo.cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$dir/zk/data
clientPort=$zkp
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
maxClientCnxns=0
EOF
  java -Xmx96m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false -cp "$zk_jar:$zk_log_conf" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zk/zoo.cfg" >"$dir/logs/zookeeper.log" 2>&1 &
  pids+=($!)
  wait_for 60 "ZooKeeper" bash -c "exec 3<>/dev/tcp/127.0.0.1/$zkp && printf srvr >&3 && grep -q standalone <&3" 2>/dev/null

  export SPARK_CONF_DIR=$dir/conf SPARK_LOCAL_IP=127.0.0.1 SPARK_DAEMON_MEMORY=512m
  export SPARK_DAEMON_JAVA_OPTS="-Dspark.deploy.recoveryMode=ZOOKEEPER -Dspark.deploy.zookeeper.url=127.0.0.1:$zkp -Dspark.deploy.zookeeper.dir=/spark-$$-$run"
  local -A ui=([1]=$u1 [2]=$u2) port=([1]=$m1 [2]=$m2) pid=()
  local i
  for i in 1 2; do
    "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 \
      --port "${port[$i]}" --webui-port "${ui[$i]}" >"$dir/logs/master$i.log" 2>&1 &
    pid[$i]=$!
    pids+=($!)
  done
  local active="" standby=""
  wait_for 120 "an ALIVE master" some_master_alive "$u1" "$u2"
  for i in 1 2; do
    if [ "$(master_json "${ui[$i]}" | json_status)" = ALIVE ]; then active=$i; fi
  done
  standby=$((3 - active))
  wait_for 60 "the standby's web UI" status_is "${ui[$standby]}" STANDBY

  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --port 0 \
    --webui-port "$wu" --cores 1 --memory 512m --work-dir "$dir/worker" \
    "spark://127.0.0.1:$m1,127.0.0.1:$m2" >"$dir/logs/worker.log" 2>&1 &
  pids+=($!)

  # The application: a job, then it waits for $dir/go (written after the takeover), runs a second
  # job and checks its answer, then waits for $dir/stop.
  local app=ha-takeover-$$-$run
  cat >"$dir/app.py" <<'EOF'
import os, sys, time
from pyspark import SparkConf, SparkContext
masters, name, dir = sys.argv[1:4]
conf = (SparkConf().setMaster(masters).setAppName(name)
        .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1")
        .set("spark.executor.memory", "512m").set("spark.cores.max", "1"))
sc = SparkContext(conf=conf)
sc.setLogLevel("WARN")
first = sc.parallelize(range(1000), 2).map(lambda x: x * x).sum()
print("first job:", first, flush=True)
open(os.path.join(dir, "first"), "w").write(str(first))
while not os.path.exists(os.path.join(dir, "go")):
    time.sleep(0.1)
second = sc.parallelize(range(1000), 2).map(lambda x: x * x).sum()
print("second job:", second, flush=True)
open(os.path.join(dir, "second"), "w").write(str(second))
while not os.path.exists(os.path.join(dir, "stop")):
    time.sleep(0.1)
sc.stop()
EOF
  "$PYSPARK_PYTHON" "$dir/app.py" "spark://127.0.0.1:$m1,127.0.0.1:$m2" "$app" "$dir" \
    >"$dir/logs/app.log" 2>&1 &
  pids+=($!)
  local app_pid=$!
  wait_for 180 "the application's first job" file_written "$dir/first" "$app_pid"
  wait_for 30 "the active master listing the worker and the application" ready "${ui[$active]}" "$app"
  local load negotiated
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  negotiated=$(grep -o 'negotiated timeout = [0-9]*' "$dir/logs/master$active.log" | tail -n 1 | grep -o '[0-9]*$' || echo '?')
  local t0 t_rec="" t_alive="" j s
  t0=$(now)
  kill -KILL "${pid[$active]}"
  wait "${pid[$active]}" 2>/dev/null || true
  while :; do
    j=$(master_json "${ui[$standby]}")
    s=$(printf '%s' "$j" | json_status)
    if [ -z "$t_rec" ] && { [ "$s" = RECOVERING ] || [ "$s" = COMPLETING_RECOVERY ] || [ "$s" = ALIVE ]; }; then
      t_rec=$(now)
    fi
    if [ "$(printf '%s' "$j" | json_ready "$app")" = yes ]; then t_alive=$(now); break; fi
    if awk -v a="$(now)" -v b="$t0" 'BEGIN { exit !(a - b > 240) }'; then
      echo "run $run: the standby was not ALIVE with the worker and the application within 240 s" >&2
      return 1
    fi
    sleep 0.1
  done
  touch "$dir/go"
  wait_for 120 "the application's second job" file_written "$dir/second" "$app_pid"
  local first second
  first=$(cat "$dir/first"); second=$(cat "$dir/second")
  [ "$first" = "$second" ] || { echo "run $run: second job gave $second, first $first" >&2; return 1; }
  touch "$dir/stop"
  for _ in $(seq 1 100); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.1; done
  stop_all
  local elected alive
  elected=$(awk -v a="$t_rec" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
  alive=$(awk -v a="$t_alive" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
  echo "run $run: ALIVE after ${alive} s (elected, RECOVERING, after ${elected} s; ZooKeeper session ${negotiated} ms; second job ok; load average before the kill: $load)"
  times+=("$alive")
}

times=()
for r in $(seq 1 "$runs"); do
  one_run "$r"
done
printf '%s\n' "${times[@]}" | sort -g | awk '
  { t[NR] = $1 }
  END {
    median = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
    printf "Spark 4.0.1, ZooKeeper recovery: %d runs, median %.2f s, max %.2f s\n", NR, median, t[NR]
  }'
