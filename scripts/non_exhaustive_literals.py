#!/usr/bin/env python3
"""Rewrites code outside sparkwire's library for its `#[non_exhaustive]` message types.

Since every message struct and every struct a message carries is `#[non_exhaustive]` (see the
docs of `sparkwire::messages`), code outside the library can no longer write them as struct
literals, nor match them with patterns that list every field. This script rewrites such code:

  * a struct-literal expression of a message type becomes its constructor and setters:
        RegisterWorker { id: a, host: b, ..., message: Some(m) }
     -> RegisterWorker::new(a, b, ...).with_message(Some(m))
    `new` takes the fields that are not `Option` in declaration order; each `Option` field given
    becomes `.with_<field>(value)` (one given as plain `None` is dropped: `new` leaves it `None`).
    Shorthand fields (`Heartbeat { worker_id, worker }`) and nested literals are handled; so is
    functional update: `T { a: x, ..Default::default() }` -> `T::default().with_a(x)` and
    `T { a: x, ..base }` -> `base.with_a(x)`. A variant of `ExecutorLossReason` becomes its
    constructor: `ExecutorLossReason::ExecutorKilled {}` -> `ExecutorLossReason::executor_killed()`.
  * a struct pattern of a message type gets a trailing `..`:
        DeployMessage::Heartbeat(Heartbeat { worker_id, worker }) => ...
     -> DeployMessage::Heartbeat(Heartbeat { worker_id, worker, .. }) => ...

It learns the types, their fields and which are optional from `src/messages/**` (the `record!`
declarations), so it stays right when fields are added. It is idempotent: code it already
rewrote, or that needs nothing, is left as it is; run it again after merging any branch.

Usage (from the repository root, or pass --root):

    python3 scripts/non_exhaustive_literals.py            # rewrite the default places in place
    python3 scripts/non_exhaustive_literals.py --check    # list what would change; exit 1 if any
    python3 scripts/non_exhaustive_literals.py --diff     # print a unified diff, change nothing
    python3 scripts/non_exhaustive_literals.py tests/foo.rs README.md   # only these paths
    python3 scripts/non_exhaustive_literals.py --self-test  # the script's own cases

Default places: tests/, benches/, examples/, fuzz/, conformance/ (every `.rs` file, code and
doc-comment code blocks), `*.md` at the root and in conformance/ (```rust blocks), and the
doc-comment code blocks (doctests) of src/ outside src/messages/ (whose code, inside the crate,
needs no change), and the code of the binary crate: src/main.rs and the modules it declares
(src/cli/). Rewritten `.rs` files are passed to `rustfmt --edition 2021` unless --no-fmt.

What it does not do (the compiler points at these; fix them by hand): add a wildcard arm to a
`match` over a now non-exhaustive enum (the families, `Version`, Spark's states), rewrite
`..base` where `base` is borrowed (`..*r`), or literals of types imported under another name.
It reports each literal it recognises but leaves unchanged (a required field missing, an
ambiguous type) on stderr as `path:line: ...`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------------
# Tokenizer: enough of Rust's lexical grammar to find balanced groups and skip strings/comments.
# ---------------------------------------------------------------------------------------------

PUNCTS = [
    "..=", "...", "<<=", ">>=", "::", "=>", "==", "!=", "<=", ">=", "->", "&&", "||", "+=", "-=",
    "*=", "/=", "%=", "^=", "&=", "|=", "..", "<<",
]
OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")": "(", "]": "[", "}": "{"}


@dataclass
class Tok:
    kind: str  # ident, punct, lit, lifetime
    text: str
    start: int
    end: int


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(src)
    ident_re = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
    num_re = re.compile(r"[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?(?:[eE][+-]?[0-9_]+)?")
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = j
            continue
        m = re.compile(r'(?:b|c)?r(#*)"').match(src, i)
        if m:
            close = '"' + m.group(1)
            j = src.find(close, m.end())
            j = n if j < 0 else j + len(close)
            toks.append(Tok("lit", src[i:j], i, j))
            i = j
            continue
        if c == '"' or (c in "bc" and src.startswith('"', i + 1)):
            j = i + (1 if c == '"' else 2)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            toks.append(Tok("lit", src[i:j], i, j))
            i = j
            continue
        if c == "'" or (c == "b" and src.startswith("'", i + 1)):
            k = i + (1 if c == "'" else 2)
            m = re.compile(r"(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'").match(src, k)
            if m:
                toks.append(Tok("lit", src[i:m.end()], i, m.end()))
                i = m.end()
                continue
            m = ident_re.match(src, i + 1)
            if c == "'" and m:
                toks.append(Tok("lifetime", src[i:m.end()], i, m.end()))
                i = m.end()
                continue
        m = ident_re.match(src, i)
        if m:
            toks.append(Tok("ident", m.group(0), i, m.end()))
            i = m.end()
            continue
        m = num_re.match(src, i)
        if m:
            toks.append(Tok("lit", m.group(0), i, m.end()))
            i = m.end()
            continue
        for p in PUNCTS:
            if src.startswith(p, i):
                toks.append(Tok("punct", p, i, i + len(p)))
                i += len(p)
                break
        else:
            toks.append(Tok("punct", c, i, i + 1))
            i += 1
    return toks


def match_groups(toks: list[Tok]) -> dict[int, int]:
    """Maps each bracket token's index to its partner's (both ways). Unbalanced ones are left out."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for k, t in enumerate(toks):
        if t.kind != "punct":
            continue
        if t.text in OPEN:
            stack.append(k)
        elif t.text in CLOSE:
            while stack and toks[stack[-1]].text != CLOSE[t.text]:
                stack.pop()
            if stack:
                o = stack.pop()
                pairs[o], pairs[k] = k, o
    return pairs


