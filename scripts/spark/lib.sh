# Shell helpers shared by scripts/spark/master.sh, daemons.sh and daemons-auth.sh; sourced, not run.
# The functions below the first five read the sourcing script's $work (its log directory), pids
# (what it started) and bin (the sparkwire binary), and its fail.

stop() { # PID: TERM, then KILL after 10 s
  local pid=$1
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
wait_for() { # SECONDS FILE PATTERN PID: waits until FILE has PATTERN (fails when PID ended)
  local secs=$1 file=$2 pattern=$3 pid=$4 i
  for i in $(seq 1 $((secs * 5))); do
    grep -q -- "$pattern" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
json() { # UI: the master's /json
  python3 -c 'import sys, urllib.request; print(urllib.request.urlopen("http://" + sys.argv[1] + "/json", timeout=5).read().decode())' "$1"
}
field() { # PY-EXPRESSION over `s` (the /json object)
  python3 -c 'import json, sys; s = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}
json_until() { # UI SECONDS PY-EXPRESSION: waits until the expression over `s` (/json) is True;
  # prints the last /json either way, and fails when the time ran out
  local ui=$1 secs=$2 expr=$3 i state=
  for i in $(seq 1 $((secs * 4))); do
    state=$(json "$ui" 2>/dev/null || true)
    if [ -n "$state" ] && [ "$(echo "$state" | field "$expr" 2>/dev/null)" = True ]; then
      echo "$state"
      return 0
    fi
    sleep 0.25
  done
  echo "$state"
  return 1
}
start_sparkwire_worker() { # NAME MASTER-URL WORKER-TIMEOUT [ARGS...]: `sparkwire worker --spark-home`
  # (2 cores, 2 GiB, work dir $work/NAME-work, output $work/NAME.out and .log, ARGS added) with
  # $bin, for as long as the script runs; sets sw_worker_pid (added to pids) and fails unless it
  # starts
  local name=$1 url=$2 timeout=$3
  shift 3
  mkdir -p "$work/$name-work"
  "$bin" worker "$url" --port 0 --webui-port 0 --cores 2 --memory 2048 --work-dir "$work/$name-work" \
    --worker-timeout "$timeout" --spark-home "$SPARK_HOME" --spark-port 0 --exit-with-stdin "$@" \
    >"$work/$name.out" 2>"$work/$name.log" < <(sleep 100000) &
  sw_worker_pid=$!
  pids+=("$sw_worker_pid")
  wait_for 20 "$work/$name.out" "their watchers connect to" "$sw_worker_pid" || fail "the sparkwire worker $name did not start"
}
executor_pids() { # the executor JVMs started under $work
  pgrep -f "CoarseGrainedExecutorBackend.*--app-id" 2>/dev/null | while read -r p; do
    if [ -r "/proc/$p/cwd" ] && [[ "$(readlink "/proc/$p/cwd")" == "$work"/* ]]; then echo "$p"; fi
  done
}
finish_daemons() { # LABEL: the EXIT trap of a script running executors under $work: stops $pids
  # and those executors; on failure keeps $work and shows the last lines of its logs, else
  # removes it (unless SPARKWIRE_KEEP_LOGS=1)
  local status=$? label=$1 pid f
  for pid in "${pids[@]}"; do stop "$pid"; done
  for pid in $(executor_pids); do kill -KILL "$pid" 2>/dev/null || true; done
  if [ "$status" != 0 ]; then
    echo "$label: FAILED; logs kept in $work" >&2
    for f in "$work"/*.log "$work"/*-work/app-*/*/stderr; do
      [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 25 "$f" >&2; }
    done
  elif [ "${SPARKWIRE_KEEP_LOGS:-0}" != 1 ]; then
    rm -rf "$work"
  fi
}
