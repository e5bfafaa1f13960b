#!/usr/bin/env bash
# Runs each partition scenario of the many-hosts tests RUNS times in a row (default 5) and prints,
# per run, pass or fail, how long it took and what the test measured (takeover, re-registration,
# how long until the reason showed); then, per scenario, the passes and the range of each figure.
#
#   scripts/many-hosts-loop.sh [RUNS] [SCENARIO...]
#
# Scenarios (all by default): worker-cut (a sparkwire worker cut off past the worker timeout and
# healed), spark-worker-cut (the same with a real Spark 4.0.1 worker on a sparkwire master's
# Spark port), leader-cut (the leader's host of a ZooKeeper HA pair cut off), leader-cut-zk (cut
# off from ZooKeeper's host alone), leader-killed (every process of the leader's host killed),
# spark-leader-cut, spark-leader-killed (the same with a real Spark 4.0.1 worker and PySpark
# application on the masters' Spark ports: the leader's host cut off or killed whole, the
# application's executor killed after the takeover and relaunched by the new leader, host 1's
# master back as the standby), unreachable-driver (executors told a driver address they cannot
# reach), driver-cut (the driver's host cut off from the workers').
#
# Needs root (network namespaces; SPARKWIRE_REQUIRE_NETNS=1 makes a test fail rather than skip
# without it), Debian's zookeeper (scripts/test.sh installs it) and, for the spark-* scenarios,
# Spark 4.0.1 (installed into ~/.cache/sparkwire-spark/ when missing). The output of a failed run is
# kept in target/many-hosts-loop/SCENARIO-RUN.log. Exit status 0 when every run passed. With
# SPARKWIRE_JVM_LOCK=FILE each run of a spark-* scenario holds `flock FILE` while it runs.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
shift || true
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [RUNS] [SCENARIO...]" >&2
  exit 2
fi

# name | test binary | test | prefix of the lines it prints | figures: label=regex, the number
# the regex's first group takes, in seconds
scenarios=(
  "worker-cut|many_hosts|a_worker_cut_off_past_the_timeout_is_dead_its_executors_replaced_then_it_comes_back_once|worker cut off:|dead=DEAD ([0-9.]+) s after the cut;re-registered=registered again ([0-9.]+) s"
  "spark-worker-cut|many_hosts_spark|a_real_spark_worker_cut_off_past_the_timeout_is_dead_replaced_then_registers_again_once|real Spark|dead=DEAD ([0-9.]+) s after;replaced=replaced on host 2 ([0-9.]+) s;re-registered=registered again ([0-9.]+) s"
  "leader-cut|many_hosts_partitions|the_leaders_host_cut_off_the_standby_takes_over_and_the_healed_host_rejoins_as_standby|leader-cut-off:|elected=standby elected ([0-9.]+) s;re-registered=application re-registered\) ([0-9.]+) s;takeover=application ([0-9.]+) s after the loss;stepped-down=stepped down ([0-9.]+) s after;rejoined=STANDBY \(standing by in the election\) ([0-9.]+) s"
  "leader-cut-zk|many_hosts_partitions|the_leaders_host_cut_off_from_zookeeper_alone_steps_down_before_the_standby_is_elected|leader-cut-from-zookeeper:|elected=standby elected ([0-9.]+) s;re-registered=application re-registered\) ([0-9.]+) s;takeover=application ([0-9.]+) s after the loss;stepped-down=stepped down ([0-9.]+) s after;rejoined=STANDBY \(standing by in the election\) ([0-9.]+) s"
  "leader-killed|many_hosts_partitions|the_leaders_host_killed_whole_the_standby_takes_over_and_the_host_rejoins_as_standby|leader-killed:|elected=standby elected ([0-9.]+) s;re-registered=application re-registered\) ([0-9.]+) s;takeover=application ([0-9.]+) s after the loss;rejoined=STANDBY \(standing by in the election\) ([0-9.]+) s"
  "spark-leader-cut|many_hosts_spark|a_leader_cut_off_its_standby_tells_the_real_spark_worker_and_application_and_they_follow|PySpark application, the leader's host cut off:|elected=standby elected ([0-9.]+) s after;re-registered=re-registered ([0-9.]+) s after its election;takeover=application RUNNING ([0-9.]+) s after the loss;relaunched=relaunched by the new leader ([0-9.]+) s;rejoined=STANDBY \(standing by in the election\) ([0-9.]+) s"
  "spark-leader-killed|many_hosts_spark|a_leaders_host_killed_whole_the_real_spark_worker_and_application_follow_the_standby|PySpark application, the leader's host killed whole:|elected=standby elected ([0-9.]+) s after;re-registered=re-registered ([0-9.]+) s after its election;takeover=application RUNNING ([0-9.]+) s after the loss;relaunched=relaunched by the new leader ([0-9.]+) s;rejoined=STANDBY \(standing by in the election\) ([0-9.]+) s"
  "unreachable-driver|many_hosts|a_driver_its_executors_cannot_reach_says_why_within_one_executor_attempt_and_submit_gives_up|unreachable driver:|whole-test=whole test ([0-9.]+) s"
  "driver-cut|many_hosts_partitions|a_driver_cut_off_from_the_workers_learns_why_its_executors_end_and_submit_gives_up|driver cut off from the workers:|gave-up=gave up after ([0-9.]+) s"
)

