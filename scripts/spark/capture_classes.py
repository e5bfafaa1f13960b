#!/usr/bin/env python3
"""Lists the Java class descriptors that occur in the TCP payloads of pcap files.

    python3 scripts/spark/capture_classes.py FILE.pcap...   ->  one line per distinct descriptor:
    NAME <TAB> SUID (decimal) <TAB> FLAGS (decimal) <TAB> FIELDS ("I cores,L host Ljava/lang/String;,...")

    python3 scripts/spark/capture_classes.py --messages FILE.pcap...  ->  per file, how many Spark
    transport frames of each kind it holds: the class of the top-level object of every RpcRequest,
    OneWayMessage and RpcResponse body (a Scala 2.13 `object` written as ModuleSerializationProxy is
    named by its module class), "RpcFailure", or the frame type; and the bytes that did not parse
    as frames (0 when every connection was captured whole).

Standard library only. Each TCP direction of each connection is reassembled by sequence number, and
every TC_CLASSDESC (0x72) in it whose name, serialVersionUID, flags byte and field list parse is
reported; this finds the descriptors of every Java serialization stream on the wire, including the
ones nested in byte arrays (a LaunchTask's task, an RPC reply). Field type strings written as a back
reference (TC_REFERENCE) are shown as "@ref"; a class seen with two different descriptors is an error.
"""
import re
import struct
import sys

NAME = re.compile(rb"(?:\[+(?:[BCDFIJSZ]|L[A-Za-z_$][\w$.]*;)|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+)")
TYPECODES = b"BCDFIJSZL["
IDENT = re.compile(rb"[A-Za-z_$][\w$]*")
TYPESTRING = re.compile(rb"\[*(?:[BCDFIJSZ]|L[A-Za-z_$][\w$/]*;)|L[A-Za-z_$][\w$/]*;")


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic == b"\xd4\xc3\xb2\xa1":
        endian = "<"
    elif magic == b"\xa1\xb2\xc3\xd4":
        endian = ">"
    else:
        sys.exit(f"{path}: not a classic pcap file")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off : off + 16])
        frame = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        if linktype == 1:  # EN10MB
            if len(frame) < 14 or frame[12:14] != b"\x08\x00":
                continue
            ip = frame[14:]
        elif linktype == 113:  # LINUX_SLL
            if len(frame) < 16 or frame[14:16] != b"\x08\x00":
                continue
            ip = frame[16:]
        elif linktype == 0:  # NULL/loopback
            ip = frame[4:]
        else:
            sys.exit(f"{path}: unsupported link type {linktype}")
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        doff = (tcp[12] >> 4) * 4
        payload = tcp[doff:]
        if payload:
            yield (ip[12:16], sport, ip[16:20], dport), seq, payload


def streams(path):
    flows = {}
    for key, seq, payload in packets(path):
        flows.setdefault(key, {})[seq] = payload  # a retransmission replaces, never duplicates
    for key, segs in flows.items():
        out = bytearray()
        base = None
        for seq in sorted(segs):
            if base is None:
                base = seq
            pos = seq - base
            seg = segs[seq]
            if pos < len(out):
                seg = seg[len(out) - pos :]
            out += seg
        yield bytes(out)


def utf(buf, i):
    if i + 2 > len(buf):
        return None, i
    n = struct.unpack(">H", buf[i : i + 2])[0]
    if i + 2 + n > len(buf):
        return None, i
    return buf[i + 2 : i + 2 + n], i + 2 + n


def descriptors(buf):
    for m in re.finditer(rb"\x72", buf):
        i = m.start() + 1
        name, j = utf(buf, i)
        if not name or not NAME.fullmatch(name):
            continue
        if j + 11 > len(buf):
            continue
        suid = struct.unpack(">q", buf[j : j + 8])[0]
        flags = buf[j + 8]
        nfields = struct.unpack(">H", buf[j + 9 : j + 11])[0]
        if flags & ~0x1F or flags == 0:
            continue
        k = j + 11
        fields = []
        ok = True
        for _ in range(nfields):
            if k >= len(buf) or buf[k] not in TYPECODES:
                ok = False
                break
            code = chr(buf[k])
            fname, k = utf(buf, k + 1)
            if fname is None or not IDENT.fullmatch(fname):
                ok = False
                break
            if code in "L[":
                if k < len(buf) and buf[k] == 0x74:
                    ts, k = utf(buf, k + 1)
                    if ts is None or not TYPESTRING.fullmatch(ts):
                        ok = False
                        break
                    fields.append(f"{code} {fname.decode()} {ts.decode()}")
                elif k + 5 <= len(buf) and buf[k] == 0x71:
                    fields.append(f"{code} {fname.decode()} @ref")
                    k += 5
                else:
                    ok = False
                    break
            else:
                fields.append(f"{code} {fname.decode()}")
        if ok:
            yield name.decode(), suid, flags, ",".join(fields)


