#!/usr/bin/env python3
"""Side by side: real Spark 4.0.1 standalone and sparkwire, the same tiny-task workload.

Not part of CI (heavy). Usage, from the repository root:

    cargo build --release
    python3 benches/side_by_side.py                 # sparkwire only, against the issue's Spark figures
    python3 benches/side_by_side.py --with-spark    # installs pyspark==4.0.1 into a venv, runs both

Each layout (executors x cores: 2x1, 4x1, 2x2) runs three times per system, the systems
interleaved (Spark, sparkwire, Spark, ...), the load average recorded at every run. sparkwire runs
`sparkwire local-cluster --job pi --partitions 20000 --param 1 --workers E --cores C`; Spark runs a
master and one worker of E*C cores on 127.0.0.1 (web UIs off), and a driver with executors of C
cores (spark.cores.max E*C) that runs a JVM-only job of 20,000 one-element partitions on its
running SparkContext after a warm-up job.

Figures: tiny tasks per second (the job's tasks over its duration, executors registered); time
from the cluster's start to the first executor registered; CPU seconds of every process (user +
system, from /proc) per 1,000 tasks (Spark: during the timed job; sparkwire: the whole run, start
and stop included, so its figure is an upper bound); peak RSS (VmHWM) of the master, the worker,
the driver and one executor. One Markdown table of both systems and the ratios is printed (medians
of the runs, ranges in brackets) with a column saying whether issue 16's goals (30x the
throughput, 1/30 of the CPU, in 2x1) are met, then every run with its load.

Options: `--runs N` (default 3), `--layouts 2x1,4x1` (a subset), `--tasks N` (default 20,000; a
smaller job to try the script out). Every completed run is saved at once in
`$TMPDIR/sparkwire-side-by-side/results.json`; a run that fails is recorded as failed and the
others go on; Ctrl-C or SIGTERM prints the table of the runs completed so far;
`--report results.json` prints a saved file's table again without running anything.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYOUTS = [("2x1", 2, 1), ("4x1", 4, 1), ("2x2", 2, 2)]
TASKS = 20000
# One run of either system that takes longer than this is killed and recorded as failed.
RUN_TIMEOUT = 600
# Issue 16's goal: sparkwire at least this many times Spark's throughput, and this many times less CPU.
GOAL = 30.0
CLK = os.sysconf("SC_CLK_TCK")

# The Spark figures of issue 16 (same machine, interleaved runs), for runs without --with-spark.
ISSUE_SPARK = {
    "tps": {"2x1": 951.0, "2x2": 1360.0},
    "cpu_per_1000": 1.54,
    "first_executor_s": (5.8, 12.9),
}


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def parents():
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        out[int(d)] = int(fields[1])
    return out


def tree(root):
    """The pids of root and all its descendants."""
    kids = {}
    for pid, ppid in parents().items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def kill_tree(root):
    """Kills root and every process under it (a driver's JVM, an executor the worker started)."""
    for pid in reversed(tree(root)):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def finish(proc, what):
    """The output of proc once it ends; it and its children are killed if it takes longer than
    RUN_TIMEOUT or the wait is interrupted."""
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT)
        return out
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        proc.communicate()
        raise RuntimeError(f"{what} did not end within {RUN_TIMEOUT} s")
    except BaseException:
        kill_tree(proc.pid)
        raise


def finish_sampled(proc, what, roots, classify):
    """finish(proc, what) while a Sampler watches the processes under roots; returns the output
    and the stopped sampler."""
    sampler = Sampler(roots, classify)
    sampler.start()
    try:
        return finish(proc, what), sampler
    finally:
        sampler.stop.set()
        sampler.join()


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def proc_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")


class Sampler(threading.Thread):
    """Every 50 ms: CPU seconds and peak RSS of every process under the given roots."""

    def __init__(self, roots, classify):
        super().__init__(daemon=True)
        self.roots, self.classify = roots, classify
        self.stop = threading.Event()
        self.samples = []  # (time, {pid: cpu})
        self.hwm = {}  # pid -> KiB
        self.kind = {}  # pid -> master/worker/driver/executor/other

    def run(self):
        while not self.stop.is_set():
            now, cpu = time.time(), {}
            for root in self.roots:
                for pid in tree(root):
                    try:
                        cpu[pid] = proc_cpu(pid)
                        self.hwm[pid] = max(self.hwm.get(pid, 0), proc_hwm_kib(pid))
                        if pid not in self.kind:
                            self.kind[pid] = self.classify(pid, root, cmdline(pid))
                    except OSError:
                        pass
            self.samples.append((now, cpu))
            time.sleep(0.05)

    def cpu_between(self, t0, t1):
        """CPU seconds all sampled processes used between two wall-clock times."""
        before = min(self.samples, key=lambda s: abs(s[0] - t0))[1]
        after = min(self.samples, key=lambda s: abs(s[0] - t1))[1]
        return sum(c - before.get(p, 0.0) for p, c in after.items())

    def peak_mib(self, kind):
        vals = [h for p, h in self.hwm.items() if self.kind.get(p) == kind]
        return max(vals) / 1024 if vals else None


