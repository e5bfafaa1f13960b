#!/usr/bin/env python3
"""Real Spark 4.0.1 on Spark's daemons and on sparkwire's, side by side (issue 26, item 5).

Not part of CI (heavy: three JVMs or more per run). Usage, from the repository root:

    cargo build --release --bin sparkwire
    python3 benches/spark_on_sparkwire.py [--runs 3] [--binary target/release/sparkwire]

The same unmodified PySpark application (2 executors of 1 core, 512 MiB) runs on three clusters,
interleaved, `--runs` times each:

- `spark`: Spark's master and Spark's worker;
- `sw-master`: `sparkwire master --spark-port` and Spark's worker;
- `sw-daemons`: `sparkwire master --spark-port` and `sparkwire worker --spark-home`, which runs
  Spark's executor JVMs itself.

Figures per run: the master's CPU seconds (user + system, the whole run) and peak RSS (VmHWM);
the worker's, likewise (for `sw-daemons` the sparkwire worker alone, not the executor JVMs it
starts); the time from the application's start (before `getOrCreate`) to its first executor
registered; and the wall time of its job (the sum of squares of 1..200000 in 8 partitions, then a
count of 200 one-element partitions, after a warm-up job). The printed Markdown table has the
medians (ranges in brackets) and each sparkwire column's ratio to Spark's, then every run with the
1-minute load average at its start. Spark is installed by scripts/spark/env.sh (cached).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import Sampler, free_port, kill_tree, load  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_TIMEOUT = 300
SYSTEMS = ["spark", "sw-master", "sw-daemons"]

DRIVER = r"""
import sys, time
t_start = time.time()
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[1]).appName("side-by-side")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .getOrCreate())
sc = spark.sparkContext
status = sc._jsc.sc().statusTracker()
first = None
deadline = time.time() + 200
while time.time() < deadline:
    n = len(status.getExecutorInfos()) - 1  # the driver is listed too
    if n >= 1 and first is None:
        first = time.time()
    if n >= 2:
        break
    time.sleep(0.01)
