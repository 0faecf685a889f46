"""A reader and runner for STF files (p4c's "simple test framework" packet tests) on softnic.

The format is the one p4c's BMv2 test driver (``backends/bmv2/run-bmv2-test.py``) reads; this is
an independent reader of it. One command per line, ``#`` starts a comment:

``packet <port> <hex>``
    send the bytes (whitespace inside the hex is ignored) into ``port``.
``expect <port> <hex>``
    a packet must leave on ``port``; expectations of one port are matched in order against
    the packets that port emitted over the whole run. ``*`` in the hex matches any nibble; a
    trailing ``$`` also requires the packet to end there (without it, extra trailing bytes are
    allowed, as in p4c). ``expect <port>`` with no bytes allows any packets on that port.
    Every packet on a port with no (or too few) expectations fails the run.
``add <table> [priority] <key>:<value> ... <action>(<param>:<value>, ...)``
    a table entry. Key values: integers (decimal, ``0x``, ``0b``, ``0o``), ``v&&&m`` (ternary),
    ``v/len`` (lpm), ``lo->hi`` (range), hex or binary with ``*`` digits (a ternary mask, or an
    lpm prefix of the digits before the first ``*``), dotted IPv4 and colon MAC addresses. A key
    field left out is a wildcard (ternary, lpm, range, optional) or 0 (exact), as in p4c's
    driver. The priority is the STF one: a larger number wins (p4c's driver gives BMv2's CLI
    ``10000 - priority``, where the smaller number wins), which is P4Runtime's sense too.
``setdefault <table> <action>(<param>:<value>, ...)``
    the table's default action.
``mirroring_add <session> <port>``
    a clone session sending to ``port``.
``mc_mgrp_create <group>``, ``mc_node_create <rid> <port>...``, ``mc_node_associate <group> <node>``
    multicast groups as BMv2's CLI builds them; node handles count from 0 in creation order.
``wait``
    nothing to do: softnic processes every packet to completion before the next command.

Tables, key fields and actions are named by their control-plane names (the BMv2 JSON's ``name``,
as in P4Info, e.g. ``MyIngress.ipv4_lpm``) or by a suffix of them that starts after a ``.``
(``ipv4_lpm``) when that suffix is unambiguous. An unknown command is an error, never skipped.

The engine is a parameter (``engine=``: a callable returning an unloaded switch, by default
softnic's Python engine :class:`~softnic.runtime.switch.Switch`); the runner only uses the
engine API, so the xdp engine (:class:`~softnic.runtime.xdp.engine.XdpSwitch`) runs the same
files. Besides the packets, a run fails when the engine counted a packet it could not process
(:func:`engine_problems`).

Command line: ``python -m softnic.tests.stf.stf [--xdp] PROG.p4 PROG.stf`` prints one line per
expectation and exits 0 when all pass.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.runtime.diag import SwitchStats
from softnic.runtime.switch import Switch

# The xdp program's counters (softnic.compiler.xdp.abi.STATS) of packets it dropped where the
# Python engine would not have: any of them fails a run. (STAT_NO_PORT counts frames from
# interfaces, which an STF run never sends.)
XDP_PROBLEM_STATS = ("STAT_TOO_BIG", "STAT_MULTICAST", "STAT_REWRITE_FAILED",
                     "STAT_ENGINE_ERROR", "STAT_DIGEST_LOST", "STAT_PACKET_IN_LOST")


class StfError(Exception):
    """A malformed STF line, or one that names nothing in the program."""

    def __init__(self, lineno: int, message: str) -> None:
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


@dataclass
class Command:
    lineno: int
    verb: str
    rest: str


@dataclass
class Expectation:
    lineno: int
    port: int
    pattern: str  # upper-case nibbles and '*', without the '$'
    exact_length: bool


@dataclass
class Check:
    """One verdict line: an expectation met or not, or an unexpected packet."""

    ok: bool
    text: str


@dataclass
class StfResult:
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks)

    def failures(self) -> list[str]:
        return [c.text for c in self.checks if not c.ok]

    def report(self) -> str:
        return "\n".join(("PASS " if c.ok else "FAIL ") + c.text for c in self.checks)


def parse_stf(text: str) -> list[Command]:
    """The commands of an STF text, comments and blank lines left out."""
    cmds: list[Command] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        verb, _, rest = line.partition(" ")
        cmds.append(Command(lineno, verb.strip(), rest.strip()))
    return cmds


def _hex_bytes(lineno: int, text: str) -> bytes:
    digits = "".join(text.split())
    if len(digits) % 2 or not re.fullmatch(r"[0-9A-Fa-f]*", digits):
        raise StfError(lineno, f"packet data must be an even number of hex digits: {text!r}")
    return bytes.fromhex(digits)


def _expectation(lineno: int, port: int, text: str) -> Expectation:
    pat = "".join(text.split()).upper()
    exact = pat.endswith("$")
    if exact:
        pat = pat[:-1]
    if not re.fullmatch(r"[0-9A-F*]*", pat):
        raise StfError(lineno, f"expected packet must be hex digits or '*': {text!r}")
    return Expectation(lineno, port, pat, exact)


def match_packet(exp: Expectation, data: bytes) -> str | None:
    """None when ``data`` meets ``exp``, else why not."""
    got = data.hex().upper()
    if len(got) < len(exp.pattern):
        return f"packet too short: {len(data)} bytes, expected {(len(exp.pattern) + 1) // 2}"
    if exp.exact_length and len(got) > len(exp.pattern):
        return f"packet too long: {len(data)} bytes, expected {len(exp.pattern) // 2} ('$')"
    for i, (want, have) in enumerate(zip(exp.pattern, got, strict=False)):
        if want != "*" and want != have:
            return f"differs at byte {i // 2} (nibble {i}): expected {want}, got {have}"
    return None


def _int(lineno: int, text: str) -> int:
    t = text.strip()
    try:
        if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", t):
            return int.from_bytes(bytes(int(p) for p in t.split(".")), "big")
        if re.fullmatch(r"[0-9A-Fa-f]{1,2}(:[0-9A-Fa-f]{1,2}){5}", t):
            return int.from_bytes(bytes(int(p, 16) for p in t.split(":")), "big")
        return int(t, 0)
    except ValueError:
        raise StfError(lineno, f"not a number: {text!r}") from None


_RADIX = {"0x": (16, 4), "0b": (2, 1), "0o": (8, 3)}


def _wild(text: str) -> tuple[int, int, int, int] | None:
    """For ``0x12**`` style values: (value, mask, number of leading fixed bits, width)."""
    t = text.strip().lower()
    spec = _RADIX.get(t[:2])
    if spec is None or "*" not in t:
        return None
    base, bits = spec
    digits = t[2:]
    value = mask = 0
    for d in digits:
        value <<= bits
        mask <<= bits
        if d != "*":
            value |= int(d, base)
            mask |= (1 << bits) - 1
    lead = len(digits.split("*", 1)[0]) * bits
    return value, mask, lead, len(digits) * bits


def engine_problems(sw: Any) -> str:
    """What the engine counted as packets it failed on ('' when none): the Python engine's
    engine errors and assert failures, or the xdp program's :data:`XDP_PROBLEM_STATS`."""
    st = sw.stats
    if isinstance(st, SwitchStats):
        if st.engine_errors or st.assert_failures:
            return (f"{st.engine_errors} engine error(s), {st.assert_failures} assert "
                    f"failure(s): {st.last_error}")
        return ""
    counts = st()  # XdpSwitch.stats(): name -> count
    return ", ".join(f"{counts[k]} {k}" for k in XDP_PROBLEM_STATS if counts.get(k))


