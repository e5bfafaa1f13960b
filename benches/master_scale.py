#!/usr/bin/env python3
"""The master at scale, side by side (issue 40): real Spark's master (JVM) and `sparkwire master
--spark-port`, each driven by `sparkwire spark load` (thousands of Spark workers and applications
on Spark's own wire, one process, one thread) at several sizes, the masters interleaved.

Not part of CI (heavy). Usage, from the repository root:

    cargo build --release --bin sparkwire
    python3 benches/master_scale.py                                  # 1,000/5,000/10,000 workers
    python3 benches/master_scale.py --sizes 200x20,1000x100 --steady 30   # a small run
    # A/B of two sparkwire masters in one run, no JVM: the baseline binary (another commit's
    # release build) as master "sparkwire-base", this tree's as "sparkwire"
    python3 benches/master_scale.py --masters sparkwire-base,sparkwire \
        --baseline-bin /tmp/base/target/release/sparkwire --sizes 1000x100,3000x300

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

# The masters a run may measure: Spark's (JVM), a baseline sparkwire binary (--baseline-bin),
# and this tree's sparkwire (--bin, which is also the generator's binary in every run).
KINDS = ("spark", "sparkwire-base", "sparkwire")


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


def master_command(kind, args, port, ui, recovery=None):
    """The command and environment of a master of `kind` on `port` (Spark's RPC) and `ui`;
    `recovery`: None, ("zookeeper", "HOST:PORT", "/dir") or ("filesystem", DIR)."""
    if kind == "spark":
        env = spark_env(args.release)
        opts = [f"-Dspark.worker.timeout={args.worker_timeout}", "-Dspark.deploy.spreadOut=true"]
        if recovery and recovery[0] == "zookeeper":
            opts += ["-Dspark.deploy.recoveryMode=ZOOKEEPER",
                     f"-Dspark.deploy.zookeeper.url={recovery[1]}",
                     f"-Dspark.deploy.zookeeper.dir={recovery[2]}"]
        elif recovery:
            opts += ["-Dspark.deploy.recoveryMode=FILESYSTEM",
                     f"-Dspark.deploy.recoveryDirectory={recovery[1]}"]
        env["SPARK_MASTER_OPTS"] = " ".join(opts)
        cmd = [os.path.join(env["SPARK_HOME"], "bin", "spark-class"),
               "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
               "--port", str(port), "--webui-port", str(ui)]
    else:
        env = dict(os.environ)
        binary = args.baseline_bin if kind == "sparkwire-base" else args.bin
        cmd = [binary, "master", "--host", "127.0.0.1", "--port", str(free_port()),
               "--spark-port", str(port), "--webui-port", str(ui),
               "--worker-timeout", str(args.worker_timeout),
               "--max-connections", str(4 * (args.max_peers + 64))]
        if recovery and recovery[0] == "zookeeper":
            cmd += ["--recovery-mode", "zookeeper", "--zookeeper-url", recovery[1],
                    "--zookeeper-dir", recovery[2]]
        elif recovery:
            cmd += ["--recovery-mode", "filesystem", "--recovery-dir", recovery[1]]
    return cmd, env


def spawn_master(kind, args, work, tag, port, ui, recovery=None):
    cmd, env = master_command(kind, args, port, ui, recovery)
    log = os.path.join(work, f"{tag}.log")
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, log


def json_status(ui):
    """The `status` of the master's /json at port `ui` (None: no answer)."""
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json", timeout=5) as r:
            return json.loads(r.read()).get("status")
    except Exception:
        return None


def wait_status(ui, proc, statuses, limit):
    until = time.time() + limit
    while time.time() < until:
        if proc.poll() is not None:
            return False
        if json_status(ui) in statuses:
            return True
        time.sleep(0.2)
    return False


def start_master(kind, args, work, tag, recovery=None):
    port, ui = free_port(), free_port()
    proc, log = spawn_master(kind, args, work, tag, port, ui, recovery)
    if not wait_status(ui, proc, ("ALIVE",), 180):
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


def load_command(args, port, ui, workers, apps, steady):
    return [args.bin, "spark", "load", "--master", f"127.0.0.1:{port}", "--web-ui",
            f"127.0.0.1:{ui}", "--spark-release", args.release, "--workers", str(workers),
            "--apps", str(apps), "--app-cores", "full", "--executor-cores", "2",
            "--worker-timeout", str(args.worker_timeout), "--steady", str(steady),
            "--answer-timeout", str(args.answer_timeout), "--phases"]


def finish(gen, limit):
    """The generator's standard output once it exits (killed after `limit` seconds). Its
    standard error is the reader thread's alone: `communicate` would read it too, and the phase
    lines it took were lost to the thread (no CPU figure, no failover acted on)."""
    timer = threading.Timer(limit, gen.kill)
    timer.start()
    out = gen.stdout.read()
    gen.wait()
    timer.cancel()
    return out


def one_run(kind, workers, apps, args, work):
    tag = f"{kind}-{workers}x{apps}"
    record = {"master": kind, "workers": workers, "apps": apps, "load_before": loadavg()}
    # spark-class execs java: the JVM is the process started.
    proc, port, ui, log = start_master(kind, args, work, tag)
    pid = proc.pid
    record["rss_idle"] = proc_status(pid, "VmRSS")
    cmd = load_command(args, port, ui, workers, apps, args.steady)
    phases = {}
    peak = [0]
    fds = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], proc_status(pid, "VmRSS") or 0)
                fds[0] = max(fds[0], len(os.listdir(f"/proc/{pid}/fd")))
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
    out = finish(gen, args.steady + 6 * args.answer_timeout + 600)
    reader.join(5)
    done.set()
    record["rss_peak"] = proc_status(pid, "VmHWM") or peak[0]
    record["fds_peak"] = fds[0]
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


