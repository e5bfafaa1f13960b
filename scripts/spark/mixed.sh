#!/usr/bin/env bash
# One master for a fleet in migration (issue 37 item 4, SPEC §15.5): a sparkwire master told NO
# release serves a real Spark OLD worker and application and a real Spark NEW worker and
# application at once, and places each application's executors only on the worker of its own
# release.
#
#   bash scripts/spark/mixed.sh [OLD NEW]        # default: 3.5.9 4.3.0
#
# Checks, in order:
#   1. `sparkwire master --spark-port 0` (no --spark-release) and a real worker of NEW; a
#      PySpark application of OLD, started then, gets no executor on it and waits, and /json says
#      why: "no worker of its release has room" (SPEC §16).
#   2. A real worker of OLD registers (/json gives each worker its release, `sparkrelease`) and a
#      PySpark application of NEW starts beside the OLD one: /json shows both at once, each with
#      the 2 cores of one worker (spark.cores.max=2; each application stays registered until the
#      script has seen that), and each ran a JVM job and a Python job (sum of squares of
#      1..100000): all four results are 333338333350000.
#   3. /json lists both applications FINISHED with their releases, and each worker's work
#      directory holds executors of the application of its own release only.
# Everything started is stopped by PID; logs are kept only when a check fails (or with
# SPARKWIRE_KEEP_LOGS=1). Prints one line per check ("mixed: ok: …" or "mixed: FAIL: …") and a
# last line "mixed OLD+NEW: N passed, M failed". Exit 0 only when every check held.
# SPARKWIRE_BIN names the sparkwire binary (default: target/debug/sparkwire, built when missing).
set -uo pipefail

old=${1:-3.5.9}
new=${2:-4.3.0}
root=$(cd "$(dirname "$0")/../.." && pwd)
# stop, wait_for, json, field, json_until
source "$root/scripts/spark/lib.sh"
bin=${SPARKWIRE_BIN:-$root/target/debug/sparkwire}
if [ ! -x "$bin" ]; then
  (cd "$root" && cargo build -q --all-features --bin sparkwire) || exit 1
fi

# Each release's environment, read now (installs are cached and locked by env.sh).
declare -A home python
for r in "$old" "$new"; do
  env_out=$(bash "$root/scripts/spark/env.sh" "$r") || { echo "mixed: FAIL: no Spark $r environment"; exit 1; }
  home[$r]=$(echo "$env_out" | sed -n 's/^export SPARK_HOME=//p')
  python[$r]=$(echo "$env_out" | sed -n 's/^export PYSPARK_PYTHON=//p')
  java_home=$(echo "$env_out" | sed -n 's/^export JAVA_HOME=//p')
done
export JAVA_HOME=$java_home

work=$(mktemp -d "/tmp/sparkwire-mixed.XXXXXX")
pids=()
passed=0
failed=0
finish() {
  local pid
  for pid in "${pids[@]}"; do stop "$pid"; done
  if [ "$failed" != 0 ] || [ "${SPARKWIRE_KEEP_LOGS:-0}" = 1 ]; then
    echo "mixed: logs kept in $work" >&2
    if [ "$failed" != 0 ]; then
      for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 20 "$f" >&2; }; done
    fi
  else
    rm -rf "$work"
  fi
  echo "mixed $old+$new: $passed passed, $failed failed"
}
trap finish EXIT
ok() { echo "mixed: ok: $*"; passed=$((passed + 1)); }
bad() { echo "mixed: FAIL: $*"; failed=$((failed + 1)); }

export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_NO_DAEMONIZE=1
export SPARK_DAEMON_MEMORY=256m SPARK_CONF_DIR=$work/conf
unset SPARK_MASTER_OPTS SPARK_WORKER_OPTS SPARK_DIST_CLASSPATH
mkdir -p "$work/conf"

"$bin" master --port 0 --webui-port 0 --spark-port 0 --worker-timeout 10 \
  >"$work/master.out" 2>"$work/master.log" </dev/null &
pids+=($!)
if ! wait_for 20 "$work/master.out" "Spark wire on" "${pids[0]}"; then
  bad "the sparkwire master did not start"; exit 1
fi
spark_url=$(sed -n 's/^sparkwire master Spark wire on //p' "$work/master.out")
ui=$(sed -n 's|^sparkwire master web UI at http://||p' "$work/master.out")

start_worker() { # RELEASE: a real Spark worker of RELEASE (2 cores, 1 GiB), work dir $work/worker-RELEASE
  local r=$1
  mkdir -p "$work/worker-$r"
  SPARK_HOME=${home[$r]} SPARK_WORKER_OPTS="-Dspark.worker.timeout=10" \
    "${home[$r]}/bin/spark-class" org.apache.spark.deploy.worker.Worker \
    --host 127.0.0.1 --port 0 --webui-port 0 --cores 2 --memory 1024M --work-dir "$work/worker-$r" "$spark_url" \
    >"$work/worker-$r.log" 2>&1 </dev/null &
  pids+=($!)
  if wait_for 90 "$work/worker-$r.log" "Successfully registered with master $spark_url" "$!"; then
    ok "a real Spark $r worker registered (no --spark-release)"
  else
    bad "the Spark $r worker did not register"; exit 1
  fi
}

cat >"$work/job.py" <<'PY'
import os, sys, time
from pyspark.sql import SparkSession
s = (SparkSession.builder.master(sys.argv[1]).appName(sys.argv[2])
     .config("spark.executor.memory", "512m").config("spark.cores.max", "2")
     .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
     .getOrCreate())