def sparkwire_run(binary, execs, cores, tasks):
    def classify(pid, root, cmd):
        if pid == root:
            return "driver"
        for k in ("master", "worker", "executor"):
            if f" {k} " in f" {cmd} ":
                return k
        return "other"

    args = [binary, "local-cluster", "--job", "pi", "--partitions", str(tasks), "--param", "1",
            "--workers", str(execs), "--cores", str(cores)]
    la = load()
    before = os.times()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out, sampler = finish_sampled(proc, "local-cluster", [proc.pid], classify)
    after = os.times()
    if proc.returncode != 0:
        raise RuntimeError(f"local-cluster failed ({proc.returncode}):\n{out}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    m = re.search(r"(\d+) tasks in ([\d.]+) s: (\d+) tasks/s", out)
    f = re.search(r"first executor registered ([\d.]+) s after start", out)
    if not m or not f:
        raise RuntimeError(f"unexpected local-cluster output:\n{out}")
    tasks = int(m.group(1))
    return {
        "load": la,
        "tps": tasks / float(m.group(2)),
        "first_executor_s": float(f.group(1)),
        "cpu_per_1000": cpu / tasks * 1000,
        "rss": {k: sampler.peak_mib(k) for k in ("master", "worker", "driver", "executor")},
    }


SPARK_DRIVER = r"""
import os, sys, time
from pyspark import SparkConf, SparkContext
execs, cores, tasks = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
conf = (SparkConf().setMaster(sys.argv[1]).setAppName("tiny-tasks")
        .set("spark.executor.cores", str(cores)).set("spark.cores.max", str(execs * cores))
        .set("spark.executor.memory", "512m").set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1"))
sc = SparkContext(conf=conf)
jsc = sc._jsc.sc()
status = jsc.statusTracker()
first = None
deadline = time.time() + 300
while time.time() < deadline:
    n = len(status.getExecutorInfos()) - 1  # the driver is listed too
    if n >= 1 and first is None:
        first = time.time()
    if n >= execs:
        break
    time.sleep(0.01)
print("FIRST_EXECUTOR", first, flush=True)
def job(n):
    # JVM-only: a Java RDD of n one-element partitions, counted; no Python worker runs.
    return sc._jsc.parallelize(sc._jvm.java.util.Collections.nCopies(n, 1), n).count()
job(2000)  # warm-up: JIT, class loading, connections
t0 = time.time()
count = job(tasks)
t1 = time.time()
print("JOB", t0, t1, count, flush=True)
sc.stop()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_setup(workdir):
    venv = os.path.join(workdir, "venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "pyspark==4.0.1"], check=True)
    home = subprocess.run([py, "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    return py, home


def spark_run(py, home, workdir, execs, cores, tasks):
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=py,
               SPARK_LOG_DIR=workdir, SPARK_WORKER_DIR=os.path.join(workdir, "work"))
    spark_class = os.path.join(home, "bin", "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    la = load()
    start = time.time()
    master = subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", "0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                               "--cores", str(execs * cores), "--memory", f"{execs * 512 + 512}m",
                               "--webui-port", "0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    script = os.path.join(workdir, "driver.py")
    with open(script, "w") as f:
        f.write(SPARK_DRIVER)
    driver = subprocess.Popen([py, script, url, str(execs), str(cores), str(tasks)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    roots = {master.pid: "master", worker.pid: "worker", driver.pid: "driver"}

    def classify(pid, root, cmd):
        if "CoarseGrainedExecutorBackend" in cmd:
            return "executor"
        if "org.apache.spark" in cmd or "SparkSubmit" in cmd or pid == root:
            return roots[root]
        return "other"

    try:
        out, sampler = finish_sampled(driver, "the Spark driver", list(roots), classify)
    finally:
        if driver.poll() is None:
            kill_tree(driver.pid)
        for p in (worker, master):
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    first = re.search(r"FIRST_EXECUTOR ([\d.]+)", out)
    job = re.search(r"JOB ([\d.]+) ([\d.]+) (\d+)", out)
    if driver.returncode != 0 or not first or not job:
        raise RuntimeError(f"the Spark driver failed ({driver.returncode}):\n{out}")
    t0, t1 = float(job.group(1)), float(job.group(2))
    return {
        "load": la,
        "tps": tasks / (t1 - t0),
        "first_executor_s": float(first.group(1)) - start,
        "cpu_per_1000": sampler.cpu_between(t0, t1) / tasks * 1000,
        "rss": {k: sampler.peak_mib(k) for k in ("master", "worker", "driver", "executor")},
    }


def med(runs, key, sub=None):
    vals = [(r[key][sub] if sub else r[key]) for r in runs if "error" not in r]
    vals = [v for v in vals if v is not None]
    return (statistics.median(vals), min(vals), max(vals)) if vals else None


def fmt(stat, digits=0, unit=""):
    if stat is None:
        return "—"
    m, lo, hi = stat
    return f"{m:,.{digits}f}{unit} ({lo:,.{digits}f}–{hi:,.{digits}f})"


def ratio(a, b, digits=1, suffix=""):
    return f"{a / b:,.{digits}f}×{suffix}" if a and b else "—"


def goal(a, b):
    """Whether a / b meets issue 16's goal, as a table cell."""
    if not a or not b:
        return "—"
    return f"met (≥ {GOAL:.0f}×)" if a / b >= GOAL else f"NOT met (< {GOAL:.0f}×)"


def report(runs, with_spark, planned, out=sys.stdout):
    """Prints the table of both systems (medians, ranges), then every run with its load."""
    def p(line=""):
        print(line, file=out)

    done = {k: len([r for r in v if "error" not in r]) for k, v in runs.items()}
    spark_src = "measured in this run, interleaved" if with_spark else "issue 16's figures (not run here)"
    p(f"Spark: {spark_src}; medians of the runs (range); {planned} runs planned per layout and "
      f"system; loads are 1-minute load averages on {os.cpu_count()} cores.")
    counts = ", ".join(f"{sys_} {lay} {n}" for (sys_, lay), n in sorted(done.items()) if with_spark or sys_ == "sparkwire")
    p(f"Completed runs: {counts}.\n")
    p("| figure | layout | Spark 4.0.1 | sparkwire | ratio | goal |")
    p("|---|---|---|---|---|---|")
    for name, _, _ in LAYOUTS:
        sw = med(runs[("sparkwire", name)], "tps")
        sp = med(runs[("spark", name)], "tps") if with_spark else (
            (ISSUE_SPARK["tps"][name],) * 3 if name in ISSUE_SPARK["tps"] else None)
        g = goal(sw and sw[0], sp and sp[0]) if name == "2x1" else ""
        p(f"| tiny tasks per second | {name} | {fmt(sp)} | {fmt(sw)} | {ratio(sw and sw[0], sp and sp[0])} | {g} |")
    for name, _, _ in LAYOUTS:
        sw = med(runs[("sparkwire", name)], "cpu_per_1000")
        sp = med(runs[("spark", name)], "cpu_per_1000") if with_spark else (
            (ISSUE_SPARK["cpu_per_1000"],) * 3 if name == "2x1" else None)
        g = goal(sp and sp[0], sw and sw[0]) if name == "2x1" else ""
        p(f"| CPU s of all processes per 1,000 tasks (sparkwire: whole run) | {name} | {fmt(sp, 3)} | "
          f"{fmt(sw, 3)} | {ratio(sp and sp[0], sw and sw[0], 1, ' less')} | {g} |")
    sw = med(runs[("sparkwire", "2x1")], "first_executor_s")
    if with_spark:
        sp = med(runs[("spark", "2x1")], "first_executor_s")
        sp_text = fmt(sp, 2, " s")
    else:
        lo, hi = ISSUE_SPARK["first_executor_s"]
        # The ratio is against the middle of the issue's range.
        sp, sp_text = ((lo + hi) / 2, lo, hi), f"{lo}–{hi} s (ratio to {(lo + hi) / 2:.2f} s)"
    p(f"| start to first executor registered | 2x1 | {sp_text} | {fmt(sw, 3, ' s')} | "
      f"{ratio(sp and sp[0], sw and sw[0], 0, ' sooner')} | |")
    for kind in ("master", "worker", "driver", "executor"):
        sw = med(runs[("sparkwire", "2x1")], "rss", kind)
        sp = med(runs[("spark", "2x1")], "rss", kind) if with_spark else None
        p(f"| peak RSS, {kind} (MiB) | 2x1 | {fmt(sp, 1)} | {fmt(sw, 1)} | "
          f"{ratio(sp and sp[0], sw and sw[0], 1, ' less')} | |")
    p("\nEvery run in the order run (tasks/s, CPU s per 1,000 tasks, 1-minute load at its start):\n")
    for r in sorted((r for rs in runs.values() for r in rs), key=lambda r: r["seq"]):
        if "error" in r:
            p(f"- {r['seq']}. {r['system']} {r['layout']}: FAILED (load {r['load']}): {r['error']}")
        else:
            p(f"- {r['seq']}. {r['system']} {r['layout']}: {r['tps']:,.0f} tasks/s, "
              f"{r['cpu_per_1000']:.3f} CPU s / 1,000, load {r['load']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--with-spark", action="store_true", help="also run real Spark 4.0.1 (pyspark in a venv)")
    ap.add_argument("--runs", type=int, default=3, help="runs per layout and system (default 3)")
    ap.add_argument("--tasks", type=int, default=TASKS, help=f"tasks per job (default {TASKS})")
    ap.add_argument("--layouts", default=",".join(l[0] for l in LAYOUTS),
                    help="comma-separated layouts to run (default all: 2x1,4x1,2x2)")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "sparkwire"))
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "sparkwire-side-by-side"))
    ap.add_argument("--report", metavar="RESULTS_JSON",
                    help="print the table of a results file an earlier run wrote, and run nothing")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            saved = json.load(f)
        runs = {(k.split(" ")[0], k.split(" ")[1]): v for k, v in saved["runs"].items()}
        report(runs, saved["with_spark"], saved["planned"])
        return
    chosen = a.layouts.split(",")
    unknown = [l for l in chosen if l not in {l[0] for l in LAYOUTS}]
    if unknown:
        sys.exit(f"unknown layout(s) {', '.join(unknown)}: choose from 2x1, 4x1, 2x2")
    layouts = [l for l in LAYOUTS if l[0] in chosen]
    if not os.path.exists(a.binary):
        sys.exit(f"{a.binary} is missing: run `cargo build --release` first")
    os.makedirs(a.workdir, exist_ok=True)
    if a.with_spark:
        if not shutil.which("java"):
            sys.exit("--with-spark needs java (17) on PATH")
        py, home = spark_setup(a.workdir)
    runs = {(system, l[0]): [] for l in LAYOUTS for system in ("spark", "sparkwire")}
    results = os.path.join(a.workdir, "results.json")

    def save():
        with open(results, "w") as f:
            json.dump({"with_spark": a.with_spark, "planned": a.runs,
                       "runs": {f"{k[0]} {k[1]}": v for k, v in runs.items()}}, f, indent=1)

    # A run cut short (Ctrl-C, SIGTERM, a time limit) still prints the table of what completed.
    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    seq = 0

    def one(system, name, e, c):
        nonlocal seq
        seq += 1
        la = load()
        try:
            if system == "spark":
                r = spark_run(py, home, a.workdir, e, c, a.tasks)
            else:
                r = sparkwire_run(a.binary, e, c, a.tasks)
        except RuntimeError as err:
            r = {"load": la, "error": str(err).splitlines()[0][:300]}
        r.update(system=system, layout=name, seq=seq)
        runs[(system, name)].append(r)
        save()
        what = f"FAILED: {r['error']}" if "error" in r else f"{r['tps']:,.0f} tasks/s"
        print(f"run {seq}: {system} {name}: {what}, load {r['load']}", file=sys.stderr, flush=True)

    try:
        for _ in range(a.runs):
            for name, e, c in layouts:
                if a.with_spark:
                    one("spark", name, e, c)
                one("sparkwire", name, e, c)
    except KeyboardInterrupt as why:
        print(f"\ncut short ({why or 'interrupted'}): the table covers the completed runs\n", file=sys.stderr)
    print(f"(results saved in {results}; `--report {results}` prints this table again)\n", file=sys.stderr)
    report(runs, a.with_spark, a.runs)


if __name__ == "__main__":
    main()