class StfRunner:
    """Runs STF commands on one switch loaded with a BMv2 JSON; ``engine()`` makes the switch
    (softnic's Python engine by default)."""

    def __init__(self, bmv2_json: dict[str, Any], engine: Callable[[], Any] = Switch) -> None:
        self.json = bmv2_json
        self.sw = engine()
        self.sw.load_json(bmv2_json)
        self.tables: dict[str, dict[str, Any]] = {}
        for pipe in bmv2_json.get("pipelines", []):
            for t in pipe.get("tables", []):
                self.tables[t["name"]] = t
        self.actions: dict[int, dict[str, Any]] = {a["id"]: a for a in bmv2_json.get("actions", [])}
        self.field_width: dict[tuple[str, str], int] = {}
        types = {ht["name"]: ht for ht in bmv2_json.get("header_types", [])}
        for h in bmv2_json.get("headers", []):
            for f in types.get(h["header_type"], {}).get("fields", []):
                self.field_width[(h["name"], f[0])] = f[1]
        self.expectations: list[Expectation] = []
        self.any_port: set[int] = set()
        self.named_ports: set[int] = set()  # ports some packet/expect line names
        self.outputs: dict[int, list[tuple[int, bytes]]] = {}  # port -> (input line, bytes)
        self.mc_nodes: list[tuple[int, list[int]]] = []  # handle -> (rid, ports)
        self.mc_groups: dict[int, list[int]] = {}  # group -> node handles

    # ------------------------------------------------------------------ names
    @staticmethod
    def _by_name(lineno: int, what: str, name: str, names: Sequence[str]) -> str:
        if name in names:
            return name
        cands = [n for n in names if n.endswith("." + name)]
        if len(cands) == 1:
            return cands[0]
        if cands:
            raise StfError(lineno, f"{what} '{name}' is ambiguous: {', '.join(sorted(cands))}")
        raise StfError(lineno, f"no {what} '{name}' (known: {', '.join(sorted(names))})")

    def _table(self, lineno: int, name: str) -> dict[str, Any]:
        return self.tables[self._by_name(lineno, "table", name, list(self.tables))]

    def _action(self, lineno: int, table: dict[str, Any], text: str) -> ActionCall:
        m = re.fullmatch(r"\s*([A-Za-z_$][\w.$]*)\s*\((.*)\)\s*", text, re.S)
        if m is None:
            raise StfError(lineno, f"expected <action>(<param>:<value>, ...), got {text!r}")
        acts = {self.actions[i]["name"]: self.actions[i] for i in table["action_ids"]}
        aname = self._by_name(lineno, f"action of table {table['name']}", m.group(1), list(acts))
        params = [p["name"] for p in acts[aname].get("runtime_data", [])]
        given: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in m.group(2).split(","))):
            k, sep, v = part.partition(":")
            k = k.strip()
            if not sep or k not in params:
                raise StfError(lineno, f"action {aname} has no parameter '{k}' (has {params})")
            given[k] = _int(lineno, v)
        missing = [p for p in params if p not in given]
        if missing:
            raise StfError(lineno, f"action {aname}: no value for {', '.join(missing)}")
        return ActionCall(aname, [given[p] for p in params])

    def _key_width(self, k: dict[str, Any]) -> int | None:
        tgt = k.get("target")
        if isinstance(tgt, list) and len(tgt) == 2:
            return self.field_width.get((tgt[0], tgt[1]))
        return None

    def _key_value(self, lineno: int, k: dict[str, Any], text: str) -> MatchKey | None:
        kind = k["match_type"]
        width = self._key_width(k)
        full = None if width is None else (1 << width) - 1

        def need_width() -> int:
            if full is None:
                raise StfError(lineno, f"key {k['name']}: width unknown, give the mask/length")
            return full

        wild = _wild(text)
        if kind == "ternary":
            if "&&&" in text:
                v, m = text.split("&&&", 1)
                return MatchKey(_int(lineno, v), mask=_int(lineno, m))
            if wild is not None:
                return MatchKey(wild[0], mask=wild[1])
            return MatchKey(_int(lineno, text), mask=need_width())
        if kind == "lpm":
            if "/" in text:
                v, n = text.split("/", 1)
                return MatchKey(_int(lineno, v), prefix_len=_int(lineno, n))
            if wild is not None:
                value, _mask, lead, digits_w = wild
                w = width if width is not None else digits_w
                return MatchKey(value << (w - digits_w) if w > digits_w else value,
                                prefix_len=lead)
            return MatchKey(_int(lineno, text), prefix_len=need_width().bit_length())
        if kind == "range":
            if "->" not in text:
                v = _int(lineno, text)
                return MatchKey(v, high=v)
            lo, hi = text.split("->", 1)
            return MatchKey(_int(lineno, lo), high=_int(lineno, hi))
        if kind in ("exact", "optional", "valid"):
            if wild is not None:
                raise StfError(lineno, f"key {k['name']} is {kind}: no '*' digits")
            if text.strip().lower() in ("true", "false") and kind == "valid":
                return MatchKey(int(text.strip().lower() == "true"))
            return MatchKey(_int(lineno, text))
        raise StfError(lineno, f"key {k['name']}: match kind {kind} unsupported")

    # ------------------------------------------------------------------ commands
    def _add(self, c: Command) -> None:
        m = re.fullmatch(r"(\S+)\s+(.*?)\s*([A-Za-z_$][\w.$]*\s*\(.*\))\s*(=.*)?", c.rest, re.S)
        if m is None:
            raise StfError(c.lineno, f"expected add <table> [priority] <key>:<value> ... "
                           f"<action>(...), got {c.rest!r}")
        table = self._table(c.lineno, m.group(1))
        words = m.group(2).split()
        priority = 0
        if words and re.fullmatch(r"\d+", words[0]):
            priority = int(words.pop(0))
        keys = table["key"]
        names = [k["name"] for k in keys]
        values: dict[int, MatchKey | None] = {}
        for w in words:
            kname, sep, v = w.partition(":")
            if not sep:
                raise StfError(c.lineno, f"key must be <field>:<value>, got {w!r}")
            # p4c's STF writes a stack element's index as ``$N`` (``extra$0.h``).
            kname = re.sub(r"\$(\d+)", r"[\1]", kname)
            alias = {n: n for n in names}
            for k in keys:  # the JSON target ("hdr_instance.field") names the field too
                tgt = k.get("target")
                if isinstance(tgt, list):
                    alias.setdefault(".".join(str(t) for t in tgt), k["name"])
            hits = {alias[n] for n in alias if n == kname or n.endswith("." + kname)}
            if kname in alias:
                hits = {alias[kname]}
            full = (hits.pop() if len(hits) == 1 else
                    self._by_name(c.lineno, f"key field of {table['name']}", kname, names))
            idx = names.index(full)
            values[idx] = self._key_value(c.lineno, keys[idx], v)
        key: list[MatchKey | None] = []
        for i, k in enumerate(keys):
            if i in values:
                key.append(values[i])
            elif k["match_type"] in ("exact", "valid"):
                key.append(MatchKey(0))
            else:
                key.append(None)
        action = self._action(c.lineno, table, m.group(3))
        self.sw.table_add(table["name"], TableEntry(key, action, priority))

    def _setdefault(self, c: Command) -> None:
        tname, _, rest = c.rest.partition(" ")
        table = self._table(c.lineno, tname)
        self.sw.table_set_default(table["name"], self._action(c.lineno, table, rest))

    def _multicast(self, c: Command) -> None:
        nums = [_int(c.lineno, w) for w in c.rest.split()]
        if c.verb == "mc_mgrp_create" and len(nums) == 1:
            self.mc_groups[nums[0]] = []
        elif c.verb == "mc_node_create" and len(nums) >= 2:
            self.mc_nodes.append((nums[0], nums[1:]))
            return
        elif c.verb == "mc_node_associate" and len(nums) == 2:
            group, node = nums
            if group not in self.mc_groups or not 0 <= node < len(self.mc_nodes):
                raise StfError(c.lineno, f"no multicast group {group} or node {node}")
            self.mc_groups[group].append(node)
        else:
            raise StfError(c.lineno, f"malformed {c.verb} command")
        for group, nodes in self.mc_groups.items():
            replicas = [(port, self.mc_nodes[n][0]) for n in nodes for port in self.mc_nodes[n][1]]
            self.sw.mc_group_set(group, replicas)

    def execute(self, c: Command) -> None:
        if c.verb == "packet":
            port, _, data = c.rest.partition(" ")
            p = _int(c.lineno, port)
            self.named_ports.add(p)
            for out_port, out in self.sw.process_packet(p, _hex_bytes(c.lineno, data)):
                self.outputs.setdefault(out_port, []).append((c.lineno, out))
        elif c.verb == "expect":
            port, _, data = c.rest.partition(" ")
            p = _int(c.lineno, port)
            self.named_ports.add(p)
            if data.strip():
                self.expectations.append(_expectation(c.lineno, p, data))
            else:
                self.any_port.add(p)
        elif c.verb == "add":
            self._add(c)
        elif c.verb == "setdefault":
            self._setdefault(c)
        elif c.verb == "mirroring_add":
            parts = c.rest.split()
            if len(parts) != 2:
                raise StfError(c.lineno, "expected mirroring_add <session> <port>")
            self.sw.clone_session_set(_int(c.lineno, parts[0]), [(_int(c.lineno, parts[1]), 0)])
        elif c.verb in ("mc_mgrp_create", "mc_node_create", "mc_node_associate"):
            self._multicast(c)
        elif c.verb == "wait":
            pass
        else:
            raise StfError(c.lineno, f"unsupported STF command '{c.verb}'")

    def verdict(self) -> StfResult:
        """Every expectation against the packets of its port, in order, then the leftovers."""
        res = StfResult()
        by_port: dict[int, list[Expectation]] = {}
        for e in self.expectations:
            by_port.setdefault(e.port, []).append(e)
        for port in sorted(set(by_port) | set(self.outputs)):
            exps = by_port.get(port, [])
            outs = self.outputs.get(port, [])
            for i, e in enumerate(exps):
                where = f"line {e.lineno}: port {port} packet #{i + 1}"
                if i >= len(outs):
                    res.checks.append(Check(False, f"{where}: not received "
                                            f"({len(outs)} packet(s) left on port {port})"))
                    continue
                why = match_packet(e, outs[i][1])
                got = outs[i][1].hex().upper()
                res.checks.append(Check(why is None, f"{where}" + ("" if why is None else
                                        f": {why}\n     expected {e.pattern}"
                                        f"{'$' if e.exact_length else ''}\n     got      {got}")))
            if port in self.any_port or port not in self.named_ports:
                # p4c's STF runner attaches an interface only to the ports that a ``packet``
                # or ``expect`` line names; what a program sends elsewhere is lost, not checked.
                continue
            for j in range(len(exps), len(outs)):
                res.checks.append(Check(False, f"port {port}: unexpected packet #{j + 1} (sent "
                                        f"by line {outs[j][0]}): {outs[j][1].hex().upper()}"))
        trouble = engine_problems(self.sw)
        if trouble:
            res.checks.append(Check(False, f"engine: {trouble}"))
        return res