def start_zookeeper(work):
    """Debian's ZooKeeper 3.8 on a free port (sessions up to 120 s, so that each master gets the
    session timeout it asks for: Spark's 60 s, sparkwire's --zookeeper-session-timeout)."""
    port = free_port()
    data = os.path.join(work, "zookeeper")
    os.makedirs(data, exist_ok=True)
    cfg = os.path.join(work, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=500\ninitLimit=10\nsyncLimit=4\ndataDir={data}\n"
                f"clientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                "maxClientCnxns=0\nmaxSessionTimeout=120000\n4lw.commands.whitelist=ruok,srvr\n")
    log = open(os.path.join(work, "zookeeper.log"), "w")
    proc = subprocess.Popen(["java", "-Xmx256m", "-Dzookeeper.admin.enableServer=false", "-cp",
                             "/usr/share/java/zookeeper.jar:/etc/zookeeper/conf_example",
                             "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    until = time.time() + 60
    while time.time() < until:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(b"ruok")
                if s.recv(16) == b"imok":
                    return proc, port
        except OSError:
            pass
        time.sleep(0.3)
    stop(proc)
    raise RuntimeError("ZooKeeper did not start")


def failover_run(kind, mode, workers, apps, args, work):
    """One failover of `mode` with `workers` generated workers and `apps` applications:
    - zookeeper: two masters of a ZooKeeper group, the leader killed (SIGKILL) at the generator's
      phase failover-0; the standby must lead with everything recovered;
    - filesystem: one master of a recovery directory killed (SIGKILL) and a new one started on
      that directory at once (Spark's FILESYSTEM mode elects no standby: every master leads);
    - restart: one master of a recovery directory stopped cleanly (SIGTERM) and started again
      on the same ports.
    The generator times from the first lost connection to the new leader's /json holding every
    worker ALIVE and every live application recovered (src/spark/load.rs, "Failovers")."""
    tag = f"{kind}-{mode}-{workers}x{apps}"
    record = {"master": kind, "mode": mode, "workers": workers, "apps": apps,
              "load_before": loadavg()}
    zk = None
    procs = []
    try:
        if mode == "zookeeper":
            zk, zk_port = start_zookeeper(os.path.join(work, tag))
            recovery = ("zookeeper", f"127.0.0.1:{zk_port}", f"/spark-{tag}")
        else:
            rdir = os.path.join(work, tag, "recovery")
            os.makedirs(rdir, exist_ok=True)
            recovery = ("filesystem", rdir)
        port, ui = free_port(), free_port()
        first, log = spawn_master(kind, args, work, tag + "-a", port, ui, recovery)
        procs.append(first)
        if not wait_status(ui, first, ("ALIVE",), 180):
            raise RuntimeError(f"the first master did not lead; see {log}")
        port_b, ui_b = (port, ui) if mode == "restart" else (free_port(), free_port())
        if mode == "zookeeper":
            standby, log_b = spawn_master(kind, args, work, tag + "-b", port_b, ui_b, recovery)
            procs.append(standby)
            if not wait_status(ui_b, standby, ("STANDBY",), 180):
                raise RuntimeError(f"the standby did not start; see {log_b}")
        cmd = load_command(args, port, ui, workers, apps, min(args.steady, 10)) + [
            "--failover", f"127.0.0.1:{ui_b}", "--failover-timeout", "600"]
        gen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err_lines = []

        def act():
            if mode == "restart":
                first.send_signal(signal.SIGTERM)
                first.wait(60)
            else:
                first.kill()
                first.wait()
            record["acted_at"] = time.time()
            if mode != "zookeeper":
                p, _ = spawn_master(kind, args, work, tag + "-b", port_b, ui_b, recovery)
                procs.append(p)

        def read_err():
            for line in gen.stderr:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "phase" and parts[1] == "failover-0":
                    record["phase_at"] = time.time()
                    act()
                elif not (len(parts) == 3 and parts[0] == "phase"):
                    err_lines.append(line)

        reader = threading.Thread(target=read_err, daemon=True)
        reader.start()
        out = finish(gen, 6 * args.answer_timeout + 1200)
        reader.join(5)
        try:
            report = json.loads(out)
            record["load"] = {k: report.get(k) for k in
                              ("workers_registered", "apps_registered", "errors",
                               "error_samples")}
            record["failover"] = (report.get("failovers") or [None])[0]
        except json.JSONDecodeError:
            record["generator_stderr"] = "".join(err_lines[-20:])
    except Exception as e:  # recorded; the other runs go on
        record["failed"] = str(e)
    finally:
        for p in procs:
            stop(p)
        if zk:
            stop(zk)
    record["load_after"] = loadavg()
    return record


def failover_table(results):
    rows = ["| workers × apps | mode | master | recovered (s, from the lost connection) "
            "| every peer answered MasterChanged (s) | errors | load |",
            "|---|---|---|---|---|---|---|"]
    by = {}
    for r in results:
        by.setdefault((r["workers"], r["apps"], r["mode"]), {})[r["master"]] = r
    for (n, m, mode), pair in sorted(by.items()):
        for kind in KINDS:
            r = pair.get(kind)
            if not r:
                continue
            f = r.get("failover") or {}
            errs = (r.get("load") or {}).get("errors", r.get("failed", "no report"))
            rows.append(f"| {n:,} × {m} | {mode} | {kind} | {fmt(f.get('recovered_secs'), '', 1, 2)} "
                        f"| {fmt(f.get('answered_secs'), '', 1, 2)} | {errs} "
                        f"| {r['load_before']} |")
        if "spark" in pair and "sparkwire" in pair:
            a = (pair["spark"].get("failover") or {}).get("recovered_secs")
            b = (pair["sparkwire"].get("failover") or {}).get("recovered_secs")
            rows.append(f"| {n:,} × {m} | {mode} | **Spark / sparkwire** "
                        f"| {f'{a / b:.1f}×' if a and b else '–'} | | | |")
    return "\n".join(rows)


def fmt(v, unit="", scale=1.0, digits=1):
    if v is None:
        return "–"
    return f"{v / scale:.{digits}f}{unit}"


def table(results):
    rows = ["| workers × apps | master | peak RSS | CPU s/min steady | registration (N at once) "
            "| heartbeat p50 / p99 | app → last LaunchExecutor p50 / p99 | /json latency, size "
            "| RequestMasterState | errors | peak fds | load |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by = {}
    for r in results:
        by.setdefault((r["workers"], r["apps"]), {})[r["master"]] = r
    for (n, m), pair in sorted(by.items()):
        for kind in KINDS:
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
                f"| {g.get('errors', 'no report')} | {r.get('fds_peak', '–')} "
                f"| {r['load_before']} |")
        for base, label in (("spark", "Spark"), ("sparkwire-base", "sparkwire-base")):
            if base not in pair or "sparkwire" not in pair:
                continue
            s, w = pair[base], pair["sparkwire"]
            ratio = lambda a, b: f"{a / b:.1f}×" if a and b else "–"
            rows.append(f"| {n:,} × {m} | **{label} / sparkwire** "
                        f"| {ratio(s.get('rss_peak'), w.get('rss_peak'))} "
                        f"| {ratio(s.get('cpu_per_minute'), w.get('cpu_per_minute'))} "
                        f"| {ratio((s.get('load') or {}).get('registration_secs'), (w.get('load') or {}).get('registration_secs'))} "
                        f"| {ratio(((s.get('load') or {}).get('heartbeat_ms') or {}).get('p99'), ((w.get('load') or {}).get('heartbeat_ms') or {}).get('p99'))} (p99) "
                        f"| {ratio(((s.get('load') or {}).get('app_to_last_launch_ms') or {}).get('p99'), ((w.get('load') or {}).get('app_to_last_launch_ms') or {}).get('p99'))} (p99) "
                        f"| {ratio((((s.get('load') or {}).get('json') or {}).get('latency_ms') or {}).get('p50'), (((w.get('load') or {}).get('json') or {}).get('latency_ms') or {}).get('p50'))} | | | | |")
    return "\n".join(rows)


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib does not import here: no plot drawn"
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for kind, style in (("spark", "o-"), ("sparkwire-base", "^--"), ("sparkwire", "s-")):
        rs = sorted((r for r in results
                     if r["master"] == kind and r.get("rss_peak") and "mode" not in r),
                    key=lambda r: r["workers"])
        if not rs:
            continue
        a.plot([r["workers"] for r in rs], [r["rss_peak"] / 2**20 for r in rs], style, label=kind)
        # A run stopped before its steady phase has no CPU figure: no point, not a zero.
        cs = [r for r in rs if r.get("cpu_per_minute") is not None]
        b.plot([r["workers"] for r in cs], [r["cpu_per_minute"] for r in cs], style, label=kind)
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
    p.add_argument("--masters", default="spark,sparkwire",
                   help="masters to measure, of: " + ", ".join(KINDS))
    p.add_argument("--release", default="4.0.1")
    p.add_argument("--steady", type=float, default=60)
    p.add_argument("--worker-timeout", type=int, default=60)
    p.add_argument("--answer-timeout", type=float, default=300)
    p.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "sparkwire"),
                   help="the sparkwire binary of master \"sparkwire\" and of the generator")
    p.add_argument("--baseline-bin",
                   help="the sparkwire binary of master \"sparkwire-base\" (another build)")
    p.add_argument("--out", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                 "sparkwire-master-scale"))
    p.add_argument("--failover", default="",
                   help="failover modes to measure after the sizes: zookeeper,filesystem,restart")
    p.add_argument("--failover-size", default="1000x100")
    p.add_argument("--report")
    args = p.parse_args()
    if args.report:
        results = json.load(open(args.report))
        print(table([r for r in results if "mode" not in r]))
        print(failover_table([r for r in results if "mode" in r]))
        print(plot(results, os.path.join(os.path.dirname(args.report), "master_scale.png")))
        return 0
    os.makedirs(args.out, exist_ok=True)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",") if s]
    fsize = tuple(int(x) for x in args.failover_size.split("x"))
    args.max_peers = max([n + m for n, m in sizes] + [sum(fsize)])
    masters = args.masters.split(",")
    unknown = [k for k in masters if k not in KINDS]
    if unknown or ("sparkwire-base" in masters and not args.baseline_bin):
        print(f"--masters: unknown {unknown}, or sparkwire-base without --baseline-bin",
              file=sys.stderr)
        return 2
    # Descriptors per peer in one process (the limit is per process): the generator holds one;
    # Spark's master two (the peer's connection and its own dial back); the sparkwire master one
    # since the front reaches it in process (three before: the peer's socket and both ends of a
    # loopback connection to its own listener, which the baseline of an A/B may still have).
    per_peer = max({"spark": 2, "sparkwire-base": 3, "sparkwire": 1}[k] for k in masters)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = per_peer * args.max_peers + 4096
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < per_peer * args.max_peers + 256:
        print(f"open-file limit {resource.getrlimit(resource.RLIMIT_NOFILE)} too low for "
              f"{args.max_peers} peers at {per_peer} descriptors each (raise the hard limit)",
              file=sys.stderr)
        return 2
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
                  f"fds {r.get('fds_peak')} "
                  f"errors {g.get('errors')} {g.get('error_samples', [])[:3]}",
                  file=sys.stderr, flush=True)
    modes = [m for m in args.failover.split(",") if m]
    for k, mode in enumerate(modes):
        order = masters if k % 2 == 0 else list(reversed(masters))
        for kind in order:
            print(f"== {kind} failover {mode} {fsize[0]}x{fsize[1]} load {loadavg()}",
                  file=sys.stderr, flush=True)
            r = failover_run(kind, mode, fsize[0], fsize[1], args, args.out)
            results.append(r)
            with open(saved, "w") as f:
                json.dump(results, f, indent=1)
            print(f"   {r.get('failover')} {r.get('failed', '')}", file=sys.stderr, flush=True)
    text = table([r for r in results if "mode" not in r])
    if modes:
        text += "\n\n" + failover_table([r for r in results if "mode" in r])
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(plot(results, os.path.join(args.out, "master_scale.png")))
    print(f"results: {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
