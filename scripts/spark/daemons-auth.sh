#!/usr/bin/env bash
# Spark's own authentication with real Spark (issue 39, "Done when"): real Spark daemons and PySpark
# applications with `spark.authenticate=true` on sparkwire's daemons and through its proxy.
#
#   bash scripts/spark/daemons-auth.sh [RELEASE] [master] [proxy] [worker] [legacy]
#
# RELEASE: 4.0.1 (the default; the one CI runs), or a later release (4.1.4 runs the proxy part with
# AES-GCM); naming no part runs all three, in this order.
#
# master: `sparkwire master --spark-port 0 --secret-file F`. A real Spark worker and a PySpark
#   application, both with spark.authenticate=true and F's secret, run a job (sum of squares of
#   1..100000, checked): once with SASL (the application with spark.authenticate.
#   enableSaslEncryption=true: SASL's own encryption), once with spark.network.crypto.enabled=true.
#   Then a real
#   worker and an application with a wrong secret: both are refused at the bootstrap (the
#   master logs each at WARN with the peer's address; each peer logs that it could not connect) and
#   /json lists neither (the workers and applications it lists are the two good ones of each).
# proxy: a real Spark master with spark.authenticate=true, spark.network.crypto.enabled=true (and
#   spark.network.crypto.cipher=AES/GCM/NoPadding from Spark 4.1 on), and `sparkwire spark proxy
#   --secret-file F` with the same settings in front of it. A real worker and a PySpark application
#   with those settings, pointed at the proxy, run the job; the proxy's trace holds their
#   RegisterWorker and RegisterApplication (it terminated the encryption on both sides). A
#   worker and an application with a wrong secret are refused by the proxy and the real
#   master's /json lists neither.
# worker: `sparkwire master` and `sparkwire worker --spark-home --secret-file F`. A secured PySpark
#   application runs its executors on the sparkwire worker, with SASL and then with crypto: each
#   executor JVM holds the secret in _SPARK_AUTH_SECRET (never on its command line: read in
#   /proc), authenticates to the worker's watcher port and to the driver; no log holds the secret.
#   An application with the wrong secret is refused and /json lists only the two good ones.
# legacy (named only; a release of 2.2 to 3.1.2, e.g. 3.0.3): the original auth protocol of
#   spark.network.crypto (CVE-2021-38296), SPEC §15.6. `sparkwire master --spark-conf
#   sparkwire.legacyAuthEngine=true`: a real worker and a PySpark application with crypto on and
#   spark.network.crypto.saslFallback=false (so they cannot go on with SASL) register and run the
#   job; the master logs each such session at WARN naming the CVE; a worker with the wrong secret
#   is refused and /json lists it not. Then a master without the setting: the same worker is
#   refused (a WARN naming the CVE), and a worker with crypto on and SASL fallback (Spark's
#   default) registers with SASL after the refusal, as with Spark 3.1.3's master. Last, a real
#   Spark master with the same settings and `sparkwire spark proxy --spark-conf
#   sparkwire.legacyAuthEngine=true` in front of it: a real worker registers through the proxy,
#   which speaks the original protocol on both sides and traces its RegisterWorker.
#
# JVMs run one set at a time; everything started is stopped by PID. SPARKWIRE_BIN names the
# sparkwire binary (default: target/debug/sparkwire, built when missing). Exit 0 only when every
# check held. The secret is a fresh random string each run; files holding it are mode 0600.
set -euo pipefail

version=4.0.1
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9] ]]; then
  version=$1
  shift
fi
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(master proxy worker)
for part in "${parts[@]}"; do
  case "$part" in
    master | proxy | worker | legacy) ;;
    *) echo "usage: $0 [RELEASE] [master] [proxy] [worker] [legacy]" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
