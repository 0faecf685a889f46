"""Shared state of the pipeline code generators, and the helpers generated code calls.

Code generation is split by program part (``gen_parser``, ``gen_actions`` with the primitive
registry in ``primitives``, ``gen_deparse``), each a small class working on one
:class:`GenContext`, the way p4c's passes share one context: the program, its field layout, the
expression generator, the extern instances, the source lines generated so far, the namespace
(``env``) that source is ``exec``-ed in and the set of identifiers the generators created.

Every identifier in generated source comes from :meth:`GenContext.fresh` (or is a fixed name
written in a generator); nothing taken from the JSON is ever pasted into source except as an
``int`` or through ``repr``. ``gen_check`` verifies that on the finished source before it runs.
The module-level helpers below go into the namespace: generated code calls them for the rarer,
longer operations rather than inlining them.
"""

from __future__ import annotations

import random
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import ExprGen, Hdr
from softnic.runtime.externs import CounterArray, MeterArray, RegisterArray
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
    stride = nf + 1
    b0 = bases[0]
    if count >= 0 and bases[-1] - b0 == (size - 1) * stride:
        # Elements laid out back to back (as the layout places them): one slice move for the
        # elements that stay, one strided store for the valid bits of those shifted in.
        keep = max(0, size - count)
        end = b0 + size * stride
        if keep:
            f[b0:b0 + keep * stride] = f[b0 + count * stride:end]
        f[b0 + keep * stride + nf:end:stride] = [0] * (size - keep)
        f[nx] = max(0, f[nx] - count)
        return
    for i in range(size):
        b = bases[i]
        if i + count < size:
            s = bases[i + count]
            f[b:b + nf + 1] = f[s:s + nf + 1]
        else:
            f[b + nf] = 0
    f[nx] = max(0, f[nx] - count)



def _stack_bytes(f: list[int], start: int, end: int) -> bytes:
    """The valid elements of a run of one-byte stack headers (value slot, valid slot, ...)."""
    valid = f[start + 1:end:2]
    if 1 not in valid:
        return b""
    vals = f[start:end:2]
    if 0 not in valid:
        return bytes(vals)
    return bytes([v for v, ok in zip(vals, valid, strict=True) if ok])


def _ind(lines: list[str], n: int = 1) -> list[str]:
    pad = "    " * n
    return [pad + ln for ln in lines]



class GenContext:
    """State shared by the code generators, and header helpers they all use."""

    def __init__(self, prog: Program, drop_port: int = DROP_PORT) -> None:
        self.p = prog
        self.lay = prog.layout
        self.drop_port = drop_port
        self.env: dict[str, Any] = {
            "_PE": ParserError, "_AF": AssertFailed, "_regget": _reg_get,
            "_logfmt": _log_format, "_push": _push, "_pop": _pop, "_stackbytes": _stack_bytes,
            "_rand": random.randint,
        }
        # Identifiers the generators created (functions, tables of functions): the only
        # module-level names, besides ``env``'s, that generated source may define or use.
        self.names: set[str] = set()
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
        self.ntemps = 0
        deps = prog.json["deparsers"]
        self.deparse_order = [h for h in (deps[0].get("order") or [])]
        for h in self.deparse_order:
            self.lay.header(h)
        self.cond_exprs: dict[str, str] = {}  # condition function -> its expression source
        # Set by codegen: the calculation generator (hash primitives need its functions).
        self.calcs: Any = None

        def lookahead(b: bytes, n: int, pos: int, off: int, w: int,
                      _ts: int = self.too_short) -> int:
            try:
                return _lookahead(b, n, pos, off, w)
            except ParserError:
                raise ParserError(_ts, pos) from None

        def lashort(pos: int, _ts: int = self.too_short) -> int:
            raise ParserError(_ts, pos)

        self.env["_la"] = lookahead
        self.env["_lashort"] = lashort

    @staticmethod
    def one_byte(h: HeaderInfo) -> bool:
        """A header of one unsigned 8-bit field whose valid bit follows it."""
        return (h.vl_index is None and len(h.fields) == 1 and h.fields[0][1] == 8
                and not h.fields[0][2] and not h.union_siblings
                and h.valid_slot == h.base + 1)

    # -- identifiers -------------------------------------------------------------------------
    def fresh(self, kind: str) -> str:
        """A new module-level identifier ``_<kind><n>``; ``kind`` is a generator's literal."""
        if not kind.isidentifier():
            raise ValueError(f"bad identifier kind {kind!r}")
        name = f"_{kind}{len(self.names)}"
        self.names.add(name)
        return name

    def tmp(self) -> str:
        """A new local temporary ``_t<n>`` for one primitive's generated statements."""
        self.ntemps += 1
        return f"_t{self.ntemps}"

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

    def header_nbytes(self, h: Hdr, base: str) -> str:
        """Source of a header's size in the packet, in bytes (local ``base`` holds its base slot).

        This is what BMv2's add_header / remove_header add to or take from the packet length
        register; a varbit field counts with its current length.
        """
        static = sum(f[1] for f in self.p.header_types[h.htype]["fields"] if f[1] != "*")
        if h.span == h.nfields + 2:  # varbit: the length slot follows the validity slot
            return f"(({static} + F[{base} + {h.nfields + 1}]) >> 3)"
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
