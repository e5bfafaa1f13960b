#!/usr/bin/env bash
# The interop matrix: sparkwire against real Spark, release by release, with no --spark-release
# where sparkwire can tell the release from the wire.
#
#   bash scripts/spark/matrix.sh [RELEASE...]     (default: the newest release of every line,
#                                                  3.0.3 ... 4.3.0, from releases.txt)
#
# Per release, one set of JVMs at a time, each stopped by PID by the script that started it:
#   worker            a real Spark worker of RELEASE registers with a sparkwire master told no
#                     release, which names the release it told (scripts/spark/lane.sh, step 1);
#   application       a PySpark application of RELEASE runs a JVM job and a Python job on it to
#                     the right results (lane.sh, step 2);
#   sparkwire-worker  `sparkwire worker --spark-home` of RELEASE runs that release's executors
#                     for a second application (lane.sh, step 3);
#   master, worker    the conformance suite's master and worker targets against a real Spark
#   (conformance)     master and real Spark workers of RELEASE (scripts/spark/conformance.sh
#                     --out, the suite told --spark-release RELEASE); a failing case is filed
#                     under the SPEC §15.4 row that explains it when the table is rendered;
#                     without this step, the full runs conformance/spark/ keeps (4.0.1, 3.0.3)
#                     are summed up instead;
#   decode            `sparkwire spark decode --check-roundtrip` (no release given) of every
#                     capture of RELEASE in tests/data/spark/RELEASE/: frames not decoded and
#                     frames re-encoded differently must both be 0.
# Each release's results go to conformance/spark/matrix/RELEASE.json (small: counts and the ids of
# failing cases; logs stay in a temporary directory, printed, removed unless a step could not
# run or SPARKWIRE_KEEP_LOGS=1), and conformance/SPARK.md is rendered again from all of them
# (`sparkwire-conformance --write-spark-md`; CI's --check-spark-md checks it fresh, no JVM).
# SPARKWIRE_BIN and SPARKWIRE_CONFORMANCE name the binaries (default: target/debug/, built when
# missing). SPARKWIRE_MATRIX_STEPS (default "lane conformance decode") runs only some steps,
# SPARKWIRE_MATRIX_TARGETS (default "master worker") only some of the suite's targets; a step or
# target not run keeps the release's stored result for it.
# Exits 0 when every release was run (its checks' verdicts are the result, failures included).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=releases.sh
source "$here/releases.sh"

releases=("$@")
if [ ${#releases[@]} -eq 0 ]; then
  mapfile -t releases < <(releases_newest)
fi
for r in "${releases[@]}"; do release_check "$r" "$0 [RELEASE...]"; done
steps=" ${SPARKWIRE_MATRIX_STEPS:-lane conformance decode} "
read -r -a targets <<<"${SPARKWIRE_MATRIX_TARGETS:-master worker}"
for t in "${targets[@]}"; do
  case "$t" in master | worker) ;; *) echo "SPARKWIRE_MATRIX_TARGETS: unknown target $t" >&2; exit 2 ;; esac
done

bin=${SPARKWIRE_BIN:-$root/target/debug/sparkwire}
suite=${SPARKWIRE_CONFORMANCE:-$root/target/debug/sparkwire-conformance}
if [ ! -x "$bin" ]; then (cd "$root" && cargo build -q --all-features --bin sparkwire) || exit 1; fi
if [ ! -x "$suite" ]; then (cd "$root" && cargo build -q -p sparkwire-conformance) || exit 1; fi
export SPARKWIRE_BIN=$bin SPARKWIRE_CONFORMANCE=$suite

stored=$root/conformance/spark/matrix
mkdir -p "$stored"
work=$(mktemp -d /tmp/sparkwire-matrix.XXXXXX)
echo "matrix: logs in $work" >&2
broken=0

