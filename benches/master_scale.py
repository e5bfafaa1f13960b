#!/usr/bin/env python3
"""The master at scale, side by side (issue 40): real Spark's master (JVM) and `sparkwire master
--spark-port`, each driven by `sparkwire spark load` (thousands of Spark workers and applications
on Spark's own wire, one process, one thread) at several sizes, the masters interleaved.

Not part of CI (heavy). Usage, from the repository root:

    cargo build --release --bin sparkwire
    python3 benches/master_scale.py                                  # 1,000/5,000/10,000 workers
    python3 benches/master_scale.py --sizes 200x20,1000x100 --steady 30   # a small run

Per size WORKERSxAPPS and master (Spark first at odd sizes, sparkwire first at even ones):
the master starts alone (Spark: `spark-class org.apache.spark.deploy.master.Master` of the
release, its default daemon heap; sparkwire: the release binary, web UI on), then the generator
registers every worker at once, places every application (`--app-cores full`: the cluster's
cores shared out, so the cluster ends full), has one application in 4 end and one in 4 kill an
executor, heartbeats steadily for --steady seconds (`spark.worker.timeout` --worker-timeout: a
heartbeat every quarter of it, as Spark's workers do) and asks the state halfway through.

Figures, of the master's process only (from /proc/PID: VmHWM, utime+stime), the generator's CPU
being its own process: peak RSS; CPU seconds per minute over the steady phase; the generator's
figures (registration of N at once, heartbeat-to-processed p50/p99 -- see
src/spark/load.rs for how "processed" is observed -- application registration to its last
LaunchExecutor, /json and RequestMasterState latency and size); its error count (a master that
answers wrong or not at all is counted, not timed). Both share the machine's cores: the master
may use all of them, the generator one thread. The load average is recorded at every run.

Writes DIR/results.json (every run, saved as it completes), DIR/table.md and DIR/master_scale.png
(memory and CPU against workers, when matplotlib imports; else it says so). Every real-Spark run
should hold the shared JVM lock: run the whole script under `flock /work/wt/jvm.lock` on a shared
machine. `--report DIR/results.json` prints a saved table again.
"""

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def proc_cpu(pid):
    """utime + stime of process pid (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return None


def spark_env(release):
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts/spark/env.sh"), release],
                         check=True, capture_output=True, text=True).stdout
    env = dict(os.environ)
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export "):]
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v.strip("'\"")
    return env


def wait_for(path, text, proc, limit):
    until = time.time() + limit
    while time.time() < until:
        if proc.poll() is not None:
            return False
        try:
            with open(path, errors="replace") as f:
                if text in f.read():
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.2)
    return False


def start_master(kind, args, work, tag):
    port, ui = free_port(), free_port()
    log = os.path.join(work, f"{tag}.log")
    if kind == "spark":
        env = spark_env(args.release)
        env["SPARK_MASTER_OPTS"] = (f"-Dspark.worker.timeout={args.worker_timeout} "
                                    "-Dspark.deploy.spreadOut=true")
        cmd = [os.path.join(env["SPARK_HOME"], "bin", "spark-class"),
               "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
               "--port", str(port), "--webui-port", str(ui)]
        ready = "I have been elected leader"
    else:
        env = dict(os.environ)
        cmd = [args.bin, "master", "--host", "127.0.0.1", "--port", str(free_port()),
               "--spark-port", str(port), "--webui-port", str(ui),
               "--worker-timeout", str(args.worker_timeout),
               "--max-connections", str(4 * (args.max_peers + 64))]
        ready = "Spark wire on"
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    if not wait_for(log, ready, proc, 180):
        stop(proc)
        raise RuntimeError(f"{kind} master did not start; see {log}")
    return proc, port, ui, log


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def one_run(kind, workers, apps, args, work):
    tag = f"{kind}-{workers}x{apps}"
    record = {"master": kind, "workers": workers, "apps": apps, "load_before": loadavg()}
    proc, port, ui, log = start_master(kind, args, work, tag)
    pid = proc.pid
    if kind == "spark":
        # spark-class execs java: the JVM is the process started.
        pass
    record["rss_idle"] = proc_status(pid, "VmRSS")
    cmd = [args.bin, "spark", "load", "--master", f"127.0.0.1:{port}", "--web-ui",
           f"127.0.0.1:{ui}", "--spark-release", args.release, "--workers", str(workers),
           "--apps", str(apps), "--app-cores", "full", "--executor-cores", "2",
           "--worker-timeout", str(args.worker_timeout), "--steady", str(args.steady),
           "--answer-timeout", str(args.answer_timeout), "--phases"]
    phases = {}
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], proc_status(pid, "VmRSS") or 0)
            except OSError:
                return
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    gen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_lines = []

    def read_err():
        for line in gen.stderr:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "phase":
                phases[parts[1]] = (time.time(), proc_cpu(pid))
            else:
                err_lines.append(line)

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    try:
        out, _ = gen.communicate(timeout=args.steady + 6 * args.answer_timeout + 600)
    except subprocess.TimeoutExpired:
        gen.kill()
        out, _ = gen.communicate()
    reader.join(5)
    done.set()
    record["rss_peak"] = proc_status(pid, "VmHWM") or peak[0]
    record["cpu_total"] = proc_cpu(pid)
    stop(proc)
    record["load_after"] = loadavg()
    try:
        record["load"] = json.loads(out)
    except json.JSONDecodeError:
        record["load"] = None
        record["generator_stderr"] = "".join(err_lines[-20:])
    if "steady" in phases and "done" in phases:
        (t0, c0), (t1, c1) = phases["steady"], phases["done"]
        record["steady_wall"] = t1 - t0
        record["cpu_per_minute"] = (c1 - c0) / (t1 - t0) * 60
    if "register" in phases and "place" in phases:
        record["cpu_register"] = phases["place"][1] - phases["register"][1]
    record["log"] = log
    return record


def fmt(v, unit="", scale=1.0, digits=1):
    if v is None:
        return "–"
    return f"{v / scale:.{digits}f}{unit}"


def table(results):
    rows = ["| workers × apps | master | peak RSS | CPU s/min steady | registration (N at once) "
            "| heartbeat p50 / p99 | app → last LaunchExecutor p50 / p99 | /json latency, size "
            "| RequestMasterState | errors | load |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    by = {}
    for r in results:
        by.setdefault((r["workers"], r["apps"]), {})[r["master"]] = r
    for (n, m), pair in sorted(by.items()):
        for kind in ("spark", "sparkwire"):
            r = pair.get(kind)
            if not r:
                continue
            g = r.get("load") or {}
            hb = g.get("heartbeat_ms", {})
            app = g.get("app_to_last_launch_ms", {})
            js = g.get("json", {})
            st = g.get("state_ask", {})
            state = ("answered " + fmt(st.get("latency_ms", {}).get("p50"), " ms") + ", "
                     + fmt(st.get("bytes"), " KB", 1024)) if st.get("answered") else (
                "refused" if st.get("failure") else "–")
            rows.append(
                f"| {n:,} × {m} | {kind} | {fmt(r.get('rss_peak'), ' MB', 2**20, 0)} "
                f"| {fmt(r.get('cpu_per_minute'), ' s', 1, 2)} "
                f"| {fmt(g.get('registration_secs'), ' s', 1, 2)} "
                f"| {fmt(hb.get('p50'), '', 1, 1)} / {fmt(hb.get('p99'), ' ms', 1, 1)} "
                f"| {fmt(app.get('p50'), '', 1000, 2)} / {fmt(app.get('p99'), ' s', 1000, 2)} "
                f"| {fmt(js.get('latency_ms', {}).get('p50'), ' ms', 1, 0)}, "
                f"{fmt(js.get('bytes'), ' KB', 1024, 0)} | {state} "
                f"| {g.get('errors', 'no report')} | {r['load_before']} |")
        if "spark" in pair and "sparkwire" in pair:
            s, w = pair["spark"], pair["sparkwire"]
            ratio = lambda a, b: f"{a / b:.1f}×" if a and b else "–"
            rows.append(f"| {n:,} × {m} | **Spark / sparkwire** "
                        f"| {ratio(s.get('rss_peak'), w.get('rss_peak'))} "
                        f"| {ratio(s.get('cpu_per_minute'), w.get('cpu_per_minute'))} "
                        f"| {ratio((s.get('load') or {}).get('registration_secs'), (w.get('load') or {}).get('registration_secs'))} "
                        f"| {ratio(((s.get('load') or {}).get('heartbeat_ms') or {}).get('p99'), ((w.get('load') or {}).get('heartbeat_ms') or {}).get('p99'))} (p99) "
                        f"| {ratio(((s.get('load') or {}).get('app_to_last_launch_ms') or {}).get('p99'), ((w.get('load') or {}).get('app_to_last_launch_ms') or {}).get('p99'))} (p99) "
                        f"| {ratio((((s.get('load') or {}).get('json') or {}).get('latency_ms') or {}).get('p50'), (((w.get('load') or {}).get('json') or {}).get('latency_ms') or {}).get('p50'))} | | | |")
    return "\n".join(rows)


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib does not import here: no plot drawn"
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for kind, style in (("spark", "o-"), ("sparkwire", "s-")):
        rs = sorted((r for r in results if r["master"] == kind and r.get("rss_peak")),
                    key=lambda r: r["workers"])
        if not rs:
            continue
        a.plot([r["workers"] for r in rs], [r["rss_peak"] / 2**20 for r in rs], style, label=kind)
        b.plot([r["workers"] for r in rs], [r.get("cpu_per_minute") or 0 for r in rs], style,
               label=kind)
    a.set_xlabel("workers")
    a.set_ylabel("master peak RSS, MB")
    b.set_xlabel("workers")
    b.set_ylabel("master CPU s per minute, steady heartbeats")
    for ax in (a, b):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("Master cost against cluster size (Spark's wire, sparkwire spark load)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return f"plot: {path}"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000x100,5000x500,10000x500")
    p.add_argument("--masters", default="spark,sparkwire")
    p.add_argument("--release", default="4.0.1")
    p.add_argument("--steady", type=float, default=60)
    p.add_argument("--worker-timeout", type=int, default=60)
    p.add_argument("--answer-timeout", type=float, default=300)
    p.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "sparkwire"))
    p.add_argument("--out", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                 "sparkwire-master-scale"))
    p.add_argument("--report")
    args = p.parse_args()
    if args.report:
        results = json.load(open(args.report))
        print(table(results))
        return 0
    os.makedirs(args.out, exist_ok=True)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    args.max_peers = max(n + m for n, m in sizes)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4 * args.max_peers + 4096
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 2 * args.max_peers + 1024:
        print(f"open-file limit {resource.getrlimit(resource.RLIMIT_NOFILE)} too low for "
              f"{args.max_peers} peers (raise the hard limit)", file=sys.stderr)
        return 2
    masters = args.masters.split(",")
    results = []
    saved = os.path.join(args.out, "results.json")
    for k, (n, m) in enumerate(sizes):
        order = masters if k % 2 == 0 else list(reversed(masters))
        for kind in order:
            print(f"== {kind} {n}x{m} load {loadavg()}", file=sys.stderr, flush=True)
            try:
                r = one_run(kind, n, m, args, args.out)
            except Exception as e:  # a failed run is recorded and the others go on
                r = {"master": kind, "workers": n, "apps": m, "failed": str(e),
                     "load_before": loadavg()}
            results.append(r)
            with open(saved, "w") as f:
                json.dump(results, f, indent=1)
            g = r.get("load") or {}
            print(f"   rss {r.get('rss_peak')} cpu/min {r.get('cpu_per_minute')} "
                  f"errors {g.get('errors')} {g.get('error_samples', [])[:3]}",
                  file=sys.stderr, flush=True)
    text = table(results)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(plot(results, os.path.join(args.out, "master_scale.png")))
    print(f"results: {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