# stop, wait_for, json, field, json_until, start_sparkwire_worker, executor_pids, finish_daemons
source "$root/scripts/spark/lib.sh"
eval "$(bash "$root/scripts/spark/env.sh" "$version")"
# AES-GCM (spark.network.crypto.cipher=AES/GCM/NoPadding) is offered from Spark 4.0 on, but 4.0's
# reader opens only the first message of a connection: a real 4.0.1 worker cannot register with a
# real 4.0.1 master over it (seen: the worker's CheckExistence is answered, its RegisterWorker
# never read). The proxy part runs AES-GCM from 4.1 on and AES-CTR before.
gcm=0
major=${version%%.*} rest=${version#*.}
minor=${rest%%.*}
if [ "$major" -gt 4 ] || { [ "$major" = 4 ] && [ "$minor" -ge 1 ]; }; then gcm=1; fi

bin=${SPARKWIRE_BIN:-$root/target/debug/sparkwire}
if [ ! -x "$bin" ]; then
  (cd "$root" && cargo build -q --all-features --bin sparkwire)
fi

work=$(mktemp -d /tmp/sparkwire-spark-daemons-auth.XXXXXX)
echo "spark auth: logs in $work (removed at the end unless it fails or SPARKWIRE_KEEP_LOGS=1)" >&2
pids=()
trap 'finish_daemons "spark auth"' EXIT
fail() { echo "spark auth: FAIL: $*" >&2; exit 1; }
ok() { echo "spark auth: ok [${SECONDS}s]: $*"; }

export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_NO_DAEMONIZE=1
export SPARK_DAEMON_MEMORY=256m SPARK_CONF_DIR=$work/conf
unset SPARK_MASTER_OPTS SPARK_WORKER_OPTS SPARK_DIST_CLASSPATH _SPARK_AUTH_SECRET
mkdir -p "$work/conf"

secret="daemons-auth-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')"
umask 077
printf '%s' "$secret" >"$work/secret"
printf 'not-%s' "$secret" >"$work/wrong"
umask 022
want=$((100000 * 100001 * 200001 / 6))

# The application: argv = master URL, secret file, name, then Spark settings KEY=VALUE. It prints
# RESULT and the sum of squares of 1..100000.
cat >"$work/job.py" <<'PY'
import sys
from pyspark.sql import SparkSession
b = (SparkSession.builder.master(sys.argv[1]).appName(sys.argv[3])
     .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
     .config("spark.cores.max", "1").config("spark.ui.enabled", "false")
     .config("spark.driver.host", "127.0.0.1")
     .config("spark.authenticate", "true")
     .config("spark.authenticate.secret", open(sys.argv[2]).read()))
for kv in sys.argv[4:]:
    k, v = kv.split("=", 1)
    b = b.config(k, v)
spark = b.getOrCreate()
n = 100000
print("RESULT", spark.sparkContext.parallelize(range(1, n + 1), 4).map(lambda x: x * x).sum(), flush=True)
spark.stop()
PY

start_master() { # NAME ARGS...: a sparkwire master with a secret; sets spark_url, ui, sw_url
  local name=$1
  shift
  "$bin" master --port 0 --webui-port 0 --spark-port 0 --spark-release "$version" --worker-timeout 10 \
    --secret-file "$work/secret" "$@" >"$work/$name.out" 2>"$work/$name.log" </dev/null &
  pids+=("$!")
  wait_for 20 "$work/$name.out" "Spark wire on" "$!" || fail "$name did not start"
  spark_url=$(sed -n 's/^sparkwire master Spark wire on //p' "$work/$name.out")
  ui=$(sed -n 's|^sparkwire master web UI at http://||p' "$work/$name.out")
  sw_url=$(sed -n 's/^sparkwire master listening on //p' "$work/$name.out")
}

spark_daemon() { # NAME SECRET-FILE CLASS ARGS... -- SETTINGS...: a real Spark daemon with
  # spark.authenticate=true and SETTINGS as Java system properties, the secret in
  # _SPARK_AUTH_SECRET (as Spark's own launcher hands it over); output in $work/NAME.log; sets pid
  local name=$1 secret_file=$2 class=$3 opts="-Dspark.authenticate=true -Dspark.worker.timeout=10" args=()
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  local kv
  for kv in "$@"; do opts+=" -D$kv"; done
  _SPARK_AUTH_SECRET=$(cat "$secret_file") SPARK_DAEMON_JAVA_OPTS="$opts" \
    "$SPARK_HOME/bin/spark-class" "$class" "${args[@]}" >"$work/$name.log" 2>&1 </dev/null &
  pid=$!
  pids+=("$pid")
}

spark_worker() { # NAME SECRET-FILE MASTER-URL SETTINGS...: a real Spark worker (1 core, 1 GiB)
  local name=$1 secret_file=$2 url=$3
  shift 3
  mkdir -p "$work/$name-work"
  spark_daemon "$name" "$secret_file" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 \
    --port 0 --webui-port 0 --cores 1 --memory 1024M --work-dir "$work/$name-work" "$url" -- "$@"
  worker_pid=$pid
}

application() { # NAME SECRET-FILE MASTER-URL SETTINGS...: the PySpark job in the background;
  # output in $work/NAME.out and .log; sets app_pid
  local name=$1 secret_file=$2 url=$3
  shift 3
  timeout 300 "$PYSPARK_PYTHON" "$work/job.py" "$url" "$secret_file" "$name" "$@" \
    >"$work/$name.out" 2>"$work/$name.log" </dev/null &
  app_pid=$!
  pids+=("$app_pid")
}

job_runs() { # NAME SECRET-FILE MASTER-URL SETTINGS...: the job runs to the right sum
  local name=$1
  application "$@"
  wait "$app_pid" || fail "application $name exited with an error: $(tail -5 "$work/$name.log")"
  local got
  got=$(sed -n 's/^RESULT //p' "$work/$name.out")
  [ "$got" = "$want" ] || fail "application $name: sum of squares '$got', want $want"
}

refused() { # NAME...: each peer (a worker's or an application's log) reported it could not
  # connect to its master (Spark's StandaloneAppClient and Worker say "Failed to connect to master")
  local name
  for name in "$@"; do
    wait_for 120 "$work/$name.log" "Failed to connect to master" "${peer_pid[$name]}" \
      || fail "$name was not refused: $(tail -5 "$work/$name.log")"
  done
}

declare -A peer_pid

rpc_port() { # NAME: the RPC port of the real Spark worker logging to $work/NAME.log
  sed -n "s/.*Successfully started service 'sparkWorker' on port \([0-9]*\).*/\1/p" "$work/$1.log" | head -1
}

no_intruder() { # UI NAME: /json at UI lists no worker on the RPC port of worker NAME
  local port state
  port=$(rpc_port "$2")
  [ -n "$port" ] || fail "$2's log names no port"
  state=$(json "$1")
  [ "$(echo "$state" | field "[w for w in s['workers'] if w['port'] == $port]")" = "[]" ] \
    || fail "/json lists $2 (port $port): $state"
}

part_master() {
  echo "spark auth: master: real Spark $version on sparkwire master --secret-file" >&2
  start_master master
  ok "sparkwire master with a secret: Spark wire $spark_url"
  local mode settings=() app_settings=()
  for mode in sasl crypto; do
    settings=()
    # SASL: the worker with qop auth, the application with SASL's own encryption (auth-conf).
    app_settings=(spark.authenticate.enableSaslEncryption=true)
    if [ "$mode" = crypto ]; then
      settings=(spark.network.crypto.enabled=true)
      app_settings=("${settings[@]}")
    fi
    spark_worker "worker-$mode" "$work/secret" "$spark_url" "${settings[@]}"
    wait_for 90 "$work/worker-$mode.log" "Successfully registered with master" "$worker_pid" \
      || fail "the $mode worker did not register"
    job_runs "app-$mode" "$work/secret" "$spark_url" "${app_settings[@]}"
    stop "$worker_pid"
    ok "a real $mode worker registered and a $mode PySpark application (${app_settings[*]}) ran its job ($want) on it"
  done
  grep -q "SASL DIGEST-MD5 (auth-conf, cipher rc4)" "$work/master.log" \
    || fail "the master's log shows no SASL-encrypted session"
  # The wrong secret, with each scheme: a worker with SASL, an application with crypto.
  local before
  before=$(grep -c "refused at Spark's authentication bootstrap" "$work/master.log" || true)
  spark_worker intruder-worker "$work/wrong" "$spark_url"
  peer_pid[intruder-worker]=$worker_pid
  application intruder-app "$work/wrong" "$spark_url" spark.network.crypto.enabled=true
  peer_pid[intruder-app]=$app_pid
  refused intruder-worker intruder-app
  local after
  after=$(grep -c "refused at Spark's authentication bootstrap" "$work/master.log" || true)
  [ "$after" -ge $((before + 2)) ] || fail "the master logged $((after - before)) refusals, want 2 or more"
  grep "refused at Spark's authentication bootstrap" "$work/master.log" | grep -q "WARN.*127\.0\.0\.1:[0-9]" \
    || fail "the refusal is not logged at WARN with the peer's address"
  no_intruder "$ui" intruder-worker
  local state
  state=$(json "$ui")
  [ "$(echo "$state" | field 'sorted(a["name"] for a in s["activeapps"] + s["completedapps"])')" = "['app-crypto', 'app-sasl']" ] \
    || fail "/json: $state"
  stop "${peer_pid[intruder-worker]}"
  stop "${peer_pid[intruder-app]}"
  stop_all
  ok "a worker (SASL) and an application (crypto) with a wrong secret were refused; /json lists neither"
}

part_proxy() {
  local settings=(spark.network.crypto.enabled=true) cipher="AES-CTR"
  if [ "$gcm" = 1 ]; then
    settings+=(spark.network.crypto.cipher=AES/GCM/NoPadding)
    cipher="AES-GCM"
  fi
  echo "spark auth: proxy: sparkwire spark proxy in front of a real Spark $version master (crypto, $cipher)" >&2
  local port webui
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  webui=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  spark_daemon spark-master "$work/secret" org.apache.spark.deploy.master.Master --host 127.0.0.1 \
    --port "$port" --webui-port "$webui" -- "${settings[@]}"
  wait_for 90 "$work/spark-master.log" "I have been elected leader" "$pid" || fail "the Spark master did not start"
  local conf=() kv
  for kv in "${settings[@]}"; do conf+=(--spark-conf "$kv"); done
  "$bin" spark proxy --listen 127.0.0.1:0 --upstream "127.0.0.1:$port" --trace "$work/proxy.jsonl" \
    --secret-file "$work/secret" "${conf[@]}" >"$work/proxy.out" 2>"$work/proxy.log" </dev/null &
  local proxy_pid=$!
  pids+=("$proxy_pid")
  wait_for 20 "$work/proxy.out" "listening on" "$proxy_pid" || fail "the proxy did not start"
  local proxy_url
  proxy_url="spark://$(sed -n 's/^sparkwire spark proxy listening on \([^ ]*\) .*/\1/p' "$work/proxy.out")"
  ok "a real Spark master with auth and $cipher; the proxy on $proxy_url"
  spark_worker proxied-worker "$work/secret" "$proxy_url" "${settings[@]}"
  wait_for 90 "$work/proxied-worker.log" "Successfully registered with master" "$worker_pid" \
    || fail "the worker did not register through the proxy"
  job_runs proxied-app "$work/secret" "$proxy_url" "${settings[@]}"
  grep -q 'RegisterWorker' "$work/proxy.jsonl" || fail "the proxy's trace has no RegisterWorker"
  grep -q 'RegisterApplication' "$work/proxy.jsonl" || fail "the proxy's trace has no RegisterApplication"
  ok "a real worker and a PySpark application ($cipher) ran the job through the proxy, which traced their registrations"
  spark_worker intruder-worker "$work/wrong" "$proxy_url" "${settings[@]}"
  peer_pid[intruder-worker]=$worker_pid
  application intruder-app "$work/wrong" "$proxy_url" "${settings[@]}"
  peer_pid[intruder-app]=$app_pid
  refused intruder-worker intruder-app
  [ "$(grep -c "refused at Spark's authentication bootstrap" "$work/proxy.log" || true)" -ge 2 ] \
    || fail "the proxy logged fewer than 2 refusals: $(cat "$work/proxy.log")"
  no_intruder "127.0.0.1:$webui" intruder-worker
  local state
  state=$(json "127.0.0.1:$webui")
  [ "$(echo "$state" | field 'len(s["workers"])')" = 1 ] || fail "the Spark master's /json: $state"
  [ "$(echo "$state" | field 'sorted(a["name"] for a in s["activeapps"] + s["completedapps"])')" = "['proxied-app']" ] \
    || fail "the Spark master's /json: $state"
  stop_all
  ok "a worker and an application with a wrong secret were refused by the proxy; the Spark master's /json lists neither"
}

part_worker() {
  echo "spark auth: worker: PySpark executors on sparkwire worker --spark-home --secret-file" >&2
  start_master sw-master
  start_sparkwire_worker sw-worker "$sw_url" 10 --secret-file "$work/secret"
  json_until "$ui" 30 '[w["state"] for w in s["workers"]] == ["ALIVE"]' >/dev/null \
    || fail "the sparkwire worker with the secret did not register"
  ok "the sparkwire worker with the secret registered"
  local mode settings=() seen p
  for mode in sasl crypto; do
    settings=()
    [ "$mode" = crypto ] && settings=(spark.network.crypto.enabled=true)
    application "secured-$mode" "$work/secret" "$spark_url" "${settings[@]}"
    # While the job runs: the executors hold the secret in their environment, never in their
    # arguments.
    seen=0
    for _ in $(seq 1 900); do
      for p in $(executor_pids); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "_SPARK_AUTH_SECRET=$secret"; then
          seen=1
          tr '\0' ' ' <"/proc/$p/cmdline" | grep -q -- "$secret" && fail "the secret is on executor $p's command line"
        fi
      done
      [ "$seen" = 1 ] && break
      kill -0 "$app_pid" 2>/dev/null || break
      sleep 0.2
    done
    wait "$app_pid" || fail "the secured-$mode driver exited with an error: $(tail -5 "$work/secured-$mode.log")"
    [ "$(sed -n 's/^RESULT //p' "$work/secured-$mode.out")" = "$want" ] || fail "secured-$mode: $(cat "$work/secured-$mode.out")"
    [ "$seen" = 1 ] || fail "no executor JVM held _SPARK_AUTH_SECRET"
    ok "a secured PySpark application ($mode) ran its job on Spark executors the sparkwire worker started with _SPARK_AUTH_SECRET"
  done
  application intruder-sw "$work/wrong" "$spark_url"
  peer_pid[intruder-sw]=$app_pid
  refused intruder-sw
  local state
  state=$(json "$ui")
  [ "$(echo "$state" | field 'sorted(a["name"] for a in s["activeapps"] + s["completedapps"])')" = "['secured-crypto', 'secured-sasl']" ] \
    || fail "/json: $state"
  stop_all
  if grep -rlF -- "$secret" "$work" --exclude=secret --exclude=wrong --exclude='*.py' 2>/dev/null | grep -q .; then
    fail "the secret is in $(grep -rlF -- "$secret" "$work" --exclude=secret --exclude=wrong | head -3)"
  fi
  ok "an application with the wrong secret was refused; no log or work file holds the secret"
}

part_legacy() {
  echo "spark auth: legacy: real Spark $version with the original auth protocol on sparkwire master" >&2
  local settings=(spark.network.crypto.enabled=true spark.network.crypto.saslFallback=false) n
  start_master legacy-master --spark-conf sparkwire.legacyAuthEngine=true
  ok "sparkwire master with sparkwire.legacyAuthEngine=true: Spark wire $spark_url"
  spark_worker worker-legacy "$work/secret" "$spark_url" "${settings[@]}"
  wait_for 90 "$work/worker-legacy.log" "Successfully registered with master" "$worker_pid" \
    || fail "the worker with the original protocol did not register: $(tail -5 "$work/legacy-master.log")"
  job_runs app-legacy "$work/secret" "$spark_url" "${settings[@]}"
  stop "$worker_pid"
  n=$(grep -c "WARN.*authenticated with the original auth protocol.*CVE-2021-38296" "$work/legacy-master.log" || true)
  [ "$n" -ge 2 ] || fail "the master logged $n sessions of the original protocol at WARN, want 2 or more"
  grep -q "authenticated: the original auth protocol" "$work/legacy-master.log" \
    || fail "the master's log names no session of the original protocol"
  ok "a real worker and a PySpark application with the original protocol (no SASL fallback) ran the job ($want); $n WARNs name CVE-2021-38296"
  spark_worker intruder-legacy "$work/wrong" "$spark_url" "${settings[@]}"
  peer_pid[intruder-legacy]=$worker_pid
  refused intruder-legacy
  no_intruder "$ui" intruder-legacy
  local state
  state=$(json "$ui")
  [ "$(echo "$state" | field 'sorted(a["name"] for a in s["activeapps"] + s["completedapps"])')" = "['app-legacy']" ] \
    || fail "/json: $state"
  stop_all
  ok "a worker with the wrong secret was refused; /json lists it not"
  start_master default-master
  spark_worker refused-legacy "$work/secret" "$spark_url" "${settings[@]}"
  peer_pid[refused-legacy]=$worker_pid
  refused refused-legacy
  grep -q "WARN.*refused a ClientChallenge.*CVE-2021-38296" "$work/default-master.log" \
    || fail "the master without the setting logged no WARN naming the CVE"
  no_intruder "$ui" refused-legacy
  stop "$worker_pid"
  spark_worker fallback-legacy "$work/secret" "$spark_url" spark.network.crypto.enabled=true
  wait_for 90 "$work/fallback-legacy.log" "Successfully registered with master" "$worker_pid" \
    || fail "the worker with SASL fallback did not register"
  grep -q "authenticated: SASL DIGEST-MD5" "$work/default-master.log" \
    || fail "the master's log shows no SASL session after the refusal"
  stop_all
  ok "without the setting: the original protocol is refused (WARN naming the CVE), and a worker with SASL fallback registers with SASL"
  # The proxy with the setting in front of a real master that speaks the original protocol only
  # (no SASL fallback): it terminates the protocol on both sides and traces the registration.
  local port webui conf=(--spark-conf sparkwire.legacyAuthEngine=true) kv
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  webui=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  spark_daemon legacy-spark-master "$work/secret" org.apache.spark.deploy.master.Master --host 127.0.0.1 \
    --port "$port" --webui-port "$webui" -- "${settings[@]}"
  wait_for 90 "$work/legacy-spark-master.log" "I have been elected leader" "$pid" || fail "the Spark master did not start"
  for kv in "${settings[@]}"; do conf+=(--spark-conf "$kv"); done
  "$bin" spark proxy --listen 127.0.0.1:0 --upstream "127.0.0.1:$port" --trace "$work/legacy-proxy.jsonl" \
    --secret-file "$work/secret" "${conf[@]}" >"$work/legacy-proxy.out" 2>"$work/legacy-proxy.log" </dev/null &
  local proxy_pid=$!
  pids+=("$proxy_pid")
  wait_for 20 "$work/legacy-proxy.out" "listening on" "$proxy_pid" || fail "the proxy did not start"
  local proxy_url
  proxy_url="spark://$(sed -n 's/^sparkwire spark proxy listening on \([^ ]*\) .*/\1/p' "$work/legacy-proxy.out")"
  spark_worker proxied-legacy "$work/secret" "$proxy_url" "${settings[@]}"
  wait_for 90 "$work/proxied-legacy.log" "Successfully registered with master" "$worker_pid" \
    || fail "the worker did not register through the proxy: $(tail -5 "$work/legacy-proxy.log")"
  grep -q 'RegisterWorker' "$work/legacy-proxy.jsonl" || fail "the proxy's trace has no RegisterWorker"
  grep -q "WARN.*this session runs the original auth protocol.*CVE-2021-38296" "$work/legacy-proxy.log" \
    || fail "the proxy's upstream session is not logged at WARN naming the CVE"
  stop_all
  ok "through sparkwire spark proxy with the setting, a real worker registered with a real Spark $version master, both sides on the original protocol; the trace holds its RegisterWorker"
}

stop_all() { # stops everything started so far (the next part starts afresh)
  local p
  for p in "${pids[@]}"; do stop "$p"; done
  for p in $(executor_pids); do kill -KILL "$p" 2>/dev/null || true; done
  pids=()
}

for part in "${parts[@]}"; do
  "part_$part"
done
echo "spark auth: all checks passed in ${SECONDS}s"
