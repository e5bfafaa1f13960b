#!/usr/bin/env python3
"""Prints the markdown tables of tests/data/spark/README.md.

    python3 scripts/spark/capture_table.py tests/data/spark/*/*.pcap
        per capture: its size, packets, frames and the Spark messages in it (short names, counts)
    python3 scripts/spark/capture_table.py --coverage tests/data/spark/*/*.pcap
        per catalogued message that crosses Spark's wire: the captures of each version that hold it
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


RECEIVES = """RegisterWorker Heartbeat WorkerLatestState ExecutorStateChanged DriverStateChanged
WorkerDecommissioning WorkerSchedulerStateResponse RegisterApplication UnregisterApplication
MasterChangeAcknowledged RequestExecutors KillExecutors RequestSubmitDriver RequestKillDriver
RequestDriverStatus RequestKillAllDrivers RequestClearCompletedDriversAndApps RequestReadyz
RequestMasterState DecommissionWorkersOnHosts""".split()
SENDS = """RegisteredWorker RegisterWorkerFailed MasterInStandby ReconnectWorker LaunchExecutor KillExecutor
LaunchDriver KillDriver ApplicationFinished DecommissionWorker MasterChanged RegisteredApplication
ExecutorAdded ExecutorUpdated ApplicationRemoved WorkerRemoved SubmitDriverResponse KillDriverResponse
DriverStatusResponse KillAllDriversResponse MasterStateResponse""".split()
OTHERS = """CheckExistence Boolean Integer RetrieveSparkAppConfig SparkAppConfig RegisterExecutor
LaunchedExecutor StatusUpdate LaunchTask KillTask StopExecutor DecommissionExecutor
ExecutorDecommissioning UpdateDelegationTokens UpdateExecutorLogLevel TaskThreadDump
ShufflePushCompletion MiscellaneousProcessAdded IsExecutorAlive RetrieveLastAllocatedExecutorId
RemoveExecutor""".split()
NOT_IN_303 = set("""WorkerDecommissioning RequestKillAllDrivers RequestClearCompletedDriversAndApps RequestReadyz
DecommissionWorkersOnHosts DecommissionWorker KillAllDriversResponse DecommissionExecutor
ExecutorDecommissioning UpdateExecutorLogLevel TaskThreadDump ShufflePushCompletion
MiscellaneousProcessAdded IsExecutorAlive""".split())


def coverage(paths):
    found = {}
    for path in paths:
        version = os.path.basename(os.path.dirname(path))
        scenario = os.path.basename(path)[: -len(".pcap")]
        counts, _ = messages(path)
        for label in counts:
            name = short(label).replace(" (reply)", "").rstrip("$")
            found.setdefault((name, version), set()).add(scenario)
    print("| message | 4.0.1 | 3.0.3 |")
    print("|---|---|---|")
    groups = (("a master receives", RECEIVES), ("a master sends", SENDS),
              ("replies, endpoint verifier, driver and executors", OTHERS))
    for group, names in groups:
        print(f"| *{group}* | | |")
        for name in names:
            cells = []
            for version in ("4.0.1", "3.0.3"):
                hit = sorted(found.get((name, version), ()))
                if hit:
                    cells.append(", ".join(f"`{h}`" for h in hit))
                elif version == "3.0.3" and name in NOT_IN_303:
                    cells.append("not in 3.0.3")
                else:
                    cells.append("**none**")
            print(f"| {name} | {cells[0]} | {cells[1]} |")


if sys.argv[1:2] == ["--coverage"]:
    coverage(sys.argv[2:])
    sys.exit(0)

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