s.sparkContext.setLogLevel("WARN")
print("RESULT_JVM", s.range(1, 100001).selectExpr("sum(id * id)").collect()[0][0])
print("RESULT_PY", s.sparkContext.parallelize(range(1, 100001), 4).map(lambda x: x * x).sum(), flush=True)
# Stays registered (its executors held) until the script has seen both applications at once.
deadline = time.time() + 120
while not os.path.exists(sys.argv[3]) and time.time() < deadline:
    time.sleep(0.2)
s.stop()
PY
start_app() { # RELEASE NAME: the job of RELEASE's PySpark in the background; sets app_pid
  local r=$1 name=$2
  SPARK_HOME=${home[$r]} PYSPARK_PYTHON=${python[$r]} PYSPARK_DRIVER_PYTHON=${python[$r]} \
    timeout 300 "${python[$r]}" "$work/job.py" "$spark_url" "$name" "$work/$name.done" >"$work/$name.log" 2>&1 </dev/null &
  app_pid=$!
  pids+=("$app_pid")
}

# 1. The NEW worker alone; an OLD application waits for a worker of its release.
start_worker "$new"
start_app "$old" "mixed-$old"
old_pid=$app_pid
if state=$(json_until "$ui" 90 "any(a['name'] == 'mixed-$old' and (a.get('waitingreason') or '').startswith('no worker of its release has room') for a in s['activeapps'])"); then
  ok "the $old application waits: $(echo "$state" | field "[a['waitingreason'] for a in s['activeapps'] if a['name'] == 'mixed-$old'][0]")"
else
  bad "/json does not say the $old application waits for a worker of its release: $(echo "$state" | field "[(a['name'], a.get('waitingreason')) for a in s['activeapps']]" 2>/dev/null)"
fi
[ -z "$(ls -A "$work/worker-$new")" ] && ok "no executor of the $old application on the $new worker" \
  || bad "the $new worker ran executors of the $old application: $(ls "$work/worker-$new")"

# 2. The OLD worker joins; the NEW application starts beside the waiting one.
start_worker "$old"
start_app "$new" "mixed-$new"
new_pid=$app_pid
# A release is announced as a label: one release, or the releases its streams leave open joined
# by "|" (SPEC §15.5); each worker's names its own release and not the other's.
if json_until "$ui" 20 "sorted([r for r in ['$old', '$new'] if r in (w.get('sparkrelease') or '').split('|')] for w in s['workers'] if w['state'] == 'ALIVE') == sorted([['$old'], ['$new']])" >/dev/null; then
  ok "/json gives each worker its release ($old, $new): $(json "$ui" | field "[w.get('sparkrelease') for w in s['workers']]")"
else
  bad "/json does not give the workers' releases: $(json "$ui" | field "[(w['id'], w.get('sparkrelease')) for w in s['workers']]")"
fi
# Both applications hold their executors at once, each all the cores of one worker.
if json_until "$ui" 180 "sorted(a['name'] for a in s['activeapps'] if a['cores'] == 2) == sorted(['mixed-$old', 'mixed-$new'])" >/dev/null; then
  ok "both applications run at once, each with 2 cores"
else
  bad "the two applications never ran at once: $(json "$ui" | field "[(a['name'], a['cores'], a.get('waitingreason')) for a in s['activeapps']]")"
fi
touch "$work/mixed-$old.done" "$work/mixed-$new.done"
wait "$old_pid" 2>/dev/null
wait "$new_pid" 2>/dev/null
for r in "$old" "$new"; do
  for kind in JVM PY; do
    got=$(grep -o "RESULT_$kind [0-9]*" "$work/mixed-$r.log" | sed "s/^RESULT_$kind //")
    if [ "$got" = 333338333350000 ]; then
      ok "the PySpark $r application's $kind job gave $got"
    else
      bad "the PySpark $r application's $kind job gave '${got}'"
    fi
  done
done

# 3. Both FINISHED with their releases; each worker ran only its own release's executors.
if state=$(json_until "$ui" 20 "sorted((a['name'], [r for r in ['$old', '$new'] if r in (a.get('sparkrelease') or '').split('|')]) for a in s['completedapps'] if a['state'] == 'FINISHED') == sorted([('mixed-$old', ['$old']), ('mixed-$new', ['$new'])])"); then
  ok "/json lists both applications FINISHED with their releases"
else
  bad "/json: $(echo "$state" | field "[(a['name'], a['state'], a.get('sparkrelease')) for a in s['completedapps']]" 2>/dev/null)"
fi
for r in "$old" "$new"; do
  id=$(echo "$state" | field "[a['id'] for a in s['completedapps'] if a['name'] == 'mixed-$r'][0]" 2>/dev/null)
  dirs=$(ls "$work/worker-$r" 2>/dev/null | tr '\n' ' ')
  if [ -n "$id" ] && [ "$(ls "$work/worker-$r")" = "$id" ]; then
    ok "the $r worker ran executors of $id (the $r application) only"
  else
    bad "the $r worker's work directory holds '$dirs', not $id alone"
  fi
done
echo "mixed: the master's placements: $(grep -o 'Launching executor [^ ]* on worker [^ ]*' "$work/master.log" | sed 's/Launching executor //' | tr '\n' ' ')"
[ "$failed" = 0 ]