# ---------------------------------------------------------------------------------------------
# The message types, read from src/messages.
# ---------------------------------------------------------------------------------------------


@dataclass
class Field:
    name: str
    ty: str

    @property
    def optional(self) -> bool:
        return self.ty.replace(" ", "").startswith("Option<")


@dataclass
class Struct:
    name: str
    module: str  # e.g. "deploy", "coarse", "common"
    fields: list[Field]
    into_params: set[str] = field(default_factory=set)  # `new` params typed `impl Into<…>`
    variant_of: str | None = None  # set for an enum variant built by a constructor function
    ctor: str = "new"

    @property
    def required(self) -> list[Field]:
        return [f for f in self.fields if not f.optional]

    @property
    def has_default(self) -> bool:
        return self.variant_of is None and not self.required


def split_top(text: str, sep: str = ",") -> list[str]:
    """Splits at `sep` outside brackets (angle brackets included: this is for types)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def load_types(root: str) -> dict[str, list[Struct]]:
    types: dict[str, list[Struct]] = {}
    base = os.path.join(root, "src", "messages")
    if not os.path.isdir(base):
        sys.exit(f"error: {base} not found; run from the repository root or pass --root")
    field_re = re.compile(r"^\s*pub (\w+): (.+?) => with_\w+,\s*$")
    for dirpath, _, files in os.walk(base):
        if os.sep + "legacy" in dirpath:
            continue
        for fname in sorted(files):
            if not fname.endswith(".rs"):
                continue
            path = os.path.join(dirpath, fname)
            rel = os.path.relpath(path, base)
            module = rel.split(os.sep)[0].removesuffix(".rs")
            src = open(path, encoding="utf-8").read()
            lines = src.split("\n")
            k = 0
            while k < len(lines):
                if lines[k].startswith("record! {"):
                    custom = False
                    k += 1
                    while not lines[k].strip().startswith("pub struct "):
                        custom |= lines[k].strip() == "@custom_new"
                        k += 1
                    name = re.match(r"\s*pub struct (\w+)", lines[k]).group(1)
                    fields = []
                    k += 1
                    while lines[k].strip() != "}" and not lines[k].startswith("}"):
                        m = field_re.match(lines[k])
                        if m:
                            fields.append(Field(m.group(1), m.group(2)))
                        k += 1
                    s = Struct(name, module, fields)
                    if custom:
                        m = re.search(
                            r"impl %s \{.*?pub fn new\(([^)]*)\)" % re.escape(name), src, re.S
                        )
                        if m:
                            for p in split_top(m.group(1)):
                                pn, _, pt = p.partition(":")
                                if pt.strip().startswith("impl Into<"):
                                    s.into_params.add(pn.strip())
                    types.setdefault(name, []).append(s)
                k += 1
            # Enums whose struct variants are built with one constructor each.
            for m in re.finditer(r"^pub enum (\w+) \{\n(.*?)^\}", src, re.S | re.M):
                enum, body = m.group(1), m.group(2)
                for v in re.finditer(r"^    (\w+) \{(.*?)\}", body, re.S | re.M):
                    vname = v.group(1)
                    ctor = snake(vname)
                    if not re.search(r"pub fn %s\(" % ctor, src):
                        continue
                    fields = [
                        Field(f.group(1), f.group(2))
                        for f in re.finditer(r"^\s*(\w+): (.+),\s*$", v.group(2), re.M)
                    ]
                    s = Struct(vname, module, fields, variant_of=enum, ctor=ctor)
                    types.setdefault(f"{enum}::{vname}", []).append(s)
    return types


# ---------------------------------------------------------------------------------------------
# Finding and classifying literals.
# ---------------------------------------------------------------------------------------------

PATH_OK = {"sparkwire", "messages", "deploy", "coarse", "common", "task", "crate", "self", "super"}
NOT_LITERAL_BEFORE = {"struct", "enum", "union", "impl", "trait", "mod", "for", "->", "fn", "type",
                      "match", "if", "while", "where", "dyn", "as", "macro_rules"}


@dataclass
class Lit:
    start: int  # token index of the first path segment
    name_at: int  # token index of the type name (the token before `{`)
    open: int
    close: int
    key: str  # types key: "Name" or "Enum::Variant"
    path_prefix: str  # source text of the path before the name, e.g. "messages::"
    pattern: bool = False


class File:
    def __init__(self, src: str, types: dict[str, list[Struct]]):
        self.src = src
        self.toks = tokenize(src)
        self.pairs = match_groups(self.toks)
        self.types = types
        local = set(re.findall(
            r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|type|union)\s+([A-Z]\w*)", src, re.M))
        self.names = {k for k in types if k.split("::")[0] not in local}
        self.lits: dict[int, Lit] = {}  # by the token index of `{`
        self.find()

    def t(self, k: int) -> str:
        return self.toks[k].text if 0 <= k < len(self.toks) else ""

    def path_start(self, name_at: int) -> int:
        """The token index where the path ending at `name_at` starts."""
        k = name_at
        while self.t(k - 1) == "::" and self.toks[k - 2].kind == "ident":
            k -= 2
        return k

    def struct_brace(self, k: int) -> bool:
        """Whether the `{` at `k` opens a struct literal or pattern (of any type)."""
        prev = self.toks[k - 1] if k > 0 else None
        if prev is None or prev.kind != "ident" or not prev.text[:1].isupper():
            return False
        s = self.path_start(k - 1)
        before = self.t(s - 1)
        if before == "for" and k in self.pairs and self.t(self.pairs[k] + 1) == "in":
            return True  # `for Pattern { .. } in`
        return before not in NOT_LITERAL_BEFORE and before != "!"

    def find(self) -> None:
        toks = self.toks
        for k, tok in enumerate(toks):
            if tok.text != "{" or k not in self.pairs or not self.struct_brace(k):
                continue
            name_at = k - 1
            s = self.path_start(name_at)
            segs = [toks[j].text for j in range(s, name_at + 1, 2)]
            key = None
            if len(segs) >= 2 and "::".join(segs[-2:]) in self.names:
                key, prefix_segs = "::".join(segs[-2:]), segs[:-2]
            elif segs[-1] in self.names:
                key, prefix_segs = segs[-1], segs[:-1]
            if key is None or any(p not in PATH_OK for p in prefix_segs):
                continue
            first = name_at - 2 * key.count("::")
            prefix = self.src[toks[s].start:toks[first].start]
            lit = Lit(s, name_at, k, self.pairs[k], key, prefix)
            lit.pattern = self.is_pattern(lit)
            self.lits[k] = lit

    def is_pattern(self, lit: Lit) -> bool:
        toks, pairs = self.toks, self.pairs
        after = self.t(lit.close + 1)
        if after == "|" or (self.t(lit.start - 1) == "for" and after == "in"):
            return True  # a closure's parameter, a pattern alternative, a `for` pattern
        j, levels, comma = lit.start - 1, 0, False
        while j >= 0:
            t = toks[j]
            x = t.text if t.kind in ("punct", "ident") else ""
            if x in CLOSE and j in pairs:
                o = pairs[j]
                if x == "}" and not self.struct_brace(o):
                    return self.arm_pattern(lit, levels)
                j = (self.path_start(o - 1) if x == "}" else o) - 1
                continue
            if x in OPEN:
                if x == "{" and not self.struct_brace(j):
                    return self.arm_pattern(lit, levels)
                if x == "(" and comma and self.t(j - 1) == "!" and self.t(j - 2).endswith("matches"):
                    return True
                levels, comma = levels + 1, False
                j = (self.path_start(j - 1) if x == "{" else j) - 1
                continue
            if x == ",":
                # Skip the siblings before us to the opener of this group.
                depth, j = 0, j - 1
                while j >= 0:
                    y = toks[j].text if toks[j].kind == "punct" else ""
                    if y in CLOSE and j in pairs:
                        j = pairs[j] - 1
                        continue
                    if y in OPEN:
                        break
                    if y == ";":
                        return self.arm_pattern(lit, levels)
                    j -= 1
                comma = True
                continue
            if x in ("let", "for"):
                return True
            if x in ("=", "=>", ";", "return", "break", "in", "if", "while", "match", "else", "yield"):
                return False
            j -= 1
        return self.arm_pattern(lit, levels)

    def arm_pattern(self, lit: Lit, levels: int) -> bool:
        """At the start of a block element: a pattern when `=>` follows at this element's level."""
        toks, pairs = self.toks, self.pairs
        depth, j = levels, lit.close + 1
        while j < len(toks):
            x = toks[j].text if toks[j].kind == "punct" else ""
            if x in OPEN and j in pairs:
                j = pairs[j] + 1
                continue
            if x in CLOSE:
                depth -= 1
                if depth < 0:
                    return False
            elif depth == 0 and x in (",", ";"):
                return False
            elif depth == 0 and x == "=>":
                return True
            j += 1
        return False


