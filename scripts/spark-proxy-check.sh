#!/usr/bin/env bash
# Puts `sparkwire spark proxy` in front of a real Spark 4.0.1 standalone master on loopback, runs a
# PySpark job through it, and checks that the job's result is right, that the proxy decoded every
# frame, and that its trace validates. Not part of CI: it starts three JVMs.
#
#   scripts/spark-proxy-check.sh [OUT_DIR]
#
# Needs Java 17 and Python 3 with venv. pyspark==4.0.1 is installed into $SPARK_VENV
# (default: $OUT_DIR/venv) on the first run. Ports (override with the variables):
# master 27077 (MASTER_PORT), proxy 27070 (PROXY_PORT), worker 27078, driver 27090/27091,
# web UIs 28080/28081/24040.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/spark-proxy-check}
mkdir -p "$out"
out=$(cd "$out" && pwd)
venv=${SPARK_VENV:-$out/venv}
master_port=${MASTER_PORT:-27077}
proxy_port=${PROXY_PORT:-27070}
worker_port=${WORKER_PORT:-27078}

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pyspark; assert pyspark.__version__ == "4.0.1"' 2>/dev/null; then
  echo "== installing pyspark==4.0.1 into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q pyspark==4.0.1
fi
spark_home=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
echo "== Spark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)') at $spark_home"

cargo build -q --bin sparkwire
sparkwire=$PWD/target/debug/sparkwire

export SPARK_HOME=$spark_home SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1
export SPARK_NO_DAEMONIZE=1 SPARK_LOG_DIR=$out/logs SPARK_WORKER_DIR=$out/work
export PYSPARK_PYTHON=$venv/bin/python
mkdir -p "$out/logs" "$out/work"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "!! timed out waiting for $what" >&2
  return 1
}
listening() { ss -ltn "( sport = :$1 )" | grep -q LISTEN; }

echo "== master on 127.0.0.1:$master_port"
"$spark_home/bin/spark-class" org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$master_port" --webui-port 28080 >"$out/logs/master.log" 2>&1 &
pids+=($!)
wait_for 90 "the master" grep -q "I have been elected leader" "$out/logs/master.log"

echo "== proxy on 127.0.0.1:$proxy_port in front of it"
"$sparkwire" spark proxy --listen "127.0.0.1:$proxy_port" --upstream "127.0.0.1:$master_port" \
  --trace "$out/trace.jsonl" >"$out/proxy.out" 2>"$out/proxy.err" &
proxy_pid=$!
pids+=($proxy_pid)
wait_for 30 "the proxy" listening "$proxy_port"

echo "== worker, registering through the proxy"
"$spark_home/bin/spark-class" org.apache.spark.deploy.worker.Worker \
  --host 127.0.0.1 --port "$worker_port" --webui-port 28081 --cores 2 --memory 2g \
  "spark://127.0.0.1:$proxy_port" >"$out/logs/worker.log" 2>&1 &
worker_pid=$!
pids+=($worker_pid)
wait_for 90 "the worker's registration" grep -q "Successfully registered with master" "$out/logs/worker.log"

echo "== job: sum of squares of 0..999 over 8 partitions, 2 executors × 1 core"
cat >"$out/job.py" <<PY
from pyspark import SparkConf, SparkContext
conf = (SparkConf().setMaster("spark://127.0.0.1:$proxy_port").setAppName("sparkwire-proxy-check")
        .set("spark.executor.cores", "1").set("spark.cores.max", "2")
        .set("spark.executor.memory", "512m").set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1").set("spark.driver.port", "27090")
        .set("spark.driver.blockManager.port", "27091").set("spark.ui.port", "24040")
        .set("spark.ui.showConsoleProgress", "false"))
sc = SparkContext(conf=conf)
result = sc.parallelize(range(1000), 8).map(lambda x: x * x).sum()
print("RESULT", result)
sc.stop()
PY
"$venv/bin/python" "$out/job.py" >"$out/job.out" 2>"$out/logs/driver.log"
result=$(awk '/^RESULT/ {print $2}' "$out/job.out")
expected=332833500
echo "   result $result (expected $expected)"
[ "$result" = "$expected" ] || { echo "!! wrong result"; exit 1; }

echo "== stopping the worker, then the proxy and the master"
kill "$worker_pid"; wait "$worker_pid" 2>/dev/null || true
sleep 1
kill "$proxy_pid"
status=0
wait "$proxy_pid" || status=$?
cat "$out/proxy.out"
[ -s "$out/proxy.err" ] && { echo "-- proxy stderr:"; cat "$out/proxy.err"; }

echo "== sparkwire validate --opaque-tasks $out/trace.jsonl"
"$sparkwire" validate --opaque-tasks "$out/trace.jsonl"
if [ "$status" -ne 0 ]; then
  echo "!! the proxy reported violations or frames it could not decode (exit $status)"
  exit "$status"
fi
echo "== ok: the job ran through the proxy and its trace validates"
