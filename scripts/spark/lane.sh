#!/usr/bin/env bash
# One release's interop lane: real Spark RELEASE on a sparkwire master that is told NO release
# (each peer's release is read from the Java streams it sends, SPEC §15.1).
#
#   bash scripts/spark/lane.sh RELEASE...        # e.g. 3.5.9 4.3.0
#
# Per release:
#   1. `sparkwire master --spark-port 0` (no --spark-release); a real Spark worker of RELEASE
#      registers (its own log says so; /json lists it ALIVE) and the master's log names the
#      release it told.
#   2. A PySpark application of RELEASE runs a JVM job (sum of squares of 1..100000 with the
#      DataFrame API) and a Python job (the same sum through an RDD of Python lambdas) on that
#      worker's executors: both must give 333338333350000; /json then lists it FINISHED; neither
#      the worker's log nor the application's shows a message of the master it could not read
#      (InvalidClassException; the master's probes of a release, SPEC §15.3, are asks whose
#      failure Spark logs after "on RPC id": answers, counted apart).
#   3. `sparkwire worker --spark-home` of RELEASE beside the real worker: with spark.cores.max=3
#      a second application's executors run on both workers and the job's result is right.
# Everything started is stopped by PID; logs are kept only when a check fails (or with
# SPARKWIRE_KEEP_LOGS=1). Prints one line per check ("lane RELEASE: ok (CHECK): …" or
# "FAIL (CHECK): …", CHECK being worker, application or sparkwire-worker: steps 1, 2, 3) and a
# last line "RELEASE: N passed, M failed". Exit 0 only when every check of every release held.
# SPARKWIRE_BIN names the sparkwire binary (default: target/debug/sparkwire, built when missing).
set -uo pipefail