# ---------------------------------------------------------------------------------------------
# Rewriting.
# ---------------------------------------------------------------------------------------------


class Rewriter:
    def __init__(self, f: File, path: str, warn):
        self.f = f
        self.path = path
        self.warn = warn

    def line(self, k: int) -> int:
        return self.f.src.count("\n", 0, self.f.toks[k].start) + 1

    def emit(self, a: int, b: int) -> str:
        """Source text from the start of token `a` to the end of token `b - 1`, rewritten."""
        f = self.f
        if a >= b:
            return ""
        out, pos, k = [], f.toks[a].start, a
        while k < b:
            lit = self.starting_at(k)
            if lit is not None and lit.close < b:
                out.append(f.src[pos:f.toks[k].start])
                out.append(self.rewrite(lit))
                pos = f.toks[lit.close].end
                k = lit.close + 1
                continue
            k += 1
        out.append(f.src[pos:f.toks[b - 1].end])
        return "".join(out)

    def starting_at(self, k: int):
        if not hasattr(self, "_starts"):
            self._starts = {lit.start: lit for lit in self.f.lits.values()}
        return self._starts.get(k)

    def items(self, lit: Lit):
        """The literal's items as (first token, end token) ranges, split at top-level commas."""
        f, out, a, k = self.f, [], lit.open + 1, lit.open + 1
        while k < lit.close:
            x = f.toks[k].text if f.toks[k].kind == "punct" else ""
            if x in OPEN and k in f.pairs:
                k = f.pairs[k] + 1
                continue
            if x == ",":
                out.append((a, k))
                a = k + 1
            k += 1
        if a < lit.close:
            out.append((a, lit.close))
        return out

    def resolve(self, lit: Lit, names: list[str], complete: bool):
        """The types `lit` can be: by its path, then by the fields given, then by the imports."""
        cands = self.f.types[lit.key]
        if len(cands) > 1:
            in_path = [c for c in cands if c.module in lit.path_prefix.split("::")]
            cands = in_path or [c for c in cands if set(names) <= {x.name for x in c.fields}]
        if len(cands) > 1 and complete:
            cands = [c for c in cands if {x.name for x in c.required} <= set(names)] or cands
        if len(cands) > 1:
            uses = [u for u in re.findall(r"\buse\s+[^;]*;", self.f.src) if re.search(r"\b%s\b" % lit.key, u)]
            imported = [c for c in cands if any(re.search(r"\b%s\b" % c.module, u) for u in uses)]
            cands = imported if len(imported) == 1 else cands
        return cands

    def rewrite(self, lit: Lit) -> str:
        f = self.f
        original = f.src[f.toks[lit.start].start:f.toks[lit.close].end]
        items = self.items(lit)
        if lit.pattern:
            return self.pattern(lit, items)
        given: list[tuple[str, str, str]] = []  # (field, value text, indent of its line)
        base = None
        notes: dict[str, list[str]] = {}  # comments written before a field, by field
        ends: dict[str, str] = {}  # a comment at the end of a field's line, by field
        last = None  # the field before the current item

        def split(trivia: str) -> list[str]:
            """The comments of `trivia`, after taking one that ends the line of `last`."""
            head, nl, rest = trivia.partition("\n")
            if nl and last is not None and head.strip():
                ends[last] = head.strip()
                return comments(rest)
            return comments(trivia)

        for a, b in items:
            before = split(f.src[f.toks[a - 1].end:f.toks[a].start])
            last = f.t(a) if f.t(a) != ".." else None
            if before and f.t(a) != "..":
                notes[f.t(a)] = before
            elif before:
                trailing = before + trailing
            if f.t(a) == "..":
                base = self.emit(a + 1, b).strip()
                continue
            if b - a >= 2 and f.toks[a].kind == "ident" and f.t(a + 1) == ":":
                given.append((f.t(a), self.emit(a + 2, b).strip(), self.indent_at(a)))
            elif b - a == 1 and f.toks[a].kind == "ident":
                given.append((f.t(a), f.t(a), self.indent_at(a)))
            else:
                self.warn(f"{self.path}:{self.line(lit.start)}: unrecognised item in {lit.key} literal; left unchanged")
                return original
        trailing = split(f.src[f.toks[lit.close - 1].end:f.toks[lit.close].start] + "\n")
        cands = self.resolve(lit, [g[0] for g in given], base is None)
        if len(cands) != 1:
            what = "no" if not cands else "several"
            self.warn(f"{self.path}:{self.line(lit.start)}: {what} {lit.key} type fits the fields given; left unchanged")
            return original
        st = cands[0]
        known = {x.name: x for x in st.fields}
        unknown = [g[0] for g in given if g[0] not in known]
        if unknown:
            self.warn(f"{self.path}:{self.line(lit.start)}: {lit.key} has no field {', '.join(unknown)}; left unchanged")
            return original
        multiline = "\n" in original or bool(notes) or bool(trailing) or bool(ends)
        indent = self.indent_at(lit.start)
        # A value over several lines moves: to `indent + 4` as an argument, to `indent` in a setter.
        arg = [(n, reindent(v, len(indent) + 4 - len(i)) if multiline else v) for n, v, i in given]
        given = [(n, reindent(v, len(indent) - len(i)) if multiline else v, i) for n, v, i in given]
        values = dict(arg)
        if st.variant_of is not None:
            if base is not None:
                self.warn(f"{self.path}:{self.line(lit.start)}: `..` in a {lit.key} literal; left unchanged")
                return original
            missing = [x.name for x in st.fields if not x.optional and x.name not in values]
            if missing:
                self.warn(f"{self.path}:{self.line(lit.start)}: {lit.key} literal lacks {', '.join(missing)}; left unchanged")
                return original
            args = [(values.get(x.name, "None") + (NOTE + " " + ends[x.name] if x.name in ends else ""),
                     notes.get(x.name, [])) for x in st.fields]
            head = f"{lit.path_prefix}{st.variant_of}::{st.ctor}"
            return head + self.call(args, multiline, indent, trailing)
        type_path = lit.path_prefix + st.name
        setters: list[tuple[str, str]] = []
        if base is None:
            missing = [x.name for x in st.required if x.name not in values]
            if missing:
                self.warn(f"{self.path}:{self.line(lit.start)}: {lit.key} literal lacks {', '.join(missing)}; left unchanged")
                return original
            args = []
            for x in st.required:
                v = values[x.name]
                if x.name in st.into_params and v.endswith(".into()"):
                    v = v[: -len(".into()")]
                args.append((v + (NOTE + " " + ends[x.name] if x.name in ends else ""), notes.get(x.name, [])))
            setters = [(n, v) for n, v, _ in given if known[n].optional and v != "None"]
            dropped = [n for n, v, _ in given if known[n].optional and v == "None"]
            trailing = [c for n in dropped for c in notes.get(n, []) + [ends.get(n, "")] if c] + trailing
            head = type_path + "::new" + self.call(args, multiline, indent, trailing)
        else:
            if re.fullmatch(r"(Default::default|%s::default)\(\)" % re.escape(type_path), base) or \
                    re.fullmatch(r"<%s as Default>::default\(\)" % re.escape(type_path), base):
                if not st.has_default:
                    self.warn(f"{self.path}:{self.line(lit.start)}: {lit.key} has no Default; left unchanged")
                    return original
                head = type_path + "::default()"
            elif re.fullmatch(r"[A-Za-z_][\w:]*(\.\w+(\(\))?)*|[A-Za-z_][\w:]*\([^()]*\)", base):
                head = base
            else:
                head = f"({base})"
            setters = [(n, v) for n, v, _ in given]
        if base is not None and trailing:
            setters.append(("", ""))  # the trailing comments go after the last setter
        if not setters:
            return head
        if multiline:
            out = head
            for n, v in setters:
                before = (notes.get(n, []) + [ends[n]] if n in ends else notes.get(n, [])) if n else trailing
                out += "".join(f"\n{indent}{c}" for c in before)
                out += f"\n{indent}.with_{n}({v})" if n else ""
            return out
        return head + "".join(f".with_{n}({v})" for n, v in setters)

    def call(self, args: list[tuple[str, list[str]]], multiline: bool, indent: str,
             trailing: list[str] = ()) -> str:
        if not args and not trailing:
            return "()"
        if multiline:
            inner = indent + "    "
            out = "(\n"
            for value, notes in args:
                code, _, note = value.partition(NOTE)
                out += "".join(f"{inner}{c}\n" for c in notes) + f"{inner}{code},{note}\n"
            out += "".join(f"{inner}{c}\n" for c in trailing)
            return out + indent + ")"
        return "(" + ", ".join(v for v, _ in args) + ")"

    def indent_at(self, k: int) -> str:
        src = self.f.src
        ls = src.rfind("\n", 0, self.f.toks[k].start) + 1
        return re.match(r"[ \t]*", src[ls:]).group(0)

    def pattern(self, lit: Lit, items) -> str:
        f = self.f
        head = f.src[f.toks[lit.start].start:f.toks[lit.open].end]
        if any(f.t(a) == ".." for a, _ in items):
            return head + self.inner(lit) + "}"
        if not items:
            return head + " .. }"
        body = self.inner(lit)  # text between `{` and `}`, rewritten
        stripped = body.rstrip()
        trailing = body[len(stripped):]
        if "\n" in body:
            m = re.match(r"\s*", body)
            ws = m.group(0) if "\n" in m.group(0) else "\n" + self.indent_at(lit.start) + "    "
            sep = "" if stripped.endswith(",") else ","
            return head + stripped + sep + ws + ".." + trailing + "}"
        sep = "" if stripped.endswith(",") else ","
        return head + stripped + sep + " .." + (trailing or " ") + "}"

    def inner(self, lit: Lit) -> str:
        f = self.f
        if lit.open + 1 == lit.close:
            return f.src[f.toks[lit.open].end:f.toks[lit.close].start]
        return (f.src[f.toks[lit.open].end:f.toks[lit.open + 1].start]
                + self.emit(lit.open + 1, lit.close)
                + f.src[f.toks[lit.close - 1].end:f.toks[lit.close].start])