print("FIRST_EXECUTOR", first - t_start, flush=True)
sc.parallelize(range(100), 2).count()  # warm-up: Python workers, connections
t0 = time.time()
total = sc.parallelize(range(1, 200001), 8).map(lambda x: x * x).sum()
count = sc.parallelize(range(200), 200).count()
t1 = time.time()
assert total == 200000 * 200001 * 400001 // 6 and count == 200, (total, count)
print("JOB", t1 - t0, flush=True)
spark.stop()
"""


def spark_env():
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts/spark/env.sh"), "4.0.1"],
                         check=True, capture_output=True, text=True).stdout
    env = dict(os.environ)
    for line in out.splitlines():
        m = re.match(r"export (\w+)=(.*)$", line)
        if m:
            value = m.group(2)
            if value[:1] in "'\"":
                value = value[1:-1]
            env[m.group(1)] = value
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="127.0.0.1", SPARK_NO_DAEMONIZE="1")
    return env


def wait_line(path, pattern, proc, secs=60):
    end = time.time() + secs
    while time.time() < end:
        try:
            with open(path) as f:
                m = re.search(pattern, f.read(), re.M)
            if m:
                return m
        except OSError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"no {pattern!r} in {path}")


def run(system, binary, env, workdir):
    os.makedirs(workdir, exist_ok=True)
    spark_class = os.path.join(env["SPARK_HOME"], "bin", "spark-class")
    procs = []

    def start(name, argv):
        out = open(os.path.join(workdir, name + ".out"), "w")
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        procs.append(p)
        return p

    la = load()
    try:
        if system == "spark":
            port = free_port()
            master = start("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host",
                                      "127.0.0.1", "--port", str(port), "--webui-port", "0"])
            wait_line(os.path.join(workdir, "master.out"), r"I have been elected leader", master)
            url = f"spark://127.0.0.1:{port}"
        else:
            master = start("master", [binary, "master", "--port", "0", "--webui-port", "0", "--spark-port", "0"])
            url = wait_line(os.path.join(workdir, "master.out"), r"^sparkwire master Spark wire on (\S+)",
                            master).group(1)
            sw_url = wait_line(os.path.join(workdir, "master.out"), r"^sparkwire master listening on (\S+)",
                               master).group(1)
        if system == "sw-daemons":
            worker = start("worker", [binary, "worker", sw_url, "--port", "0", "--webui-port", "0", "--cores",
                                      "2", "--memory", "1536", "--work-dir", os.path.join(workdir, "work"),
                                      "--spark-home", env["SPARK_HOME"], "--spark-port", "0"])
            wait_line(os.path.join(workdir, "worker.out"), r"Successfully registered with master", worker)
        else:
            worker = start("worker", [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host",
                                      "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", "2",
                                      "--memory", "1536m", "--work-dir", os.path.join(workdir, "work")])
            wait_line(os.path.join(workdir, "worker.out"), r"Successfully registered with master", worker)
        script = os.path.join(workdir, "driver.py")
        with open(script, "w") as f:
            f.write(DRIVER)
        roles = {master.pid: "master", worker.pid: "worker"}

        def classify(pid, root, cmd):
            if pid == root:
                return roles[root]
            return "child"

        sampler = Sampler(list(roles), classify)
        sampler.start()
        driver = subprocess.Popen([env["PYSPARK_PYTHON"], script, url], env=env, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(workdir, "driver.log"), "w"), text=True)
        procs.append(driver)
        try:
            out, _ = driver.communicate(timeout=RUN_TIMEOUT)
        finally:
            sampler.stop.set()
            sampler.join()
        first = re.search(r"FIRST_EXECUTOR ([\d.]+)", out)
        job = re.search(r"JOB ([\d.]+)", out)
        if driver.returncode != 0 or not first or not job:
            raise RuntimeError(f"{system}: the driver failed ({driver.returncode}): {out}")
        last = sampler.samples[-1][1]
        return {
            "system": system,
            "load": la,
            "first_executor_s": float(first.group(1)),
            "job_s": float(job.group(1)),
            "master_cpu_s": last.get(master.pid),
            "worker_cpu_s": last.get(worker.pid),
            "master_rss_mib": sampler.hwm.get(master.pid, 0) / 1024,
            "worker_rss_mib": sampler.hwm.get(worker.pid, 0) / 1024,
        }
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                kill_tree(p.pid)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass


FIGURES = [
    ("master peak RSS (MiB)", "master_rss_mib", 1),
    ("master CPU s, whole run", "master_cpu_s", 2),
    ("worker peak RSS (MiB)", "worker_rss_mib", 1),
    ("worker CPU s, whole run", "worker_cpu_s", 2),
    ("application start to first executor (s)", "first_executor_s", 2),
    ("job wall time (s)", "job_s", 2),
]


def report(runs):
    def stat(system, key):
        vals = [r[key] for r in runs if r.get("system") == system and r.get(key) is not None]
        return (statistics.median(vals), min(vals), max(vals)) if vals else None

    def fmt(s, d):
        return "–" if s is None else f"{s[0]:.{d}f} ({s[1]:.{d}f}–{s[2]:.{d}f})"

    print("| figure | Spark master + Spark worker | sparkwire master + Spark worker | ratio | "
          "sparkwire master + sparkwire worker | ratio |")
    print("|---|---|---|---|---|---|")
    for name, key, d in FIGURES:
        base = stat("spark", key)
        cells = [fmt(base, d)]
        for system in SYSTEMS[1:]:
            s = stat(system, key)
            cells.append(fmt(s, d))
            cells.append("–" if not (s and base and s[0]) else f"{base[0] / s[0]:.1f}× less" if s[0] < base[0]
                         else f"{s[0] / base[0]:.2f}× more")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    for i, r in enumerate(runs, 1):
        if "error" in r:
            print(f"- {i}. {r['system']}: FAILED, load {r['load']}: {r['error'][:200]}")
        else:
            print(f"- {i}. {r['system']}: first executor {r['first_executor_s']:.2f} s, job {r['job_s']:.2f} s, "
                  f"master {r['master_cpu_s']:.2f} CPU s / {r['master_rss_mib']:.1f} MiB, worker "
                  f"{r['worker_cpu_s']:.2f} CPU s / {r['worker_rss_mib']:.1f} MiB, load {r['load']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "sparkwire"))
    args = ap.parse_args()
    env = spark_env()
    base = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"sparkwire-spark-on-sparkwire-{os.getpid()}")
    runs = []
    try:
        for i in range(args.runs):
            for system in SYSTEMS:
                workdir = os.path.join(base, f"{i}-{system}")
                try:
                    runs.append(run(system, args.binary, env, workdir))
                except Exception as e:  # a failed run is recorded; the others go on
                    runs.append({"system": system, "load": load(), "error": str(e)})
                print(f"run {len(runs)}: {runs[-1]}", file=sys.stderr, flush=True)
    finally:
        report(runs)


if __name__ == "__main__":
    main()