for release in "${releases[@]}"; do
  dir=$work/$release
  mkdir -p "$dir"
  echo "matrix $release: $(date -u +%H:%M:%S)" >&2
  if [[ $steps == *" lane "* ]]; then
    start=$(date +%s)
    bash "$here/lane.sh" "$release" >"$dir/lane.txt" 2>"$dir/lane.err"
    echo $(($(date +%s) - start)) >"$dir/lane.seconds"
    cat "$dir/lane.txt" >&2
  fi
  if [[ $steps == *" conformance "* ]]; then
    start=$(date +%s)
    if ! bash "$here/conformance.sh" --out "$dir/conformance" "$release" -- "${targets[@]}" >"$dir/conformance.txt" 2>&1; then
      echo "matrix $release: the conformance runs could not happen (see $dir/conformance.txt)" >&2
      tail -n 20 "$dir/conformance.txt" >&2
      broken=1
    fi
    echo $(($(date +%s) - start)) >"$dir/conformance.seconds"
    grep -E '^spark [0-9.]+ (master|worker):' "$dir/conformance.txt" >&2
  fi
  if [[ $steps == *" decode "* ]]; then
    start=$(date +%s)
    : >"$dir/decode.txt"
    for pcap in "$root/tests/data/spark/$release"/*.pcap; do
      [ -f "$pcap" ] || continue
      echo "== $pcap" >>"$dir/decode.txt"
      "$bin" spark decode --check-roundtrip "$pcap" >>"$dir/decode.txt" 2>&1
      echo "== exit $?" >>"$dir/decode.txt"
    done
    echo $(($(date +%s) - start)) >"$dir/decode.seconds"
  fi
  python3 - "$release" "$dir" "$stored/$release.json" "${targets[*]}" <<'PY' || broken=1
import json, os, re, sys

release, d, out, targets = sys.argv[1:]
targets = targets.split()
old = {}
if os.path.exists(out):
    old = json.load(open(out)).get("checks", {})

def seconds(step):
    p = os.path.join(d, step + ".seconds")
    return int(open(p).read()) if os.path.exists(p) else None

checks = {}
# The lane's three checks: each ok or FAIL line is filed under its check.
lane = os.path.join(d, "lane.txt")
if os.path.exists(lane):
    found = {}
    for line in open(lane):
        m = re.match(r"lane \S+: (ok|FAIL) \(([a-z-]+)\): (.*)", line.rstrip("\n"))
        if m:
            found.setdefault(m.group(2), []).append((m.group(1) == "ok", m.group(3)))
    for check in ("worker", "application", "sparkwire-worker"):
        lines = found.get(check, [])
        failed = [t for ok, t in lines if not ok]
        checks[check] = {
            "ok": bool(lines) and not failed,
            "detail": "; ".join(failed) if failed else
                      ("; ".join(t for _, t in lines) if lines else "not run: an earlier check of the lane failed"),
        }
    checks["worker"]["seconds"] = seconds("lane")
else:
    for check in ("worker", "application", "sparkwire-worker"):
        if check in old:
            checks[check] = old[check]

# The conformance runs: counts by verdict and the ids of the cases that failed.
kept = os.path.join(os.path.dirname(os.path.dirname(out)))
def summary(report, source):
    counts = {}
    failures = {}
    for c in report["cases"]:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
        if c["verdict"] in ("fail", "non-strict"):
            failures[c["id"]] = c["verdict"]
    return {
        "pass": counts.get("pass", 0),
        "fail": counts.get("fail", 0),
        "nonStrict": counts.get("non-strict", 0),
        "skipped": counts.get("skipped", 0) + counts.get("unimplemented", 0),
        "wallSeconds": round(report.get("wall_seconds", 0)),
        "failures": failures,
        "source": source,
    }
for target in ("master", "worker"):
    key = "conformance-" + target
    p = os.path.join(d, "conformance", f"{release}-{target}.json")
    if os.path.exists(p):
        checks[key] = summary(json.load(open(p)), "this run")
    elif target in targets and os.path.isdir(os.path.join(d, "conformance")):
        checks[key] = {"error": "the run could not happen"}
    elif key in old:
        checks[key] = old[key]
    elif os.path.exists(os.path.join(kept, f"{release}-{target}.json")):
        # Not run now: the full run conformance/spark/ keeps for this release (4.0.1, 3.0.3).
        report = json.load(open(os.path.join(kept, f"{release}-{target}.json")))
        checks[key] = summary(report, f"conformance/spark/{release}-{target}.json")

# decode --check-roundtrip of the release's captures.
def kinds(text):
    # Each violation (`EVENT [RULE name] (ENTITY): expected TEXT`) counted by its kind: the
    # event's message, its rule and what was expected, every token holding a digit (ids, times,
    # addresses) written "…", so that the renderer can file each kind under the SPEC §15.4 row
    # that explains it (spark_md::decode_resolution).
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(?:event \d+ at \d+ ms on conn \d+: )?(.*?) \[([A-Z]+\d+ [^\]]+)\](?: \(.*?\))?: expected (.*)$", line)
        if not m:
            continue
        norm = lambda t: re.sub(r"\S*\d\S*", "…", t)
        kind = f"{norm(m.group(1))} [{m.group(2)}]: expected {norm(m.group(3))}"
        out[kind] = out.get(kind, 0) + 1
    return out
dec = os.path.join(d, "decode.txt")
if os.path.exists(dec):
    text = open(dec).read()
    captures = text.count("== exit ")
    total = lambda pat: sum(int(x) for x in re.findall(pat, text, re.M))
    checks["decode"] = {
        "captures": captures,
        "frames": total(r"^frames: (\d+)$"),
        "notDecoded": total(r"^not decoded: (\d+)$"),
        "unknownClasses": total(r"^unknown classes: (\d+)$"),
        "sameBytes": total(r"^round trip: (\d+) re-encoded"),
        "differ": total(r"^round trip: \d+ re-encoded byte for byte, (\d+) differ$"),
        "violations": total(r"^violations: (\d+)$"),
        "failedCaptures": [os.path.basename(p) for p, rc in
                           re.findall(r"^== (\S+)\n(?:.*\n)*?== exit (\d+)$", text, re.M) if rc != "0"],
        "violationKinds": kinds(text),
        # Captures whose decode failed with no violation of its own: a failure no kind explains.
        "failedOtherwise": [os.path.basename(p) for p, body, rc in
                            re.findall(r"^== (\S+)\n((?:.*\n)*?)== exit (\d+)$", text, re.M)
                            if rc != "0" and not re.search(r"^violations: [1-9]", body, re.M)],
    }
elif "decode" in old:
    checks["decode"] = old["decode"]

json.dump({"release": release, "checks": checks}, open(out, "w"), indent=1, sort_keys=True)
open(out, "a").write("\n")
print(f"matrix {release}: stored {out}", file=sys.stderr)
PY
done

if (cd "$root" && "$suite" --write-spark-md conformance/SPARK.md --spark-results conformance/spark); then
  echo "matrix: wrote conformance/SPARK.md" >&2
else
  echo "matrix: conformance/SPARK.md not written (above: why)" >&2
  broken=1
fi
if [ "$broken" = 0 ] && [ "${SPARKWIRE_KEEP_LOGS:-0}" != 1 ]; then rm -rf "$work"; fi
exit "$broken"