NOTE = "\0"  # separates an argument from the comment that ends its line


def comments(trivia: str) -> list[str]:
    """The comments in `trivia` (whitespace and comments between two tokens), one per line."""
    return [line.strip() for line in trivia.split("\n") if line.strip()]


def reindent(text: str, delta: int) -> str:
    """Moves every line of `text` but the first `delta` columns right (left when negative)."""
    if delta == 0 or "\n" not in text:
        return text
    first, *rest = text.split("\n")
    moved = []
    for line in rest:
        if delta > 0:
            moved.append(" " * delta + line if line.strip() else line)
        else:
            lead = len(line) - len(line.lstrip(" "))
            moved.append(line[min(lead, -delta):])
    return "\n".join([first, *moved])


def rewrite_code(src: str, types, path: str, warn) -> str:
    f = File(src, types)
    if not f.lits:
        return src
    r = Rewriter(f, path, warn)
    if not f.toks:
        return src
    return src[: f.toks[0].start] + r.emit(0, len(f.toks)) + src[f.toks[-1].end:]


# ---------------------------------------------------------------------------------------------
# Embedded code: doc comments and Markdown.
# ---------------------------------------------------------------------------------------------

DOC_LINE = re.compile(r"^([ \t]*)(//[/!])(.*)$")
RUST_INFO = {"", "rust", "ignore", "no_run", "should_panic", "compile_fail", "edition2018",
             "edition2021", "edition2024", "test_harness"}