FRAME_TYPES = {0: "ChunkFetchRequest", 1: "ChunkFetchSuccess", 2: "ChunkFetchFailure", 3: "RpcRequest",
               4: "RpcResponse", 5: "RpcFailure", 6: "StreamRequest", 7: "StreamResponse", 8: "StreamFailure",
               9: "OneWayMessage", 10: "UploadStream"}


def top_class(body):
    """The class name of the one object a Java serialization stream holds."""
    if body[:4] != b"\xac\xed\x00\x05" or len(body) < 7:
        return "not Java serialization"
    tag = body[4]
    if tag in (0x73, 0x7E) and body[5] == 0x72:  # TC_OBJECT / TC_ENUM, TC_CLASSDESC
        name, j = utf(body, 6)
        if name is None:
            return "unparsed"
        name = name.decode("utf-8", "replace")
        if name == "scala.runtime.ModuleSerializationProxy":
            k = body.find(b"\x76\x72", j)  # TC_CLASS, TC_CLASSDESC: the module class
            if k >= 0:
                inner, _ = utf(body, k + 2)
                if inner:
                    return inner.decode("utf-8", "replace")
        return name
    if tag == 0x74:
        return "java.lang.String"
    return f"tag 0x{tag:02x}"


def request_body(frame, off):
    """Skips a RequestMessage header (sender, receiver, endpoint name); returns the endpoint and the body."""
    for _ in range(2):
        if frame[off]:
            _, off = utf(frame, off + 1)
            off += 4
        else:
            off += 1
    name, off = utf(frame, off)
    return (name or b"?").decode("utf-8", "replace"), frame[off:]


def messages(path):
    counts = {}
    unparsed = 0
    for buf in streams(path):
        i = 0
        while i + 9 <= len(buf):
            length = struct.unpack(">q", buf[i : i + 8])[0]
            if length < 9 or i + length > len(buf):
                break
            frame = buf[i : i + length]
            kind = frame[8]
            label = FRAME_TYPES.get(kind, f"frame type {kind}")
            try:
                if kind == 3:
                    _, body = request_body(frame, 9 + 8 + 4)
                    label = f"{top_class(body)} (RpcRequest)"
                elif kind == 9:
                    _, body = request_body(frame, 9 + 4)
                    label = f"{top_class(body)} (OneWayMessage)"
                elif kind == 4:
                    label = f"{top_class(frame[9 + 8 + 4:])} (RpcResponse)"
            except (IndexError, TypeError):
                label += " (unparsed body)"
            counts[label] = counts.get(label, 0) + 1
            i += length
            if kind == 7 and len(frame) >= 13:
                # StreamResponse: streamId, byteCount; the stream's bytes follow the frame (a file the
                # driver serves, such as the application jar an executor fetches)
                n = struct.unpack(">i", frame[9:13])[0]
                i += struct.unpack(">q", frame[13 + n : 21 + n])[0]
        unparsed += len(buf) - i
    return counts, unparsed


def main():
    if sys.argv[1:2] == ["--messages"]:
        for path in sys.argv[2:]:
            counts, unparsed = messages(path)
            print(f"{path}: {sum(counts.values())} frames, {unparsed} bytes not parsed as frames")
            for label in sorted(counts):
                print(f"  {counts[label]:4d}  {label}")
        return
    seen = {}
    for path in sys.argv[1:]:
        for buf in streams(path):
            for name, suid, flags, fields in descriptors(buf):
                prev = seen.get(name)
                if prev is None:
                    seen[name] = (suid, flags, fields)
                elif prev[:2] != (suid, flags):
                    sys.exit(f"{name}: two descriptors {prev} and {(suid, flags, fields)}")
                elif "@ref" in prev[2] and "@ref" not in fields:
                    seen[name] = (suid, flags, fields)
    for name in sorted(seen):
        suid, flags, fields = seen[name]
        print(f"{name}\t{suid}\t{flags}\t{fields}")


if __name__ == "__main__":
    main()
