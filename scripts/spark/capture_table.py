#!/usr/bin/env python3
"""Prints the markdown table of tests/data/spark/README.md: per capture its size, packets, frames and
the Spark messages in it (short class names, with counts).

    python3 scripts/spark/capture_table.py tests/data/spark/*/*.pcap
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_classes import messages  # noqa: E402


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    n, off = 0, 24
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[off + 8 : off + 12])[0]
        off += 16 + incl
        n += 1
    return n


def short(label):
    name, _, kind = label.partition(" (")
    name = name.rsplit(".", 1)[-1]
    for prefix in ("DeployMessages$", "CoarseGrainedClusterMessages$", "BlockManagerMessages$", "RpcEndpointVerifier$"):
        name = name.replace(prefix, "")
    return name + ("" if kind.startswith("RpcRequest") or kind.startswith("OneWay") else " (reply)" if kind.startswith("RpcResponse") else "")


print("| version | scenario | bytes | packets | frames | messages on the wire (count) |")
print("|---|---|---:|---:|---:|---|")
for path in sys.argv[1:]:
    counts, unparsed = messages(path)
    version = os.path.basename(os.path.dirname(path))
    scenario = os.path.basename(path)[: -len(".pcap")]
    merged = {}
    for label, n in counts.items():
        merged[short(label)] = merged.get(short(label), 0) + n
    text = ", ".join(f"{k} {v}" for k, v in sorted(merged.items()))
    note = f" ({unparsed} bytes not parsed)" if unparsed else ""
    print(f"| {version} | `{scenario}` | {os.path.getsize(path):,} | {packets(path)} | {sum(counts.values())}{note} | {text} |")