def rewrite_fences(text: str, types, path: str, warn, markdown: bool) -> str:
    """Rewrites the Rust code blocks of a Markdown text (a doc comment's text or a .md file)."""
    lines = text.split("\n")
    out, k = [], 0
    while k < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*(.*)$", lines[k])
        if not m:
            out.append(lines[k])
            k += 1
            continue
        fence, info = m.group(2), m.group(3).strip()
        tags = {t.strip() for t in info.split(",")}
        rust = ("rust" in tags) if markdown else tags <= RUST_INFO or "rust" in tags
        j = k + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[:3]):
            j += 1
        out.append(lines[k])
        block = "\n".join(lines[k + 1:j])
        out.extend((rewrite_code(block, types, path, warn) if rust else block).split("\n")
                   if j > k + 1 else [])
        if j < len(lines):
            out.append(lines[j])
        k = j + 1
    return "\n".join(out)


def rewrite_doc_comments(src: str, types, path: str, warn) -> str:
    lines = src.split("\n")
    out, k = [], 0
    while k < len(lines):
        m = DOC_LINE.match(lines[k])
        if not m:
            out.append(lines[k])
            k += 1
            continue
        indent, marker = m.group(1), m.group(2)
        j, body = k, []
        while j < len(lines):
            mm = DOC_LINE.match(lines[j])
            if not mm or mm.group(1) != indent or mm.group(2) != marker:
                break
            rest = mm.group(3)
            body.append(rest[1:] if rest.startswith(" ") else rest)
            j += 1
        text = "\n".join(body)
        if "```" in text:
            new = rewrite_fences(text, types, path, warn, markdown=False)
            if new != text:
                for line in new.split("\n"):
                    out.append(f"{indent}{marker} {line}" if line else f"{indent}{marker}")
                k = j
                continue
        out.extend(lines[k:j])
        k = j
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------------------------


