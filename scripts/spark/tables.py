#!/usr/bin/env python3
"""The class tables of protocol/spark/ and their index, protocol/spark/releases.json (standard library only).

  tables.py store RELEASE DUMP.json SCALA_LIBRARY_VERSION
      files RELEASE's dump (DumpClasses' output) under the index: into the table file whose class
      descriptors are all equal to it, else into a new file; then names every table file after the
      oldest release that uses it (classes-3.5.0.json), except that a table used by a release the
      crate loads by name (3.0.3, 4.0.1) keeps that release's name; rewrites the file headers
      ("spark", "java", "regenerate") for the release a file is named after, deletes unused files.
  tables.py table RELEASE
      prints the path of RELEASE's table file.
  tables.py check
      fails unless every index entry names a file that exists, every table file is in the index and
      every release of scripts/spark/releases.txt is in it.

The descriptors ("classes") of a file are never rewritten, only its first three header lines.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DIR = os.path.join(ROOT, "protocol", "spark")
INDEX = os.path.join(DIR, "releases.json")
PINNED = ("3.0.3", "4.0.1")  # src/spark/classes.rs loads classes-3.0.3.json and classes-4.0.1.json by name
REGENERATE_ALL = "bash scripts/spark/classes.sh --all"


def known():
    out = []
    with open(os.path.join(HERE, "releases.txt")) as f:
        for line in f:
            w = line.split("#", 1)[0].split()
            if w:
                out.append(w[0])
    return out


def key(release):
    return tuple(int(x) for x in release.split("."))


def load_index():
    if not os.path.exists(INDEX):
        return {}
    with open(INDEX) as f:
        return {e["release"]: e for e in json.load(f)["releases"]}


def write_index(index):
    order = known()
    rows = sorted(index.values(), key=lambda e: (order.index(e["release"]) if e["release"] in order else 1 << 30, key(e["release"])))
    lines = ["{", '  "regenerate": %s,' % json.dumps(REGENERATE_ALL), '  "releases": [']
    for i, e in enumerate(rows):
        fields = ", ".join("%s: %s" % (json.dumps(k), json.dumps(e[k])) for k in ("release", "line", "table", "scala", "scala_library", "java"))
        lines.append("    {%s}%s" % (fields, "," if i + 1 < len(rows) else ""))
    lines += ["  ]", "}"]
    with open(INDEX + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(INDEX + ".tmp", INDEX)


def classes_of(path):
    with open(path) as f:
        return json.load(f)["classes"]


HEADER = re.compile(r'\A\{\n  "spark": "[^"\n]*",\n  "java": "[^"\n]*",\n  "regenerate": "[^"\n]*",\n')


def with_header(text, release, java):
    m = HEADER.match(text)
    if not m:
        raise SystemExit("tables.py: unexpected table header")
    head = '{\n  "spark": %s,\n  "java": %s,\n  "regenerate": %s,\n' % (
        json.dumps(release), json.dumps(java), json.dumps("bash scripts/spark/classes.sh " + release))
    return head + text[m.end():]


def normalize(index, texts, before):
    """texts: table file name -> its text (for the files to write); before: the files the index
    named before the change; names files after their releases, deletes the files no longer named."""
    users = {}
    for e in index.values():
        users.setdefault(e["table"], []).append(e["release"])
    renamed = {}
    writes = []
    # every text is read before any file is written: a file may be taken over by another table
    for name, rels in users.items():
        rels.sort(key=key)
        pinned = [r for r in rels if r in PINNED]
        owner = pinned[0] if pinned else rels[0]
        want = "classes-%s.json" % owner
        text = texts.get(name)
        if text is None:
            with open(os.path.join(DIR, name)) as f:
                text = f.read()
        writes.append((want, with_header(text, owner, index[owner]["java"])))
        renamed[name] = want
    for want, new in writes:
        path = os.path.join(DIR, want)
        old = None
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
        if old != new:
            with open(path + ".tmp", "w") as f:
                f.write(new)
            os.replace(path + ".tmp", path)
    for e in index.values():
        e["table"] = renamed[e["table"]]
    # a file an index entry named before and none names now
    for f in before - set(renamed.values()):
        if os.path.exists(os.path.join(DIR, f)):
            os.remove(os.path.join(DIR, f))


def store(release, dump, scala_library):
    if release not in known():
        raise SystemExit("tables.py: unknown release " + release)
    with open(dump) as f:
        text = f.read()
    doc = json.loads(text)
    classes = doc["classes"]
    index = load_index()
    before = set(e["table"] for e in index.values())
    # the distinct tables of the other releases
    same = None
    for e in index.values():
        if e["release"] == release:
            continue
        path = os.path.join(DIR, e["table"])
        if os.path.exists(path) and classes_of(path) == classes:
            same = e["table"]
            break
    texts = {}
    if same is None:
        same = "new:" + release
        texts[same] = text
    index[release] = {
        "release": release,
        "line": ".".join(release.split(".")[:2]),
        "table": same,
        "scala": ".".join(scala_library.split(".")[:2]),
        "scala_library": scala_library,
        "java": doc["java"],
    }
    normalize(index, texts, before)
    write_index(index)
    print("table of %s: protocol/spark/%s (%d classes)" % (release, index[release]["table"], len(classes)), file=sys.stderr)


def check():
    index = load_index()
    bad = []
    for e in index.values():
        if not os.path.exists(os.path.join(DIR, e["table"])):
            bad.append("%s: %s does not exist" % (e["release"], e["table"]))
    used = {e["table"] for e in index.values()}
    for f in sorted(os.listdir(DIR)):
        if re.fullmatch(r"classes-[0-9.]+\.json", f) and f not in used:
            bad.append("%s is in no index entry" % f)
    for r in known():
        if r not in index:
            bad.append("%s has no table" % r)
    for b in bad:
        print("tables.py check:", b, file=sys.stderr)
    return 1 if bad else 0


def main(argv):
    if len(argv) == 5 and argv[1] == "store":
        store(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 3 and argv[1] == "table":
        e = load_index().get(argv[2])
        if e is None:
            print("tables.py: no table for " + argv[2], file=sys.stderr)
            return 1
        print(os.path.join(DIR, e["table"]))
        return 0
    if len(argv) == 2 and argv[1] == "check":
        return check()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
