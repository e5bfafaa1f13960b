#!/bin/bash
# Issue 42's figures in one command: the task path of this tree against a baseline commit, and
# against the machine's own limit.
#
#   1. builds the release binary of BASE (default 0991470, the binary before the node layer, the
#      close envelope and the judge) in a temporary git worktree, and this tree's;
#   2. A/B: `sparkwire local-cluster --job pi --partitions 20000 --param 1` in the layouts of
#      LAYOUTS (default "2x1 1x1"), the two binaries in turn (B A B A ...) after a warm-up of each,
#      RUNS pairs (default 10): wall, user+sys CPU and the peak RSS of the largest process (GNU
#      time), then each figure's median and the median of the pairs' ratios (this tree / BASE);
#   3. instructions per task (valgrind's callgrind, with COUNT=1) of the driver's and the
#      executor's process, 1 worker x 1 core, 5,000 and 1,000 tasks, for both binaries: the
#      difference divided by 4,000 is the task path's own cost, start-up left out;
#   4. the ceiling bench (benches/ceiling.rs): the ping-pongs between two processes, blocking and
#      spinning, raw and with the crate's codec, and this tree's task path as a fraction of them.
#
# The load average is printed before and after each part. Figures from a loaded machine are
# noise: run it on a quiet one.
#
# Usage: scripts/task-path-ab.sh [BASE]
# Environment: RUNS (10), LAYOUTS ("2x1 1x1"), PARTITIONS (20000), COUNT (0: no callgrind),
#              CEILING_RUNS (3), KEEP_BASE (1: keep the baseline's worktree and target),
#              THIS_BIN (a release binary of this tree already built, e.g. with other profile
#              settings: used instead of building one; the ceiling bench runs its task path too).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-0991470}
runs=${RUNS:-10}
layouts=${LAYOUTS:-2x1 1x1}
partitions=${PARTITIONS:-20000}
count=${COUNT:-0}
ceiling_runs=${CEILING_RUNS:-3}
here=$(pwd)
work=${TMPDIR:-/tmp}/task-path-ab
base_tree=$work/base-$base
mkdir -p "$work"
export CARGO_INCREMENTAL=0

load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }

echo "== building the release binaries (BASE $base and this tree)"
if [ ! -d "$base_tree" ]; then
    git worktree add --detach "$base_tree" "$base" >/dev/null
fi
(cd "$base_tree" && cargo build --release --bin sparkwire -q)
a=$base_tree/target/release/sparkwire
if [ -n "${THIS_BIN:-}" ]; then
    b=$THIS_BIN
else
    cargo build --release --bin sparkwire -q
    b=$here/target/release/sparkwire
fi
cp "$a" "$work/sparkwire-base"
cp "$b" "$work/sparkwire-this"
a=$work/sparkwire-base
b=$work/sparkwire-this

# One run: prints "wall user sys maxrss_kib tasks_per_s".
one() {
    local bin=$1 workers=$2 cores=$3 out
    out=$(mktemp "$work/run.XXXXXX")
    /usr/bin/time -f "%e %U %S %M" -o "$out.time" \
        "$bin" local-cluster --job pi --partitions "$partitions" --param 1 \
        --workers "$workers" --cores "$cores" >"$out" 2>&1 || true
    local rate
    rate=$(sed -n 's/.* s: \([0-9.]*\) tasks\/s.*/\1/p' "$out" | head -1)
    echo "$(tail -1 "$out.time") ${rate:-nan}"
    rm -f "$out" "$out.time"
}

for layout in $layouts; do
    workers=${layout%x*}
    cores=${layout#*x}
    echo
    echo "== A/B, $workers worker(s) x $cores core(s), $partitions tasks, $runs pairs; $(load)"
    one "$b" "$workers" "$cores" >/dev/null
    one "$a" "$workers" "$cores" >/dev/null
    : >"$work/pairs-$layout"
    for _ in $(seq "$runs"); do
        echo "$(one "$b" "$workers" "$cores") $(one "$a" "$workers" "$cores")" >>"$work/pairs-$layout"
    done
    python3 - "$work/pairs-$layout" "$base" <<'EOF'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
base = sys.argv[2]
def med(xs): return st.median(xs)
names = ["wall s", "CPU s (user+sys)", "peak RSS MiB (largest process)", "tasks/s as printed"]
def fig(r, off):
    wall, user, sys_, rss, rate = r[off:off + 5]
    return [wall, user + sys_, rss / 1024, rate]
this = [fig(r, 0) for r in rows]
old = [fig(r, 5) for r in rows]
print(f"| figure | {base} (median) | this tree (median) | this / {base}, median of the pairs (min-max) |")
print("|---|---|---|---|")
for i, n in enumerate(names):
    ratios = [t[i] / o[i] for t, o in zip(this, old) if o[i] > 0]
    print(f"| {n} | {med([o[i] for o in old]):.3f} | {med([t[i] for t in this]):.3f} | "
          f"{med(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |")
EOF
    echo "$(load)"
done

if [ "$count" = 1 ]; then
    echo
    echo "== instructions per task (callgrind), 1 worker x 1 core; $(load)"
    for which in base this; do
        bin=$work/sparkwire-$which
        for n in 1000 5000; do
            d=$work/cg-$which-$n
            rm -rf "$d"
            mkdir -p "$d"
            # Names written in full in each file, so that each process's file reads alone. The
            # executor's file is cut short when its worker kills it while valgrind writes it: its
            # total (the header's summary, used below) is right, its functions are not; BENCHMARKS.md
            # (issue 42) says how to profile the executor alone.
            valgrind --tool=callgrind --trace-children=yes --compress-strings=no \
                --trace-children-skip='/bin/*,/usr/bin/*' \
                --callgrind-out-file="$d/cg.%p" \
                "$bin" local-cluster --job pi --partitions "$n" --param 1 --workers 1 --cores 1 \
                >"$d/out" 2>"$d/err" || true
        done
        python3 - "$work" "$which" <<'EOF'
import glob, re, sys
work, which = sys.argv[1], sys.argv[2]
def parts(n):
    got = {}
    for f in glob.glob(f"{work}/cg-{which}-{n}/cg.*"):
        text = open(f, errors="replace").read()
        found = re.search(r"^cmd: (.*)$", text, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if not found:
            continue
        cmd = found.group(1)
        words = cmd.split()
        sub = words[1] if len(words) > 1 else ""
        role = {"local-cluster": "driver", "executor": "executor", "worker": "worker",
                "master": "master"}.get(sub)
        if role and total:
            got[role] = got.get(role, 0) + int(total.group(1))
    return got
small, large = parts(1000), parts(5000)
for role in ["driver", "executor", "master", "worker"]:
    if role in small and role in large:
        print(f"{which}: {role}: {(large[role] - small[role]) / 4000:,.0f} instructions per task")
EOF
    done
fi

echo
echo "== the ceiling and this tree's task path as a fraction of it; $(load)"
cargo bench --bench ceiling -q -- --runs "$ceiling_runs" --seconds 2 --sparkwire "$b" 2>/dev/null
echo "$(load)"

if [ "${KEEP_BASE:-1}" = 0 ]; then
    git worktree remove --force "$base_tree"
fi