def default_paths(root: str) -> list[str]:
    paths = []
    for d in ("tests", "benches", "examples", "fuzz", "conformance", "src"):
        full = os.path.join(root, d)
        for dirpath, dirs, files in os.walk(full):
            dirs[:] = [x for x in dirs if x not in ("target", "corpus", "artifacts")]
            if d == "src" and os.path.relpath(dirpath, full).split(os.sep)[0] == "messages":
                continue
            paths += [os.path.join(dirpath, x) for x in files if x.endswith((".rs", ".md"))]
    for x in os.listdir(root):
        if x.endswith(".md"):
            paths.append(os.path.join(root, x))
    return sorted(set(paths))


def in_binary(rel: str, root: str) -> bool:
    """Whether `rel` (under src/) belongs to the binary crate: src/main.rs, src/bin/, and the modules
    that src/main.rs declares (`mod cli;` is src/cli.rs or src/cli/)."""
    parts = rel.split(os.sep)
    if rel == os.path.join("src", "main.rs") or parts[1:2] == ["bin"]:
        return True
    main = os.path.join(root, "src", "main.rs")
    if not os.path.exists(main):
        return False
    mods = re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", open(main).read(), re.M)
    return len(parts) > 1 and parts[1].removesuffix(".rs") in mods


def process(path: str, root: str, types, warn) -> str:
    src = open(path, encoding="utf-8").read()
    rel = os.path.relpath(path, root)
    if path.endswith(".md"):
        return rewrite_fences(src, types, rel, warn, markdown=True)
    library = rel.split(os.sep)[0] == "src" and not in_binary(rel, root)
    new = src if library else rewrite_code(src, types, rel, warn)
    return rewrite_doc_comments(new, types, rel, warn)