wanted=("$@")
chosen=()
for s in "${scenarios[@]}"; do
  name=${s%%|*}
  if [ "${#wanted[@]}" -eq 0 ] || [[ " ${wanted[*]} " == *" $name "* ]]; then
    chosen+=("$s")
  fi
done
if [ "${#chosen[@]}" -eq 0 ]; then
  echo "$0: no scenario named ${wanted[*]}" >&2
  exit 2
fi

# ZooKeeper (the leader scenarios run one on a host): Debian's package, as scripts/test.sh installs
# it; a loop without it would only count failures.
if [ ! -f /usr/share/java/zookeeper.jar ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing zookeeper (Debian's package; its service is not started)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
  else
    echo "$0: the leader scenarios need Debian's zookeeper: apt-get install zookeeper (as root)" >&2
    exit 2
  fi
fi

export SPARKWIRE_REQUIRE_NETNS=1
logs=target/many-hosts-loop
mkdir -p "$logs"
echo "== building the many-hosts tests"
cargo test -q --all-features --no-run --test many_hosts --test many_hosts_partitions \
  --test many_hosts_spark 2>&1 | grep -v '^\s*Executable' || true

failed=0
summary=()
for s in "${chosen[@]}"; do
  IFS='|' read -r name binary test prefix figures <<<"$s"
  echo "== $name: $binary::$test, $runs runs (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  passes=0
  values=() # label=value, one per figure per passing run
  for i in $(seq 1 "$runs"); do
    started=$SECONDS
    run=(cargo test -q --all-features --test "$binary" -- --exact "$test" --nocapture
      --test-threads=1)
    # Real Spark's JVMs take a shared lock per run when one is named (a machine shared by
    # several users of Spark's JVMs): SPARKWIRE_JVM_LOCK=FILE.
    if [[ "$name" == spark-* && -n "${SPARKWIRE_JVM_LOCK:-}" ]]; then
      run=(flock "$SPARKWIRE_JVM_LOCK" "${run[@]}")
    fi
    out=$("${run[@]}" 2>&1)
    rc=$?
    took=$((SECONDS - started))
    # A test that skipped passes in silence: count it as failed.
    if [ "$rc" -eq 0 ] && grep -q "SKIPPED" <<<"$out"; then
      rc=99
    fi
    if [ "$rc" -eq 0 ] && grep -q "test result: ok. 1 passed" <<<"$out"; then
      verdict=pass
      passes=$((passes + 1))
    else
      verdict="FAIL (exit $rc; output in $logs/$name-$i.log)"
      printf '%s\n' "$out" >"$logs/$name-$i.log"
      failed=1
    fi
    echo "-- $name run $i/$runs: $verdict (${took} s)"
    grep -F "$prefix" <<<"$out" | sed 's/^/   /'
    if [ "$verdict" = pass ]; then
      IFS=';' read -ra figs <<<"$figures"
      for f in "${figs[@]}"; do
        label=${f%%=*}
        regex=${f#*=}
        v=$(grep -F "$prefix" <<<"$out" | sed -nE "s/.*${regex}.*/\\1/p" | head -1)
        [ -n "$v" ] && values+=("$label=$v")
      done
    fi
  done
  line="$name: $passes/$runs passed"
  IFS=';' read -ra figs <<<"$figures"
  for f in "${figs[@]}"; do
    label=${f%%=*}
    range=$(printf '%s\n' "${values[@]:-}" | sed -n "s/^$label=//p" |
      sort -g | awk 'NR==1{min=$1} {max=$1} END{if (NR) printf "%s–%s s", min, max}')
    [ -n "$range" ] && line+="; $label $range"
  done
  summary+=("$line")
done

echo "== summary ($runs runs each; load average now $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%s\n' "${summary[@]}"
exit "$failed"
