"""Compile a loaded :class:`Program` into Python functions, once, at load time.

Every parser state, action, conditional, table key, checksum and the deparser becomes a small
specialised Python function whose source is generated from the JSON and ``exec``-ed once. The
per-packet path therefore never looks at a JSON dict: field accesses are ``F[<const>]``, header
extraction is one ``int.from_bytes`` plus shifts and masks, deparsing one ``to_bytes`` per header.

The parser is generated twice: a fast version and one that reports each step to a trace
callback (``T``), so tracing costs nothing when it is off.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import ExprGen, Hdr, hexint
from softnic.runtime.externs import HASH_ALGOS, CounterArray, MeterArray, RegisterArray
from softnic.runtime.loader import HeaderInfo, Program
from softnic.runtime.packet import AssertFailed, ParserError

DROP_PORT = 511


def _lookahead(b: bytes, n: int, pos: int, off: int, w: int) -> int:
    start = pos * 8 + off
    end = start + w
    if end > n * 8:
        raise ParserError(1, pos)  # PacketTooShort; the code is patched per program below
    b0 = start >> 3
    b1 = (end + 7) >> 3
    v = int.from_bytes(b[b0:b1], "big")
    return (v >> (b1 * 8 - end)) & ((1 << w) - 1)


def _reg_get(reg: RegisterArray, i: int) -> int:
    return reg.cells[i] if 0 <= i < reg.size else 0


def _log_format(fmt: str, args: list[int]) -> str:
    parts = fmt.split("{}")
    out = [parts[0]]
    for i, p in enumerate(parts[1:]):
        out.append(str(args[i]) if i < len(args) else "{}")
        out.append(p)
    return "".join(out)


def _push(f: list[int], bases: tuple[int, ...], nf: int, nx: int, count: int) -> None:
    size = len(bases)
    for i in range(size - 1, -1, -1):
        b = bases[i]
        if i >= count:
            s = bases[i - count]
            f[b:b + nf + 1] = f[s:s + nf + 1]
        else:
            f[b + nf] = 0
    f[nx] = min(size, f[nx] + count)


def _pop(f: list[int], bases: tuple[int, ...], nf: int, nx: int, count: int) -> None:
    size = len(bases)
    for i in range(size):
        b = bases[i]
        if i + count < size:
            s = bases[i + count]
            f[b:b + nf + 1] = f[s:s + nf + 1]
        else:
            f[b + nf] = 0
    f[nx] = max(0, f[nx] - count)


# Parser loop bound. BMv2's parser runs states until one transitions to accept/reject, with no
# bound, so ``state start { transition start; }`` hangs its packet thread forever. softnic must
# not hang (the switch lock is held while a packet runs, which would block P4Runtime too), so the
# states that lie on a cycle of the parse graph count their visits per packet, and when a packet
# of n bytes has visited them more than PARSER_STEPS_PER_BYTE * (number of looping states) * n +
# PARSER_STEPS_BASE times, parsing ends with error.ParserTimeout (the core.p4 error meant for
# this): the packet continues to ingress with standard_metadata.parser_error set, like any other
# parser error on BMv2. A loop that extracts at least one byte per round ends long before that
# with PacketTooShort, so only loops that consume nothing can reach the bound.
PARSER_STEPS_PER_BYTE = 1
PARSER_STEPS_BASE = 256


def _cyclic_states(states: list[dict]) -> set[str]:
    """Names of the parse states that can reach themselves again (lie on a cycle)."""
    succ: dict[str, set[str]] = {}
    for st in states:
        nxt = set()
        for tr in st.get("transitions") or []:
            if isinstance(tr, dict) and isinstance(tr.get("next_state"), str):
                nxt.add(tr["next_state"])
        succ[st["name"]] = nxt
    out = set()
    for start in succ:
        seen: set[str] = set()
        todo = list(succ[start])
        while todo:
            cur = todo.pop()
            if cur == start:
                out.add(start)
                break
            if cur in seen or cur not in succ:
                continue
            seen.add(cur)
            todo.extend(succ[cur])
    return out


@dataclass
class ActionInfo:
    name: str
    aid: int
    fn: Callable
    param_widths: list[int]
    primitives: list[str]  # one trace line per primitive call


@dataclass
class Compiled:
    parser_init: Callable
    parser_init_traced: Callable
    traced_env: dict
    actions: dict[int, ActionInfo]
    deparse: Callable[[list[int]], bytes]
    packers: dict[str, Callable[[list[int]], bytes]]
    deparse_order: list[str]
    verify_checksums: Callable | None
    update_checksums: Callable | None
    conditions: dict[str, Callable]
    key_fns: dict[str, tuple[Callable, Callable]]  # table -> (tuple key fn, int key fn)
    registers: dict[str, RegisterArray]
    counters: dict[str, CounterArray]
    meters: dict[str, MeterArray]
    hashes: dict[str, Callable] = field(default_factory=dict)
    # The program changes header validity with add/remove_header or writes packet_length, so
    # egress must start from the length register rather than the ingress packet_length value.
    track_len: bool = False


def _ind(lines: list[str], n: int = 1) -> list[str]:
    pad = "    " * n
    return [pad + ln for ln in lines]


class CodeGen:
    def __init__(self, prog: Program) -> None:
        self.p = prog
        self.lay = prog.layout
        self.env: dict[str, Any] = {
            "_PE": ParserError, "_AF": AssertFailed, "_regget": _reg_get,
            "_logfmt": _log_format, "_push": _push, "_pop": _pop, "_rand": random.randint,
        }
        self.registers = {n: RegisterArray(n, r["size"], r["bitwidth"])
                          for n, r in prog.registers.items()}
        self.counters = {}
        for n, c in prog.counters.items():
            if not c.get("is_direct", False):
                self.counters[n] = CounterArray(n, int(c.get("size", 0)))
        self.meters = {}
        for n, m in prog.meters.items():
            if not m.get("is_direct", False):
                self.meters[n] = MeterArray(n, int(m.get("size", 0)), m.get("type") == "bytes")
        self.eg = ExprGen(self.lay, prog.header_types, self.env, self.registers)
        self.src: list[str] = []
        self.too_short = prog.errors["PacketTooShort"]
        self.sm_plen = self.lay.sm["packet_length"]
        self.sm_espec = self.lay.sm["egress_spec"]
        self.sm_mcast = self.lay.sm["mcast_grp"]
        self.len_changes = False  # some add_header / remove_header moves the length register
        self.calc_fns: dict[str, str] = {}
        self.hash_fns: set[str] = set()
        self.calc_bodies: dict[str, list[str]] = {}
        self.calc_meta: dict[str, tuple[list, bool, list[str]]] = {}
        self.packer_exprs: dict[str, str] = {}
        deps = prog.json["deparsers"]
        self.deparse_order = [h for h in (deps[0].get("order") or [])]
        for h in self.deparse_order:
            self.lay.header(h)

        def lookahead(b: bytes, n: int, pos: int, off: int, w: int,
                      _ts: int = self.too_short) -> int:
            try:
                return _lookahead(b, n, pos, off, w)
            except ParserError:
                raise ParserError(_ts, pos) from None

        self.env["_la"] = lookahead

    # -- helpers -----------------------------------------------------------------------------
    def header_int(self, h: HeaderInfo) -> str:
        """Source of the header's fields concatenated into one int."""
        if h.vl_index is not None:
            expr = ""
            for i, (_, w, s) in enumerate(h.fields):
                width = f"F[{h.len_slot}]" if i == h.vl_index else str(w)
                ref = f"(F[{h.base + i}] & {(1 << w) - 1:#x})" if s else f"F[{h.base + i}]"
                expr = ref if not expr else f"(({expr}) << {width}) | {ref}"
            return expr
        parts = []
        shift = h.nbits
        for i, (_, w, s) in enumerate(h.fields):
            shift -= w
            if w == 0:
                continue
            ref = f"(F[{h.base + i}] & {(1 << w) - 1:#x})" if s else f"F[{h.base + i}]"
            parts.append(f"({ref} << {shift})" if shift else ref)
        return " | ".join(parts) if parts else "0"

    def struct_plan(self, h: HeaderInfo) -> tuple[str, list[list[tuple[int, int, int]]],
                                                   list[list[int]]] | None:
        """Byte-aligned chunks of a fixed-width header for ``struct``: (format, chunks, pieces).

        A chunk is a run of fields ending on a byte boundary: [(field index, width, shift)];
        its bytes are read as struct pieces (Q/I/H/B, big end first) and recombined.
        """
        if h.vl_index is not None or h.nbits == 0 or h.nbits > 8 * 64:
            return None
        chunks: list[list[tuple[int, int, int]]] = []
        cur: list[tuple[int, int]] = []
        bits = 0
        for i, (_, w, _) in enumerate(h.fields):
            if w == 0:
                continue
            cur.append((i, w))
            bits += w
            if bits % 8 == 0:
                shift = bits
                chunk = []
                for fi, fw in cur:
                    shift -= fw
                    chunk.append((fi, fw, shift))
                chunks.append(chunk)
                cur, bits = [], 0
        if cur:
            return None
        fmt = "!"
        pieces = []
        for chunk in chunks:
            nbytes = sum(fw for _, fw, _ in chunk) // 8
            sizes = []
            while nbytes:
                size = next(z for z in (8, 4, 2, 1) if z <= nbytes)
                sizes.append(size)
                nbytes -= size
            fmt += "".join({8: "Q", 4: "I", 2: "H", 1: "B"}[z] for z in sizes)
            pieces.append(sizes)
        return fmt, chunks, pieces

    def header_nbytes(self, h: Hdr) -> str:
        """Source of a header's size in the packet, in bytes (``_h`` holds its base slot).

        This is what BMv2's add_header / remove_header add to or take from the packet length
        register; a varbit field counts with its current length.
        """
        static = sum(f[1] for f in self.p.header_types[h.htype]["fields"] if f[1] != "*")
        if h.span == h.nfields + 2:  # varbit: the length slot follows the validity slot
            return f"(({static} + F[_h + {h.nfields + 1}]) >> 3)"
        return str(static // 8)

    @staticmethod
    def header_bits(h: HeaderInfo) -> str:
        """Source of the header's current width in bits."""
        if h.vl_index is None:
            return str(h.nbits)
        return f"({h.nbits} + F[{h.len_slot}])"

    def slot_source(self, node: Any, where: str) -> tuple[str, int]:
        """Source of a field-like reference and its width (for keys)."""
        t = node.get("type") if isinstance(node, dict) else None
        if t == "lookahead":
            src, w = self.eg.rv(node, where)
            return src, int(w or 0)
        if t == "stack_field":
            idx, w, s = self.eg.lvalue(node, where)
            return (f"(F[{idx}] & {(1 << w) - 1:#x})" if s else f"F[{idx}]"), w
        if t == "field":
            slot = self.lay.field_slot(node.get("value"))
            w = self.lay.widths[slot]
            return (f"(F[{slot}] & {(1 << w) - 1:#x})" if self.lay.signed[slot]
                    else f"F[{slot}]"), w
        raise PipelineLoadError(f"{where}: unsupported key element {node!r}")

    # -- primitives --------------------------------------------------------------------------
    def primitive(self, p: Any, where: str) -> list[str]:
        if not isinstance(p, dict) or not isinstance(p.get("op"), str):
            raise PipelineLoadError(f"{where}: malformed primitive {p!r}")
        op = p["op"]
        args = p.get("parameters", [])
        if not isinstance(args, list):
            raise PipelineLoadError(f"{where}: primitive '{op}' parameters must be an array")
        w = f"{where}: primitive '{op}'"
        eg = self.eg

        def nargs(*counts: int) -> None:
            if len(args) not in counts:
                raise PipelineLoadError(f"{w}: expected {counts} parameters, got {len(args)}")

        def named(i: int, kind: str, table: dict) -> Any:
            a = args[i]
            if not isinstance(a, dict) or a.get("type") != kind or a.get("value") not in table:
                raise PipelineLoadError(f"{w}: parameter {i} must name a known {kind}: {a!r}")
            return table[a["value"]]

        if op == "assign_union":
            nargs(2)
            du = self.lay.unions.get(args[0].get("value") if isinstance(args[0], dict) else None)
            su = self.lay.unions.get(args[1].get("value") if isinstance(args[1], dict) else None)
            if du is None or su is None or len(du) != len(su):
                raise PipelineLoadError(f"{w}: expected two header unions of the same type")
            out = []
            for dn, sn in zip(du, su, strict=True):
                a, b = self.lay.headers[dn], self.lay.headers[sn]
                out.append(f"F[{a.base}:{a.base + a.span}] = F[{b.base}:{b.base + b.span}]")
            return out
        if op == "assign_VL":
            nargs(2)
            d = eg.lvalue(args[0], w)
            sref = args[1].get("value") if isinstance(args[1], dict) else None
            dh = self.lay.headers.get(args[0].get("value", [None])[0])
            sh = self.lay.headers.get(sref[0]) if isinstance(sref, list) else None
            if dh is None or sh is None or dh.vl_index is None or sh.vl_index is None:
                raise PipelineLoadError(f"{w}: expected two varbit fields")
            return [f"F[{d[0]}] = F[{self.lay.field_slot(sref)}]",
                    f"F[{dh.len_slot}] = F[{sh.len_slot}]"]
        if op in ("assign", "modify_field"):
            nargs(2)
            if isinstance(args[0], dict) and args[0].get("type") == "header":
                return self.primitive({"op": "assign_header", "parameters": args}, where)
            dst = eg.lvalue(args[0], w)
            src, sw = eg.rv(args[1], w)
            return [eg.store(dst, src, sw)]
        if op in ("add_to_field", "subtract_from_field"):
            nargs(2)
            dst = eg.lvalue(args[0], w)
            sign = "+" if op == "add_to_field" else "-"
            return [eg.store(dst, f"F[{dst[0]}] {sign} {eg.data(args[1], w)}")]
        binops = {"add": "+", "subtract": "-", "bit_and": "&", "bit_or": "|", "bit_xor": "^",
                  "shift_left": "<<", "shift_right": ">>"}
        if op in binops:
            nargs(3)
            dst = eg.lvalue(args[0], w)
            return [eg.store(dst, f"{eg.data(args[1], w)} {binops[op]} {eg.data(args[2], w)}")]
        if op == "assign_header":
            nargs(2)
            d = eg.header(args[0], w)
            s = eg.header(args[1], w)
            n = d.span
            return [f"_d = {d.base}", f"_s = {s.base}", f"F[_d:_d + {n}] = F[_s:_s + {n}]"]
        if op == "assign_header_stack":
            nargs(2)
            ds = self.lay.stack(args[0].get("value"))
            ss = self.lay.stack(args[1].get("value"))
            out = []
            for dh, sh in zip(ds.headers, ss.headers, strict=False):
                a, b = self.lay.headers[dh], self.lay.headers[sh]
                n = len(a.fields) + 1
                out.append(f"F[{a.base}:{a.base + n}] = F[{b.base}:{b.base + n}]")
            out.append(f"F[{ds.next_slot}] = F[{ss.next_slot}]")
            return out
        if op == "add_header":
            nargs(1)
            h = eg.header(args[0], w)
            zeros = eg.const([0] * h.nfields, "z")
            self.len_changes = True
            return [f"_h = {h.base}", f"if not F[_h + {h.nfields}]:",
                    f"    F[_h:_h + {h.nfields}] = {zeros}", f"    F[_h + {h.nfields}] = 1",
                    f"    F[{self.lay.len_reg}] += {self.header_nbytes(h)}"] + [
                        f"F[{vs}] = 0" for vs in h.siblings]
        if op == "remove_header":
            nargs(1)
            h = eg.header(args[0], w)
            self.len_changes = True
            return [f"_h = {h.base}", f"if F[_h + {h.nfields}]:",
                    f"    F[_h + {h.nfields}] = 0",
                    f"    F[{self.lay.len_reg}] -= {self.header_nbytes(h)}"]
        if op in ("push", "pop"):
            nargs(2)
            sname = args[0].get("value") if isinstance(args[0], dict) else None
            st = self.lay.stack(sname)
            nf = len(self.lay.headers[st.headers[0]].fields)
            return [f"_{op}(F, {eg.stack_bases(sname)}, {nf}, {st.next_slot}, "
                    f"{eg.data(args[1], w)})"]
        if op in ("mark_to_drop", "drop"):
            out = []
            if self.sm_espec is not None:
                out.append(f"F[{self.sm_espec}] = {DROP_PORT}")
            if self.sm_mcast is not None:
                out.append(f"F[{self.sm_mcast}] = 0")
            return out or ["pass"]
        if op == "exit":
            return ["S.exited = True", "return"]
        if op in ("no_op", "_nop"):
            return ["pass"]
        if op == "log_msg":
            nargs(1, 2)
            fmt = args[0].get("value") if isinstance(args[0], dict) else None
            if not isinstance(fmt, str):
                raise PipelineLoadError(f"{w}: format must be a string")
            vals = []
            if len(args) == 2:
                vec = args[1].get("value") if isinstance(args[1], dict) else None
                if not isinstance(vec, list):
                    raise PipelineLoadError(f"{w}: expected a parameters_vector")
                vals = [eg.data(x, w) for x in vec]
            return ["if S.logs is not None:",
                    f"    S.logs.append(_logfmt({fmt!r}, [{', '.join(vals)}]))"]
        if op in ("assert", "assume"):
            nargs(1)
            return [f"if not {eg.data(args[0], w)}:", f"    raise _AF({op!r} + ' failed')"]
        if op == "register_read":
            nargs(3)
            reg = named(1, "register_array", self.registers)
            dst = eg.lvalue(args[0], w)
            return [eg.store(dst, f"_regget({eg.const(reg, 'reg')}, {eg.data(args[2], w)})",
                             reg.bitwidth)]
        if op == "register_write":
            nargs(3)
            reg = named(0, "register_array", self.registers)
            r = eg.const(reg, "reg")
            return [f"_i = {eg.data(args[1], w)}", f"if 0 <= _i < {reg.size}:",
                    f"    {r}.cells[_i] = ({eg.data(args[2], w)}) & {reg.mask:#x}"]
        if op == "count":
            nargs(2)
            c = named(0, "counter_array", self.counters)
            plen = f"F[{self.sm_plen}]" if self.sm_plen is not None else "0"
            return [f"{eg.const(c, 'cnt')}.count({eg.data(args[1], w)}, {plen})"]
        if op == "execute_meter":
            nargs(3)
            m = named(0, "meter_array", self.meters)
            plen = f"F[{self.sm_plen}]" if self.sm_plen is not None else "0"
            dst = eg.lvalue(args[2], w)
            return [eg.store(dst, f"{eg.const(m, 'mtr')}.execute({eg.data(args[1], w)}, {plen})",
                             2)]
        if op == "modify_field_with_hash_based_offset":
            nargs(4)
            calc = args[2].get("value") if isinstance(args[2], dict) else None
            hf = self.hash_fn(calc, w)
            dst = eg.lvalue(args[0], w)
            return [f"_m = {eg.data(args[3], w)}", f"_hv = {hf}(F, b'')",
                    eg.store(dst, f"{eg.data(args[1], w)} + (_hv % _m if _m else _hv)")]
        if op == "modify_field_rng_uniform":
            nargs(3)
            dst = eg.lvalue(args[0], w)
            return [eg.store(dst, f"_rand({eg.data(args[1], w)}, {eg.data(args[2], w)})")]
        if op == "generate_digest":
            nargs(2)
            lid = hexint(args[1].get("value") if isinstance(args[1], dict) else None, w)
            if lid not in self.p.learn_lists:
                raise PipelineLoadError(f"{w}: unknown learn list id {lid}")
            return [f"S.digests = S.digests + ({lid},)"]
        if op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            nargs(1, 2)
            fl = 0
            if len(args) == 2:
                fl = hexint(args[1].get("value") if isinstance(args[1], dict) else None, w)
                if fl and fl not in self.p.field_lists:
                    raise PipelineLoadError(f"{w}: unknown field list id {fl}")
            return [f"S.clone = ({eg.data(args[0], w)}, {fl})"]
        if op in ("resubmit", "recirculate"):
            nargs(0, 1)
            fl = 0
            if args:
                fl = hexint(args[0].get("value") if isinstance(args[0], dict) else None, w)
                if fl and fl not in self.p.field_lists:
                    raise PipelineLoadError(f"{w}: unknown field list id {fl}")
            return [f"S.{op} = {fl}"]
        if op == "truncate":
            nargs(1)
            return [f"S.truncate = {eg.data(args[0], w)}"]
        raise PipelineLoadError(f"{where}: unsupported primitive '{op}'")

    def primitive_label(self, p: dict) -> str:
        si = p.get("source_info") if isinstance(p, dict) else None
        if isinstance(si, dict) and isinstance(si.get("source_fragment"), str):
            return f"Primitive {si['source_fragment']}"
        return f"Primitive {p.get('op')}"

    # -- actions -----------------------------------------------------------------------------
    def action(self, a: dict) -> ActionInfo:
        name = a["name"]
        rd = a.get("runtime_data") or []
        self.eg.nparams = len(rd)
        self.eg.param_widths = [r["bitwidth"] for r in rd]
        prims = a["primitives"]
        fname = f"_act_{a['id']}"
        where = f"action '{name}'"
        jumps = any(isinstance(p, dict) and p.get("op") in ("_jump", "_jump_if_zero")
                    for p in prims)
        body: list[str] = []
        if not jumps:
            for p in prims:
                body += self.primitive(p, where)
        else:
            body += ["pc = 0", f"while pc < {len(prims)}:"]
            for i, p in enumerate(prims):
                op = p.get("op") if isinstance(p, dict) else None
                body.append(f"    if pc == {i}:")
                if op == "_jump":
                    tgt = self.eg.data(p["parameters"][0], where)
                    body += [f"        pc = {tgt}", "        continue"]
                elif op == "_jump_if_zero":
                    c = self.eg.data(p["parameters"][0], where)
                    tgt = self.eg.data(p["parameters"][1], where)
                    body += [f"        if ({c}) == 0:", f"            pc = {tgt}",
                             "            continue"]
                else:
                    body += _ind(self.primitive(p, where), 2)
                body += [f"        pc = {i + 1}"]
        self.eg.nparams = None
        self.eg.param_widths = []
        if not body:
            body = ["pass"]
        self.src += [f"def {fname}(F, D, S):"] + _ind(body) + [""]
        labels = [self.primitive_label(p) for p in prims]
        return ActionInfo(name, a["id"], fname, [r["bitwidth"] for r in rd], labels)  # type: ignore[arg-type]

    # -- calculations ------------------------------------------------------------------------
    def calc_fn(self, name: Any, where: str) -> str:
        """Name of a generated ``(F, PL) -> bytes`` building the calculation's input."""
        if name in self.calc_fns:
            return self.calc_fns[name]
        calc = self.p.calculations.get(name) if isinstance(name, str) else None
        if calc is None:
            raise PipelineLoadError(f"{where}: unknown calculation {name!r}")
        fname = f"_calc_{len(self.calc_fns)}"
        # Consecutive inputs from the same header are packed with one validity test.
        groups: list[list] = []  # [header or None, [(src, width)]]
        last_hdr: str | None = None
        payload = False
        for inp in calc.get("input") or []:
            t = inp.get("type") if isinstance(inp, dict) else None
            if t == "field":
                ref = inp.get("value")
                slot = self.lay.field_slot(ref)
                h = self.lay.headers[ref[0]]
                wd = self.lay.widths[slot]
                val = f"(F[{slot}] & {(1 << wd) - 1:#x})" if self.lay.signed[slot] else f"F[{slot}]"
                key = None if h.metadata else h.name
                if h.vl_index is not None and slot == h.base + h.vl_index:
                    groups.append([key, [(val, f"F[{h.len_slot}]")]])
                    groups.append([None, []])  # nothing may merge into a dynamic group
                elif groups and groups[-1][0] == key and key is not None:
                    groups[-1][1].append((val, wd))
                else:
                    groups.append([key, [(val, wd)]])
                last_hdr = ref[0]
            elif t == "hexstr":
                bw = inp.get("bitwidth")
                if not isinstance(bw, int) or bw <= 0:
                    raise PipelineLoadError(f"calculation '{name}': hexstr needs a bitwidth")
                val = hexint(inp.get("value"), where) & ((1 << bw) - 1)
                groups.append([None, [(str(val), bw)]])
            elif t == "header":
                h = self.lay.header(inp.get("value"))
                groups.append([h.name, [(f"({self.header_int(h)})", self.header_bits(h))]])
                groups.append([None, []])
                last_hdr = h.name
            elif t == "payload":
                payload = True
            else:
                raise PipelineLoadError(f"calculation '{name}': unsupported input {inp!r}")
        body = ["v = 0", "nb = 0"]
        for hname, parts in groups:
            if not parts:
                continue
            if any(isinstance(w, str) for _, w in parts):  # one dynamic-width input
                [(src, total)] = parts
                exprs = [src]
            else:
                total = sum(w for _, w in parts)
                exprs = []
                shift = total
                for src, w in parts:
                    shift -= w
                    exprs.append(f"({src} << {shift})" if shift else src)
            line = f"v = (v << {total}) | {' | '.join(exprs)}; nb += {total}"
            if hname is None:
                body.append(line)
            else:
                body += [f"if F[{self.lay.headers[hname].valid_slot}]:", "    " + line]
        body += ["pad = -nb & 7", "b = (v << pad).to_bytes((nb + pad) >> 3, 'big')"]
        if payload:
            after = []
            if last_hdr in self.deparse_order:
                after = self.deparse_order[self.deparse_order.index(last_hdr) + 1:]
            for hn in after:
                h = self.lay.headers[hn]
                body += [f"if F[{h.valid_slot}]:",
                         f"    b += ({self.header_int(h)}).to_bytes({self.header_bits(h)} >> 3, "
                         "'big')"]
            body.append("b += PL")
        body.append("return b")
        self.calc_bodies[fname] = body
        self.calc_meta[fname] = (groups, payload, after if payload else [])
        self.src += [f"def {fname}(F, PL):"] + _ind(body) + [""]
        self.calc_fns[name] = fname
        return fname

    def hash_fn(self, calc_name: Any, where: str) -> str:
        calc = self.p.calculations.get(calc_name) if isinstance(calc_name, str) else None
        if calc is None:
            raise PipelineLoadError(f"{where}: unknown calculation {calc_name!r}")
        algo = calc.get("algo")
        if algo not in HASH_ALGOS:
            raise PipelineLoadError(f"calculation '{calc_name}': unsupported algorithm {algo!r}")
        cf = self.calc_fn(calc_name, where)
        fname = f"_hash{cf}"
        if fname not in self.hash_fns:
            self.env[f"_algo{cf}"] = HASH_ALGOS[algo]
            if algo in ("csum16", "cksum16"):
                body = self.csum16_body(*self.calc_meta[cf])
            else:
                body = self.calc_bodies[cf][:-1] + [f"return _algo{cf}(b)"]
            self.src += [f"def {fname}(F, PL):"] + _ind(body) + [""]
            self.hash_fns.add(fname)
        return fname

    def csum16_body(self, groups: list, payload: bool, after: list[str]) -> list[str]:
        """Internet checksum summed from the field values, without building bytes.

        Since 2**16 == 1 (mod 0xffff), the ones'-complement sum of the 16-bit words of the
        zero-padded input V is V mod 0xffff (0xffff instead of 0 when V != 0), and a field that
        ends at bit offset E from the start weighs 2**(-E mod 16): each term is a small int.
        """
        body = ["s = 0"]
        static_nb: int | None = 0  # bits so far, while they are known at load time

        def shifted(expr: str, shift: str) -> str:
            return expr if shift == "0" else f"(({expr}) << {shift})"

        for hname, parts in groups:
            if not parts:
                continue
            terms = []
            if any(isinstance(w, str) for _, w in parts):
                [(src, width)] = parts
                terms.append(f"(({src}) % 0xffff) << ((-({width})) & 15)")
            else:
                width = sum(w for _, w in parts)
                end = 0
                for src, w in parts:
                    end += w
                    terms.append(shifted(src, str(-end & 15)))
            gsum = " + ".join(terms)
            if static_nb is not None:
                shift = str(-static_nb & 15)
            else:
                shift = "(-nb & 15)"
            lines = [f"s += {shifted(gsum, shift)}", f"nb += {width}"]
            if hname is None:
                body += lines
                if static_nb is not None and isinstance(width, int):
                    static_nb += width
                else:
                    static_nb = None
            else:
                body += [f"if F[{self.lay.headers[hname].valid_slot}]:"] + _ind(lines)
                static_nb = None
        body.insert(1, "nb = 0")
        if payload:
            body.append("nb += -nb & 7")
            for hn in after:
                h = self.lay.headers[hn]
                bits = self.header_bits(h)
                body += [f"if F[{h.valid_slot}]:",
                         f"    s += (({self.header_int(h)}) % 0xffff) << ((-(nb + {bits})) & 15)",
                         f"    nb += {bits}"]
            body += ["L = len(PL) * 8",
                     "s += (int.from_bytes(PL, 'big') % 0xffff) << ((-(nb + L)) & 15)"]
        return body + ["r = s % 0xffff", "if r == 0 and s:", "    r = 0xffff",
                       "return ~r & 0xffff"]

    # -- checksums ---------------------------------------------------------------------------
    def checksums(self) -> tuple[str | None, str | None]:
        cherr = self.lay.sm["checksum_error"]
        verify: list[str] = []
        update: list[str] = []
        for ck in self.p.json.get("checksums") or []:
            name = ck.get("name", "?") if isinstance(ck, dict) else "?"
            where = f"checksum '{name}'"
            if not isinstance(ck, dict):
                raise PipelineLoadError(f"malformed checksum {ck!r}")
            tgt = self.lay.field_slot(ck.get("target"))
            width = self.lay.widths[tgt]
            hf = self.hash_fn(ck.get("calculation"), where)
            cond = ck.get("if_cond")
            c = self.eg.data(cond, where) if cond is not None else "True"
            if ck.get("verify", True) and cherr is not None:
                verify += [f"if {c}:",
                           f"    if F[{tgt}] != {hf}(F, PL) & {(1 << width) - 1:#x}:",
                           f"        F[{cherr}] = 1"]
            if ck.get("update", True):
                update += [f"if {c}:", f"    F[{tgt}] = {hf}(F, PL) & {(1 << width) - 1:#x}"]
        names: list[str | None] = [None, None]
        for i, (fname, body) in enumerate((("_verify_ck", verify), ("_update_ck", update))):
            if body:
                self.src += [f"def {fname}(F, PL):"] + _ind(body) + [""]
                names[i] = fname
        return names[0], names[1]

    # -- deparser ----------------------------------------------------------------------------
    def pack_expr(self, h: HeaderInfo) -> str:
        """Source of the header's bytes: one struct.pack when byte-aligned, else int.to_bytes."""
        plan = self.struct_plan(h)
        if plan is None:
            return f"({self.header_int(h)}).to_bytes({self.header_bits(h)} >> 3, 'big')"
        import struct

        fmt, chunks, pieces = plan
        pack = self.eg.const(struct.Struct(fmt).pack, "sp")
        args = []
        for chunk, sizes in zip(chunks, pieces, strict=True):
            terms = []
            for fi, fw, shift in chunk:
                ref = f"F[{h.base + fi}]"
                if h.fields[fi][2]:
                    ref = f"({ref} & {(1 << fw) - 1:#x})"
                terms.append(f"({ref} << {shift})" if shift else ref)
            cv = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
            if len(sizes) == 1:
                args.append(cv)
                continue
            rest = sum(sizes) * 8
            for z in sizes:
                rest -= z * 8
                piece = f"({cv} >> {rest})" if rest else cv
                args.append(f"({piece} & {(1 << (z * 8)) - 1:#x})" if z * 8 + rest < sum(
                    sizes) * 8 else piece)
        return f"{pack}({', '.join(args)})"

    def deparser(self) -> None:
        """One ``struct.pack`` per valid header, joined once."""
        body = ["parts = []"]
        for hn in self.deparse_order:
            h = self.lay.headers[hn]
            expr = self.pack_expr(h)
            body += [f"if F[{h.valid_slot}]:", f"    parts.append({expr})"]
            pname = f"_pack_{h.hid}_{len(self.packer_exprs)}"
            self.src += [f"def {pname}(F):", f"    return {expr}", ""]
            self.packer_exprs[hn] = pname
        body.append("return b''.join(parts)")
        self.src += ["def _deparse(F):"] + _ind(body) + [""]

    # -- parser ------------------------------------------------------------------------------
    def extract_lines(self, h: HeaderInfo, traced: bool, vl_len: str | None = None) -> list[str]:
        out = []
        if traced:
            out.append(f"T({'Extracting header ' + repr(h.name)!r})")
        if h.vl_index is not None:
            if vl_len is None:
                raise PipelineLoadError(f"header '{h.name}' has a varbit field: use extract_VL")
            return out + self.extract_vl_lines(h, vl_len)
        nb = h.nbits // 8
        out += [f"e = pos + {nb}", f"if e > n: raise _PE({self.too_short}, pos)"]
        plan = self.struct_plan(h)
        if plan is not None:
            return out + self.struct_extract(h, plan) + [f"F[{h.valid_slot}] = 1", "pos = e"] + [
                f"F[{vs}] = 0" for vs in h.union_siblings]
        if nb:
            out.append("v = int.from_bytes(B[pos:e], 'big')")
        shift = h.nbits
        for i, (_, w, s) in enumerate(h.fields):
            shift -= w
            val = f"(v >> {shift})" if shift else "v"
            if shift + w < h.nbits:
                val = f"({val} & {(1 << w) - 1:#x})"
            if w == 0:
                val = "0"
            out.append(f"F[{h.base + i}] = " + (f"_tcm({val}, {w})" if s else val))
        out += [f"F[{h.valid_slot}] = 1", "pos = e"]
        out += [f"F[{vs}] = 0" for vs in h.union_siblings]
        return out

    def struct_extract(self, h: HeaderInfo, plan: tuple) -> list[str]:
        import struct

        fmt, chunks, pieces = plan
        unpack = self.eg.const(struct.Struct(fmt).unpack_from, "su")
        names = [f"u{k}" for k in range(sum(len(p) for p in pieces))]
        out = [f"{', '.join(names)}, = {unpack}(B, pos)"]
        k = 0
        for chunk, sizes in zip(chunks, pieces, strict=True):
            parts = names[k:k + len(sizes)]
            k += len(sizes)
            if len(parts) == 1:
                cv = parts[0]
            else:
                rest = sum(sizes) * 8
                terms = []
                for nm, z in zip(parts, sizes, strict=True):
                    rest -= z * 8
                    terms.append(f"({nm} << {rest})" if rest else nm)
                cv = "(" + " | ".join(terms) + ")"
            for fi, fw, shift in chunk:
                val = cv if len(chunk) == 1 else (
                    f"({cv} >> {shift})" if chunk[0][0] == fi else
                    f"(({cv} >> {shift}) & {(1 << fw) - 1:#x})" if shift else
                    f"({cv} & {(1 << fw) - 1:#x})")
                signed = h.fields[fi][2]
                out.append(f"F[{h.base + fi}] = " + (f"_tcm({val}, {fw})" if signed else val))
        for i, (_, w, _) in enumerate(h.fields):
            if w == 0:
                out.append(f"F[{h.base + i}] = 0")
        return out

    def extract_vl_lines(self, h: HeaderInfo, vl_len: str) -> list[str]:
        """extract_VL: the varbit field's length in bits comes from an expression."""
        hts = self.p.errors["HeaderTooShort"]
        out = [f"L = {vl_len}",
               f"if L < 0 or L > {h.max_vl_bits} or L & 7: raise _PE({hts}, pos)",
               f"r = {h.nbits} + L", "e = pos + (r >> 3)",
               f"if e > n: raise _PE({self.too_short}, pos)",
               "v = int.from_bytes(B[pos:e], 'big')"]
        for i, (_, w, s) in enumerate(h.fields):
            if i == h.vl_index:
                out += ["r -= L", f"F[{h.base + i}] = (v >> r) & ((1 << L) - 1)",
                        f"F[{h.len_slot}] = L"]
                continue
            out.append(f"r -= {w}")
            val = f"((v >> r) & {(1 << w) - 1:#x})"
            out.append(f"F[{h.base + i}] = " + (f"_tcm({val}, {w})" if s else val))
        out += [f"F[{h.valid_slot}] = 1", "pos = e"]
        out += [f"F[{vs}] = 0" for vs in h.union_siblings]
        return out

    def parser(self, traced: bool) -> str:
        prs = self.p.json["parsers"][0]
        states = prs.get("parse_states")
        if not isinstance(states, list) or not states:
            raise PipelineLoadError("parser has no parse_states")
        sfx = "_t" if traced else ""
        fnames = {}
        for st in states:
            sname = st.get("name") if isinstance(st, dict) else None
            if not isinstance(sname, str):
                raise PipelineLoadError(f"malformed parse state {st!r}")
            fnames[sname] = f"_ps{len(fnames)}{sfx}"
        init = prs.get("init_state")
        if init not in fnames:
            raise PipelineLoadError(f"parser init_state {init!r} is not a parse state")
        sobe = self.p.errors["StackOutOfBounds"]
        nomatch = self.p.errors["NoMatch"]
        looping = _cyclic_states(states)
        # Parser loop bound (see PARSER_STEPS_PER_BYTE): only states on a cycle of the state
        # graph count their visits, so a loop-free parser pays nothing per packet.
        limit = f"{PARSER_STEPS_PER_BYTE * max(1, len(looping))} * n + {PARSER_STEPS_BASE}"
        timeout = self.p.errors["ParserTimeout"]
        for st in states:
            sname = st["name"]
            where = f"parse state '{sname}'"
            body: list[str] = []
            if traced:
                body.append(f"T({'Parser state ' + repr(sname)!r})")
            if sname in looping:
                body += ["S.steps += 1", f"if S.steps > {limit}: raise _PE({timeout}, pos)"]
            for op in st.get("parser_ops") or []:
                o = op.get("op") if isinstance(op, dict) else None
                args = op.get("parameters") or []
                if o == "extract":
                    if len(args) != 1 or not isinstance(args[0], dict):
                        raise PipelineLoadError(f"{where}: extract takes one parameter")
                    kind, val = args[0].get("type"), args[0].get("value")
                    if kind == "regular":
                        body += self.extract_lines(self.lay.header(val), traced)
                    elif kind == "stack":
                        stk = self.lay.stack(val)
                        xs = []
                        for hn in stk.headers:
                            xf = f"_x_{self.lay.headers[hn].hid}{sfx}"
                            xs.append(xf)
                            self.src += ([f"def {xf}(B, n, pos, F):"]
                                         + _ind(self.extract_lines(self.lay.headers[hn], traced))
                                         + ["    return pos", ""])
                        tab = f"_xs_{len(self.src)}{sfx}"
                        self.src += [f"{tab} = ({', '.join(xs)},)", ""]
                        body += [f"i = F[{stk.next_slot}]",
                                 f"if i >= {len(stk.headers)}: raise _PE({sobe}, pos)",
                                 f"pos = {tab}[i](B, n, pos, F)",
                                 f"F[{stk.next_slot}] = i + 1"]
                    else:
                        raise PipelineLoadError(f"{where}: unsupported extract type {kind!r}")
                elif o == "extract_VL":
                    if len(args) != 2 or not isinstance(args[0], dict) \
                            or args[0].get("type") != "regular":
                        raise PipelineLoadError(f"{where}: extract_VL takes a header and a length")
                    h = self.lay.header(args[0].get("value"))
                    body += self.extract_lines(h, traced, self.eg.data(args[1], where))
                elif o == "set":
                    if len(args) != 2:
                        raise PipelineLoadError(f"{where}: set takes two parameters")
                    dst = self.eg.lvalue(args[0], where)
                    src, sw = self.eg.rv(args[1], where)
                    body.append(self.eg.store(dst, src, sw))
                elif o == "verify":
                    if len(args) != 2:
                        raise PipelineLoadError(f"{where}: verify takes two parameters")
                    body.append(f"if not {self.eg.data(args[0], where)}: "
                                f"raise _PE({self.eg.data(args[1], where)}, pos)")
                elif o in ("advance", "shift"):
                    if len(args) != 1:
                        raise PipelineLoadError(f"{where}: {o} takes one parameter")
                    amount = self.eg.data(args[0], where)
                    step = f"({amount}) >> 3" if o == "advance" else f"({amount})"
                    body += [f"pos += {step}", f"if pos > n: raise _PE({self.too_short}, n)"]
                elif o == "primitive":
                    if len(args) != 1:
                        raise PipelineLoadError(f"{where}: primitive takes one parameter")
                    self.eg.nparams = 0
                    body += self.primitive(args[0], where)
                    self.eg.nparams = None
                else:
                    raise PipelineLoadError(f"{where}: unsupported parser op {o!r}")
            body += self.transitions(st, fnames, nomatch, where, traced)
            self.src += [f"def {fnames[sname]}(B, n, pos, F, S):"] + _ind(body) + [""]
        return fnames[init]

    def transitions(self, st: dict, fnames: dict[str, str], nomatch: int, where: str,
                    traced: bool) -> list[str]:
        def target(nxt: Any) -> str:
            if nxt is None:
                return "None"
            if nxt not in fnames:
                raise PipelineLoadError(f"{where}: unknown next state {nxt!r}")
            return fnames[nxt]

        keys = st.get("transition_key") or []
        parts = []
        total = 0
        for k in reversed(keys):
            src, w = self.slot_source(k, where)
            parts.append(f"({src} << {total})" if total else src)
            total += (w + 7) // 8 * 8
        out = []
        if parts:
            out.append(f"k = {' | '.join(reversed(parts))}")
            if traced:
                out.append(f"T('Parser state {st['name']}: key is ' + format(k, 'x'))")
        has_default = False
        for tr in st.get("transitions") or []:
            if not isinstance(tr, dict):
                raise PipelineLoadError(f"{where}: malformed transition {tr!r}")
            t = tr.get("type", "hexstr")
            nxt = target(tr.get("next_state"))
            # p4c <= JSON 2.18 wrote the default case as a typeless transition whose value is
            # the string "default"; BMv2 still accepts that form, so softnic does too.
            if t == "default" or (t == "hexstr" and tr.get("value") in (None, "default")):
                out.append(f"return {nxt}, pos")
                has_default = True
                break
            if t != "hexstr":
                raise PipelineLoadError(f"{where}: unsupported transition type {t!r}")
            if not parts:
                raise PipelineLoadError(f"{where}: value transition without transition_key")
            val = hexint(tr.get("value"), where)
            mask = tr.get("mask")
            if mask is None:
                out.append(f"if k == {val}: return {nxt}, pos")
            else:
                m = hexint(mask, where)
                out.append(f"if k & {m} == {val & m}: return {nxt}, pos")
        if not has_default:
            out.append(f"raise _PE({nomatch}, pos)")
        return out

    # -- conditions and table keys -----------------------------------------------------------
    def condition(self, c: dict) -> str:
        fname = f"_cond_{c.get('id', len(self.src))}_{len(self.src)}"
        expr = self.eg.data(c.get("expression"), f"conditional '{c.get('name')}'")
        self.src += [f"def {fname}(F):", f"    return {expr}", ""]
        return fname

    def table_key(self, t: dict) -> tuple[str, str, list[int]]:
        where = f"table '{t.get('name')}'"
        srcs = []
        widths = []
        for k in t.get("key") or []:
            if not isinstance(k, dict):
                raise PipelineLoadError(f"{where}: malformed key {k!r}")
            mt = k.get("match_type")
            if mt == "valid":
                h = self.lay.header(k.get("target"))
                src, w = f"F[{h.valid_slot}]", 1
            elif mt in ("exact", "lpm", "ternary", "range", "optional"):
                src, w = self.slot_source({"type": "field", "value": k.get("target")}, where)
            else:
                raise PipelineLoadError(f"{where}: unsupported match type {mt!r}")
            if k.get("mask") is not None:
                src = f"({src} & {hexint(k['mask'], where)})"
            srcs.append(src)
            widths.append(w)
        tid = f"{t.get('id')}_{len(self.src)}"
        tup = f"_ktup_{tid}"
        kint = f"_kint_{tid}"
        self.src += [f"def {tup}(F):", f"    return ({', '.join(srcs)}{',' if srcs else ''})", ""]
        parts = []
        shift = 0
        for src, w in zip(reversed(srcs), reversed(widths), strict=True):
            parts.append(f"({src} << {shift})" if shift else src)
            shift += w
        self.src += [f"def {kint}(F):", f"    return {' | '.join(parts) if parts else '0'}", ""]
        return tup, kint, widths


def compile_program(prog: Program) -> tuple[Compiled, CodeGen, dict[str, Any]]:
    """Generate and exec all code; returns the compiled callables and the live environment."""
    g = CodeGen(prog)
    actions = {aid: g.action(a) for aid, a in prog.actions_by_id.items()}
    g.deparser()
    verify, update = g.checksums()
    init_fast = g.parser(traced=False)
    fast_src_len = len(g.src)
    conds: dict[str, str] = {}
    keys: dict[str, tuple[str, str]] = {}
    for pl in prog.json["pipelines"]:
        for c in pl.get("conditionals") or []:
            conds[c.get("name")] = g.condition(c)
        for t in pl.get("tables") or []:
            tup, kint, _ = g.table_key(t)
            keys[t.get("name")] = (tup, kint)
    source = "\n".join(g.src[:fast_src_len] + g.src[fast_src_len:])
    env = g.env
    try:
        exec(compile(source, "<softnic-pipeline>", "exec"), env)  # noqa: S102
    except SyntaxError as e:  # a bug in codegen, but still a load-time failure
        raise PipelineLoadError(f"internal code generation error: {e}") from e
    # The traced parser lives in its own module so that its ``T`` global can be swapped.
    g.src = []
    init_traced = g.parser(traced=True)
    tenv = dict(env)
    tenv["T"] = print
    exec(compile("\n".join(g.src), "<softnic-parser-traced>", "exec"), tenv)  # noqa: S102
    for a in actions.values():
        a.fn = env[a.fn]  # type: ignore[index]
    comp = Compiled(
        parser_init=env[init_fast], parser_init_traced=tenv[init_traced], traced_env=tenv,
        actions=actions, deparse=env["_deparse"],
        packers={h: env[f] for h, f in g.packer_exprs.items()}, deparse_order=g.deparse_order,
        verify_checksums=env[verify] if verify else None,
        update_checksums=env[update] if update else None,
        conditions={n: env[f] for n, f in conds.items()},
        key_fns={n: (env[a], env[b]) for n, (a, b) in keys.items()},
        registers=g.registers, counters=g.counters, meters=g.meters,
        track_len=g.len_changes or g.sm_plen in g.eg.written)
    return comp, g, env