SELF_TEST = [
    # (input, expected output); every expected output must also be left as it is (idempotence).
    ("let k = KillDriver { driver_id: id.clone() };",
     "let k = KillDriver::new(id.clone());"),
    ("let h = messages::deploy::Heartbeat { worker_id, worker };",
     "let h = messages::deploy::Heartbeat::new(worker_id, worker);"),
    ("let e = ExecutorStateChanged { app_id: a, exec_id: 1, state, message: None, exit_status: Some(0) };",
     "let e = ExecutorStateChanged::new(a, 1, state).with_exit_status(Some(0));"),
    ("let m = RequestMasterState {};", "let m = RequestMasterState::new();"),
    ("let m = RequestMasterState { ..Default::default() };", "let m = RequestMasterState::default();"),
    ("let e = ExecutorStateChanged { message: Some(m), ..base.clone() };",
     "let e = base.clone().with_message(Some(m));"),
    ("let a = Addr { host: \"h\".into(), port: 1 };", "let a = Addr::new(\"h\", 1);"),
    ("let w = WorkerDecommissioning { id: i, worker_ref: EndpointRef { address: None, name: n } };",
     "let w = WorkerDecommissioning::new(i, EndpointRef::new(n));"),
    ("let r = ExecutorLossReason::ExecutorProcessLost { reason: r, caused_by_app: false };",
     "let r = ExecutorLossReason::executor_process_lost(r, None, false);"),
    ("let k = coarse::KillExecutors { executor_ids: v };", "let k = coarse::KillExecutors::new(v);"),
    ("match m { D::KillDriver(KillDriver { driver_id }) | D::X(Heartbeat { worker: EndpointRef { name, .. }, worker_id }) if ok => {} }",
     "match m { D::KillDriver(KillDriver { driver_id, .. }) | D::X(Heartbeat { worker: EndpointRef { name, .. }, worker_id, .. }) if ok => {} }"),
    ("match m { (A, RequestReadyz {}) => RequestReadyz {}, _ => f(KillDriver { driver_id }) }",
     "match m { (A, RequestReadyz { .. }) => RequestReadyz::new(), _ => f(KillDriver::new(driver_id)) }"),
    ("if let Some(KillDriver { driver_id }) = x {}", "if let Some(KillDriver { driver_id, .. }) = x {}"),
    ("assert!(matches!(m, D::KillDriver(KillDriver { driver_id }) if driver_id == \"x\"));",
     "assert!(matches!(m, D::KillDriver(KillDriver { driver_id, .. }) if driver_id == \"x\"));"),
    ("for KillDriver { driver_id } in all {}", "for KillDriver { driver_id, .. } in all {}"),
    ("let f = |KillDriver { driver_id }| driver_id;", "let f = |KillDriver { driver_id, .. }| driver_id;"),
    ("let v = vec![KillDriver {\n    // the id\n    driver_id: b, // b\n}];",
     "let v = vec![KillDriver::new(\n    // the id\n    b, // b\n)];"),
    ("struct KillDriver { driver_id: String }\nlet k = KillDriver { driver_id: s };",
     "struct KillDriver { driver_id: String }\nlet k = KillDriver { driver_id: s };"),
    ("fn f() -> KillDriver { g() }\nimpl T for KillDriver { }", "fn f() -> KillDriver { g() }\nimpl T for KillDriver { }"),
    ("/// ```\n/// let k = KillDriver { driver_id: x };\n/// ```\nfn f() {}",
     "/// ```\n/// let k = KillDriver::new(x);\n/// ```\nfn f() {}"),
]