[ $# -gt 0 ] || { echo "usage: $0 RELEASE..." >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
# stop, wait_for, json, field, json_until, start_sparkwire_worker
source "$root/scripts/spark/lib.sh"
bin=${SPARKWIRE_BIN:-$root/target/debug/sparkwire}
if [ ! -x "$bin" ]; then
  (cd "$root" && cargo build -q --all-features --bin sparkwire) || exit 1
fi

total_failed=0
lane() { # RELEASE: runs the lane in a subshell of its own
  local release=$1
  (
    set -u
    env_out=$(bash "$root/scripts/spark/env.sh" "$release") || { echo "lane $release: FAIL (worker): no Spark $release environment"; exit 1; }
    eval "$env_out"
    work=$(mktemp -d "/tmp/sparkwire-lane-$release.XXXXXX")
    pids=()
    passed=0
    failed=0
    finish() {
      local pid
      for pid in "${pids[@]}"; do stop "$pid"; done
      if [ "$failed" != 0 ] || [ "${SPARKWIRE_KEEP_LOGS:-0}" = 1 ]; then
        echo "lane $release: logs kept in $work" >&2
        if [ "$failed" != 0 ]; then
          for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 20 "$f" >&2; }; done
        fi
      else
        rm -rf "$work"
      fi
      echo "$release: $passed passed, $failed failed"
    }
    trap finish EXIT
    # ok|bad CHECK TEXT: CHECK is worker, application or sparkwire-worker (scripts/spark/matrix.sh
    # files each line under it).
    ok() { local check=$1; shift; echo "lane $release: ok ($check): $*"; passed=$((passed + 1)); }
    bad() { local check=$1; shift; echo "lane $release: FAIL ($check): $*"; failed=$((failed + 1)); }

    export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_NO_DAEMONIZE=1
    export SPARK_DAEMON_MEMORY=256m SPARK_CONF_DIR=$work/conf
    unset SPARK_MASTER_OPTS SPARK_WORKER_OPTS SPARK_DIST_CLASSPATH
    mkdir -p "$work/conf"

    "$bin" master --port 0 --webui-port 0 --spark-port 0 --worker-timeout 10 \
      >"$work/master.out" 2>"$work/master.log" </dev/null &
    pids+=($!)
    if ! wait_for 20 "$work/master.out" "Spark wire on" "${pids[0]}"; then
      bad worker "the sparkwire master did not start"; exit 1
    fi
    spark_url=$(sed -n 's/^sparkwire master Spark wire on //p' "$work/master.out")
    ui=$(sed -n 's|^sparkwire master web UI at http://||p' "$work/master.out")
    sw_url=$(sed -n 's/^sparkwire master listening on //p' "$work/master.out")

    # 1. A real worker of this release registers with a master told no release.
    mkdir -p "$work/worker-dir"
    SPARK_WORKER_OPTS="-Dspark.worker.timeout=10" "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host 127.0.0.1 --port 0 --webui-port 0 --cores 2 --memory 1024M --work-dir "$work/worker-dir" "$spark_url" \
      >"$work/worker.log" 2>&1 </dev/null &
    worker_pid=$!
    pids+=("$worker_pid")
    if wait_for 90 "$work/worker.log" "Successfully registered with master $spark_url" "$worker_pid"; then
      ok worker "a real Spark $release worker registered (no --spark-release)"
    else
      bad worker "the Spark $release worker did not register"; exit 1
    fi
    # The release told: RELEASE itself, or (where its streams cannot tell them apart, SPEC
    # §15.3) the newest release whose table agrees with everything it sent, RELEASE among them.
    # The worker's connection's last word on it: the releases its streams agree with.
    peer=$(grep -o 'spark front: [0-9.:]* speaks to the master in the role worker' "$work/master.log" | head -n 1 | awk '{ print $3 }')
    told=
    [ -n "$peer" ] && told=$(grep -F "spark front: $peer: " "$work/master.log" | grep 'speaks Spark' | tail -n 1)
    if [ -n "$told" ] && echo "$told" | grep -qE "agree with[^:]*: ([0-9. ]* )?${release//./\\.}( [0-9. ]*)?\)"; then
      ok worker "the master told the worker's release: $(echo "$told" | grep -o 'speaks Spark .*' | cut -c1-240)"
    else
      bad worker "the master's log does not name Spark $release or a release agreeing with it: $(grep -o 'speaks Spark [0-9.]*' "$work/master.log" | sort -u | tr '\n' ' ')"
    fi
    json_until "$ui" 10 's["aliveworkers"] == 1' >/dev/null && ok worker "/json lists the worker ALIVE" \
      || bad worker "/json does not list the worker ALIVE"

    # 2. A PySpark application of this release: a JVM job and a Python job.
    cat >"$work/job.py" <<'PY'
import sys
from pyspark.sql import SparkSession
s = (SparkSession.builder.master(sys.argv[1]).appName(sys.argv[2])
     .config("spark.executor.memory", "512m").config("spark.cores.max", sys.argv[3])
     .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
     .getOrCreate())
s.sparkContext.setLogLevel("WARN")
print("RESULT_JVM", s.range(1, 100001).selectExpr("sum(id * id)").collect()[0][0])
print("RESULT_PY", s.sparkContext.parallelize(range(1, 100001), 4).map(lambda x: x * x).sum())
s.stop()
PY
    if timeout 240 "$PYSPARK_PYTHON" "$work/job.py" "$spark_url" "lane-$release" 2 >"$work/app.log" 2>&1; then
      :
    fi
    for kind in JVM PY; do
      got=$(grep -o "RESULT_$kind [0-9]*" "$work/app.log" | sed "s/^RESULT_$kind //")
      if [ "$got" = 333338333350000 ]; then
        ok application "the PySpark $release application's $kind job gave $got"
      else
        bad application "the PySpark $release application's $kind job gave '${got}'"
      fi
    done
    json_until "$ui" 20 "any(a['name'] == 'lane-$release' and a['state'] == 'FINISHED' for a in s['completedapps'])" >/dev/null \
      && ok application "/json lists the application FINISHED" || bad application "/json does not list the application FINISHED"
    # Every message the master wrote was read: a Spark process that cannot read one (a class
    # written in another release's form) logs an InvalidClassException and drops it. The
    # master's probes of a release (SPEC §15.3) are asks, whose failure Spark logs after
    # "Error while invoking RpcHandler#receive() on RPC id N": those are answers, not losses;
    # every message the master sends a worker or an application is one-way.
    for who in worker app; do
      unread=$(awk '/InvalidClassException: [^;]*; local class incompatible/ && prev !~ /RPC id/ { print } { prev = $0 }' "$work/$who.log" \
        | grep -o 'InvalidClassException: [^;]*; local class incompatible: stream classdesc serialVersionUID = [-0-9]*' | sort -u | head -n 3 | tr '\n' ' ')
      probes=$(awk '/InvalidClassException: [^;]*; local class incompatible/ && prev ~ /RPC id/ { n++ } { prev = $0 } END { print n + 0 }' "$work/$who.log")
      check=application
      [ "$who" = worker ] && check=worker
      if [ -z "$unread" ]; then
        ok "$check" "the real $who read every message the sparkwire master sent it ($probes probes of its release answered with the class it has)"
      else
        bad "$check" "the real $who could not read a message the sparkwire master sent it: $unread"
      fi
    done

    # 3. sparkwire's own worker running this release's executors beside the real worker.
    start_sparkwire_worker sw-worker "$sw_url" 10
    json_until "$ui" 20 's["aliveworkers"] == 2' >/dev/null && ok sparkwire-worker "sparkwire worker --spark-home ($release) registered" \
      || bad sparkwire-worker "the sparkwire worker did not register"
    if timeout 240 "$PYSPARK_PYTHON" "$work/job.py" "$spark_url" "lane-$release-both" 4 >"$work/app2.log" 2>&1; then
      :
    fi
    got=$(grep -o "RESULT_PY [0-9]*" "$work/app2.log" | sed "s/^RESULT_PY //")
    [ "$got" = 333338333350000 ] && ok sparkwire-worker "the second application (spark.cores.max=4, two workers) gave $got" \
      || bad sparkwire-worker "the second application gave '${got}'"
    # An executor of that application ran under sparkwire's worker and reached its driver. Its
    # log is in its stderr, except on 3.3, whose default log4j2 profile (log4j2-defaults.properties,
    # used when the conf dir has none) writes to SYSTEM_OUT, its stdout (back to stderr in 3.4,
    # apache/spark#37854): both are read.
    ran=$(grep -ls "registered with driver" "$work"/sw-worker-work/*/*/stderr "$work"/sw-worker-work/*/*/stdout 2>/dev/null | head -1)
    [ -n "$ran" ] && ok sparkwire-worker "a Spark $release executor ran under sparkwire worker --spark-home and registered with its driver" \
      || bad sparkwire-worker "no executor under sparkwire's worker registered with its driver"
    [ "$failed" = 0 ]
  )
}

for release in "$@"; do
  lane "$release" || total_failed=$((total_failed + 1))
done
exit $((total_failed > 0))