def run_stf(bmv2_json: dict[str, Any], stf_text: str,
            engine: Callable[[], Any] = Switch) -> StfResult:
    """Run an STF text on a fresh switch (made by ``engine()``) loaded with ``bmv2_json``."""
    runner = StfRunner(bmv2_json, engine)
    try:
        for c in parse_stf(stf_text):
            runner.execute(c)
        return runner.verdict()
    finally:
        close = getattr(runner.sw, "close", None)
        if close is not None:
            close()


def run_files(p4_path: str | Path, stf_path: str | Path,
              engine: Callable[[], Any] = Switch) -> StfResult:
    """Compile ``p4_path`` with softnic's front end and run ``stf_path`` on the engine."""
    from softnic.compiler.compile import compile_file

    bmv2_json, _ = compile_file(p4_path)
    return run_stf(bmv2_json, Path(stf_path).read_text(), engine)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    engine: Callable[[], Any] = Switch
    if args[:1] == ["--xdp"]:
        from softnic.runtime.xdp.engine import XdpSwitch

        engine = XdpSwitch
        args = args[1:]
    if len(args) != 2:
        print("usage: python -m softnic.tests.stf.stf [--xdp] PROG.p4 PROG.stf",
              file=sys.stderr)
        return 2
    from softnic.compiler.diagnostics import CompileError
    from softnic.runtime.api import SwitchError

    try:
        res = run_files(args[0], args[1], engine)
    except CompileError as e:
        print(f"FAIL compile: {e}")
        return 1
    except SwitchError as e:
        print(f"FAIL engine: {type(e).__name__}: {e}")
        return 1
    except StfError as e:
        print(f"FAIL stf: {e}")
        return 1
    print(res.report())
    print("PASS" if res.passed else f"FAIL ({len(res.failures())} failure(s))")
    return 0 if res.passed else 1


if __name__ == "__main__":
    sys.exit(main())