def self_test(root: str) -> int:
    types = load_types(root)
    failed = 0
    for given, want in SELF_TEST:
        got = rewrite_doc_comments(rewrite_code(given, types, "case", lambda w: None), types, "case",
                                   lambda w: None)
        again = rewrite_doc_comments(rewrite_code(want, types, "case", lambda w: None), types, "case",
                                     lambda w: None)
        if got != want or again != want:
            failed += 1
            print(f"FAILED\n  given: {given}\n  want:  {want}\n  got:   {got}\n  again: {again}")
    print(f"{len(SELF_TEST) - failed} of {len(SELF_TEST)} cases pass")
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", help="files or directories (default: see the docstring)")
    ap.add_argument("--root", default=".", help="repository root (default: .)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    ap.add_argument("--diff", action="store_true", help="print a unified diff; change nothing")
    ap.add_argument("--self-test", action="store_true", help="run the built-in cases and exit")
    ap.add_argument("--no-fmt", action="store_true", help="do not run rustfmt on rewritten .rs files")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        return self_test(root)
    types = load_types(root)
    warnings: list[str] = []
    paths = []
    for p in args.paths or default_paths(root):
        if os.path.isdir(p):
            for dirpath, dirs, files in os.walk(p):
                dirs[:] = [x for x in dirs if x != "target"]
                paths += [os.path.join(dirpath, x) for x in files if x.endswith((".rs", ".md"))]
        else:
            paths.append(p)
    changed = []
    for path in sorted(set(paths)):
        src = open(path, encoding="utf-8").read()
        new = process(path, root, types, warnings.append)
        if new == src:
            continue
        changed.append(path)
        rel = os.path.relpath(path, root)
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(
                src.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}"))
        elif args.check:
            print(rel)
        else:
            with open(path, "w", encoding="utf-8") as out:
                out.write(new)
    for w in warnings:
        print(w, file=sys.stderr)
    if not (args.check or args.diff) and not args.no_fmt:
        rs = [p for p in changed if p.endswith(".rs")]
        if rs:
            r = subprocess.run(["rustfmt", "--edition", "2021", *rs])
            if r.returncode != 0:
                print("warning: rustfmt failed on some rewritten files", file=sys.stderr)
    if not args.check and not args.diff:
        print(f"{len(changed)} file(s) rewritten", file=sys.stderr)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
