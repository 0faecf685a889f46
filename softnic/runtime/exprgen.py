"""Translate BMv2 JSON expressions (type-value objects) into Python source fragments.

The generated code works on ``F`` (the packet's flat PHV list), ``D`` (the action's runtime data
tuple) and, in parser states, ``B``/``n``/``pos`` (packet bytes, their length, parse offset).
Arithmetic is done in Python's unbounded ints, exactly like BMv2 (which computes with infinite
precision and truncates only when a value is stored into a field); p4c already wraps arithmetic
that must overflow in explicit ``&`` masks.

Objects the fragments need (stacks' header bases, register arrays, helper functions) are put in
an environment dict that becomes the generated module's globals.
"""

from __future__ import annotations

from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.loader import MAX_BITWIDTH, HeaderInfo, Layout
from softnic.runtime.packet import StackIndexOutOfRange
from softnic.runtime.schema import field_signed

BINARY = {
    "+": "+", "-": "-", "*": "*", ">>": ">>", "&": "&", "|": "|", "^": "^",
    "==": "==", "!=": "!=", ">": ">", ">=": ">=", "<": "<", "<=": "<=", "and": "and",
    "or": "or", "/": "//", "%": "%",
}


# Nesting depth of one JSON expression, counting "expression" wrappers. p4c's deep expressions
# (chains of + or ++ over dozens of operands) stay below it; hostile JSON nested thousands deep
# would exhaust the recursive walk below and CPython's parser (at most 200 nested parentheses;
# generated source deeper than that is refused by gen_check as a load error too).
MAX_EXPR_DEPTH = 200


def hexint(v: Any, where: str = "hexstr") -> int:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise PipelineLoadError(f"{where}: expected a hex string, got {v!r}")
    if isinstance(v, int):
        return v
    try:
        return int(v, 16)
    except ValueError:
        raise PipelineLoadError(f"{where}: malformed hex string {v!r}") from None


# A left shift by more bits than this yields a value that every store truncates to 0 (no field,
# parameter or register cell is wider than MAX_BITWIDTH, and p4c masks every shift result to its
# type), so the shift is not computed: a packet-supplied amount such as 0xffffffff costs constant
# time instead of seconds and gigabytes of memory.
SHIFT_LIMIT = 2 * MAX_BITWIDTH


def shift_left(v: int, amount: int) -> int:
    """``v << amount``, in constant time for amounts past any width (see SHIFT_LIMIT)."""
    return v << amount if amount <= SHIFT_LIMIT else 0


# Bounds of a lookahead in the JSON (bits); past them the JSON is refused at load.
MAX_LOOKAHEAD_OFFSET = 1 << 20
MAX_LOOKAHEAD_WIDTH = 4096


class _NoElement:
    """``.last`` of an empty stack: using it as a field's slot raises IndexError (which the
    parser reports as StackOutOfBounds; gen_parser checks for an empty stack first)."""

    def __add__(self, other: int) -> int:
        raise IndexError("stack has no valid element")

    __radd__ = __add__


NO_ELEMENT = _NoElement()


def stack_base(bases: tuple[int, ...], i: int) -> int:
    """Header base of stack element ``i``; out of range (incl. negative): StackIndexOutOfRange
    (BMv2 aborts there, see :class:`~softnic.runtime.packet.StackIndexOutOfRange`)."""
    if not 0 <= i < len(bases):
        raise StackIndexOutOfRange(f"header stack index {i} out of range for a stack of "
                                   f"{len(bases)} (BMv2 aborts: std::out_of_range)")
    return bases[i]


def two_comp_mod(v: int, w: int) -> int:
    half = 1 << (w - 1)
    return ((v + half) & ((1 << w) - 1)) - half


def sat_cast(v: int, w: int) -> int:
    hi = (1 << (w - 1)) - 1
    return max(-hi - 1, min(hi, v))


def usat_cast(v: int, w: int) -> int:
    return max(0, min((1 << w) - 1, v))


class Hdr:
    """A header-valued expression: ``base`` is Python source for its first slot."""

    def __init__(self, base: str, htype: str, nfields: int, span: int | None = None,
                 siblings: list[int] | None = None) -> None:
        self.base = base
        self.htype = htype
        self.nfields = nfields
        self.span = nfields + 1 if span is None else span
        self.siblings = siblings or []  # valid slots of other header-union members


class ExprGen:
    def __init__(self, layout: Layout, header_types: dict[str, dict], env: dict[str, Any],
                 registers: dict[str, Any]) -> None:
        self.lay = layout
        self.htypes = header_types
        self.env = env
        self.registers = registers
        self.nparams: int | None = None  # set while compiling an action body
        self.param_widths: list[int] = []  # the action's runtime_data widths
        # Slots named as assignment targets anywhere in the program: lets the engine skip
        # per-packet bookkeeping for architecture fields the program never writes.
        self.written: set[int] = set()
        self.depth = 0
        self.stack_names: dict[Any, str] = {}  # stack (or ("last", stack)) -> env name
        env.setdefault("_sb", stack_base)
        env.setdefault("_shl", shift_left)
        env.setdefault("_tcm", two_comp_mod)
        env.setdefault("_sat", sat_cast)
        env.setdefault("_usat", usat_cast)

    # -- environment -------------------------------------------------------------------------
    def const(self, obj: Any, hint: str = "k") -> str:
        for k, v in self.env.items():
            if v is obj and k.startswith("_" + hint):
                return k
        name = f"_{hint}{len(self.env)}"
        self.env[name] = obj
        return name

    def stack_bases(self, stack: Any) -> str:
        st = self.lay.stack(stack)
        key = self.stack_names.get(st.name)
        if key is None:
            key = self.stack_names[st.name] = self.const(
                tuple(self.lay.headers[h].base for h in st.headers), "stk")
        return key

    # -- headers -----------------------------------------------------------------------------
    def header(self, node: Any, ctx: str) -> Hdr:
        """A header reference: ``{"type": "header", ...}`` or a stack dereference expression."""
        if isinstance(node, dict) and node.get("type") == "header":
            h = self.lay.header(node.get("value"))
            return Hdr(str(h.base), h.type_name, len(h.fields), h.span, h.union_siblings)
        if isinstance(node, dict) and node.get("type") == "expression":
            return self.header(node.get("value"), ctx)
        if isinstance(node, dict) and node.get("op") == "dereference_header_stack":
            sname = (node.get("left") or {}).get("value")
            st = self.lay.stack(sname)
            idx = self.data(node.get("right"), ctx)
            h0 = self.lay.headers[st.headers[0]]
            return Hdr(f"_sb({self.stack_bases(sname)}, {idx})", h0.type_name, len(h0.fields))
        if isinstance(node, dict) and node.get("op") == "?":
            # A header chosen by a condition (p4c writes ``h = c ? h1 : h2`` as assign_header
            # with this source); only the chosen branch is evaluated, as in BMv2.
            cond = self.data(node.get("cond"), ctx)
            a, b = self.header(node.get("left"), ctx), self.header(node.get("right"), ctx)
            if a.htype != b.htype:
                raise PipelineLoadError(f"{ctx}: the branches of '?' are headers of different "
                                        f"types ({a.htype!r}, {b.htype!r})")
            return Hdr(f"({a.base} if {cond} else {b.base})", a.htype, a.nfields, a.span)
        raise PipelineLoadError(f"{ctx}: expected a header reference, got {node!r}")

    def field_width(self, htype: str, offset: int) -> tuple[int, bool]:
        f = self.htypes[htype]["fields"][offset]
        return f[1], field_signed(f)

    # -- lvalues -----------------------------------------------------------------------------
    def lvalue(self, node: Any, ctx: str) -> tuple[str, int, bool]:
        """(index source, bitwidth, signed) of an assignable field."""
        if not isinstance(node, dict):
            raise PipelineLoadError(f"{ctx}: malformed lvalue {node!r}")
        t = node.get("type")
        v = node.get("value")
        if t == "field":
            slot = self.lay.field_slot(v)
            self.written.add(slot)
            return str(slot), self.lay.widths[slot], self.lay.signed[slot]
        if t == "stack_field":
            return self._stack_field(v, ctx)
        if t == "expression":
            return self.lvalue(v, ctx)
        if node.get("op") == "access_field":
            h = self.header(node.get("left"), ctx)
            off = node.get("right")
            if not isinstance(off, int) or not 0 <= off < h.nfields:
                raise PipelineLoadError(f"{ctx}: bad field offset {off!r}")
            w, s = self.field_width(h.htype, off)
            return f"{h.base} + {off}", w, s
        raise PipelineLoadError(f"{ctx}: not an assignable field: {node!r}")

    def _stack_field(self, v: Any, ctx: str) -> tuple[str, int, bool]:
        if not (isinstance(v, list) and len(v) == 2):
            raise PipelineLoadError(f"{ctx}: malformed stack_field {v!r}")
        st = self.lay.stack(v[0])
        h0: HeaderInfo = self.lay.headers[st.headers[0]]
        off = h0.field_index(v[1])
        w, s = h0.fields[off][1], h0.fields[off][2]
        # ``.last`` is element next - 1: index a tuple whose first entry stands for "no element"
        # by ``next`` itself (one subscript instead of a call per access).
        key = ("last", st.name)
        name = self.stack_names.get(key)
        if name is None:
            bases = tuple(self.lay.headers[h].base for h in st.headers)
            name = self.stack_names[key] = self.const((NO_ELEMENT, *bases), "stl")
        return f"{name}[F[{st.next_slot}]] + {off}", w, s

    def store(self, dst: tuple[str, int, bool], src: str, src_width: int | None = None) -> str:
        """Source of a statement storing ``src`` into ``dst`` with BMv2's truncation."""
        idx, w, signed = dst
        if signed:
            return f"F[{idx}] = _tcm({src}, {w})"
        if src_width is not None and src_width <= w:
            return f"F[{idx}] = {src}"
        return f"F[{idx}] = ({src}) & {(1 << w) - 1:#x}"

    # -- rvalues -----------------------------------------------------------------------------
    def data(self, node: Any, ctx: str) -> str:
        return self.rv(node, ctx)[0]

    def rv(self, node: Any, ctx: str) -> tuple[str, int | None]:
        """(Python source, known unsigned bitwidth or None) of an rvalue."""
        if self.depth >= MAX_EXPR_DEPTH:
            raise PipelineLoadError(f"{ctx}: expression nested deeper than {MAX_EXPR_DEPTH}")
        self.depth += 1
        try:
            return self._rv(node, ctx)
        finally:
            self.depth -= 1

    def width_arg(self, node: Any, ctx: str) -> int:
        """A load-time constant bit width (the right operand of the cast operators)."""
        if isinstance(node, dict) and node.get("type") == "hexstr":
            w = hexint(node.get("value"), ctx)
            if 1 <= w <= MAX_BITWIDTH:
                return w
        raise PipelineLoadError(f"{ctx}: a cast width must be a constant in 1..{MAX_BITWIDTH}, "
                                f"got {node!r}")

    def _rv(self, node: Any, ctx: str) -> tuple[str, int | None]:
        if isinstance(node, bool):
            return ("True" if node else "False"), 1
        if isinstance(node, int):
            return str(node), None
        if not isinstance(node, dict):
            raise PipelineLoadError(f"{ctx}: malformed expression {node!r}")
        t = node.get("type")
        v = node.get("value")
        if t is None and "op" in node:
            if node["op"] == "&":
                # x & c never exceeds c's width: lets stores skip a redundant mask
                lw = self.rv(node.get("left"), ctx)
                rw = self.rv(node.get("right"), ctx)
                ws = [w for w in (lw[1], rw[1]) if w is not None]
                return f"({lw[0]} & {rw[0]})", min(ws) if ws else None
            if node["op"] in ("|", "^"):
                # both sides known unsigned widths: the result fits the wider one
                lw = self.rv(node.get("left"), ctx)
                rw = self.rv(node.get("right"), ctx)
                both = lw[1] is not None and rw[1] is not None
                return (f"({lw[0]} {node['op']} {rw[0]})",
                        max(lw[1], rw[1]) if both else None)  # type: ignore[type-var]
            return self.op(node, ctx), None
        if t == "field":
            slot = self.lay.field_slot(v)
            return f"F[{slot}]", None if self.lay.signed[slot] else self.lay.widths[slot]
        if t == "hexstr":
            val = hexint(v, ctx)
            return str(val), val.bit_length() if val >= 0 else None
        if t == "bool":
            return ("True" if v else "False"), 1
        if t in ("runtime_data", "local"):
            if not isinstance(v, int) or v < 0:
                raise PipelineLoadError(f"{ctx}: bad runtime_data index {v!r}")
            if self.nparams is not None and v >= self.nparams:
                raise PipelineLoadError(f"{ctx}: runtime_data index {v} out of range")
            w = self.param_widths[v] if v < len(self.param_widths) else None
            return f"D[{v}]", w
        if t == "expression":
            return self.rv(v, ctx)
        if t == "stack_field":
            idx, w, s = self._stack_field(v, ctx)
            return f"F[{idx}]", None if s else w
        if t == "lookahead":
            if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v)):
                raise PipelineLoadError(f"{ctx}: malformed lookahead {v!r:.80}")
            off, w = v
            if not (0 <= off <= MAX_LOOKAHEAD_OFFSET and 0 <= w <= MAX_LOOKAHEAD_WIDTH):
                # p4c writes [bit offset, width] of a bit<W> (W <= 4096) at offset >= 0
                raise PipelineLoadError(f"{ctx}: lookahead offset/width {v!r:.80} out of range "
                                        f"(0..{MAX_LOOKAHEAD_OFFSET}, 0..{MAX_LOOKAHEAD_WIDTH})")
            if off >= 0 and w > 0 and off % 8 == 0 and w % 8 == 0:
                # Whole bytes at a byte offset (the usual case): read them in place. The
                # bounds check comes first; ``_lashort`` raises PacketTooShort.
                o, k = off // 8, w // 8
                if k == 1:
                    return f"(B[pos + {o}] if pos + {o} < n else _lashort(pos))", w
                return (f"(int.from_bytes(B[pos + {o}:pos + {o + k}], 'big') "
                        f"if pos + {o + k} <= n else _lashort(pos))"), w
            return f"_la(B, n, pos, {off}, {w})", w
        if t == "register":
            if not (isinstance(v, list) and len(v) == 2):
                raise PipelineLoadError(f"{ctx}: malformed register reference {v!r}")
            reg = self.registers.get(v[0])
            if reg is None:
                raise PipelineLoadError(f"{ctx}: unknown register array {v[0]!r}")
            r = self.const(reg, "reg")
            return f"_regget({r}, {self.data(v[1], ctx)})", reg.bitwidth
        if t == "string":
            return repr(str(v)), None
        if t == "header":
            h = self.header(node, ctx)
            return f"F[{h.base} + {h.nfields}]", 1
        raise PipelineLoadError(f"{ctx}: unsupported expression type {t!r}")

    def shl(self, value: str, amount: Any, ctx: str) -> str:
        """Source of ``value << amount``: inline for a small constant amount, else through
        :func:`shift_left`, which bounds the work whatever the amount."""
        if isinstance(amount, dict) and amount.get("type") == "hexstr":
            k = hexint(amount.get("value"), ctx)
            if 0 <= k <= SHIFT_LIMIT:
                return f"({value} << {k})"
        return f"_shl({value}, {self.data(amount, ctx)})"

    def op(self, e: dict, ctx: str) -> str:
        o = e.get("op")
        left = e.get("left")
        right = e.get("right")
        if o in BINARY:
            return f"({self.data(left, ctx)} {BINARY[o]} {self.data(right, ctx)})"
        if o == "<<":
            return self.shl(self.data(left, ctx), right, ctx)
        if o == "not":
            return f"(not {self.data(right, ctx)})"
        if o == "~":
            return f"(~{self.data(right, ctx)})"
        if o == "valid":
            h = self.header(right, ctx)
            return f"(F[{h.base} + {h.nfields}] == 1)"
        if o == "valid_union":
            uname = (right or {}).get("value") if isinstance(right, dict) else None
            members = self.lay.unions.get(uname)
            if members is None:
                raise PipelineLoadError(f"{ctx}: unknown header union {uname!r}")
            slots = [self.lay.headers[m].valid_slot for m in members]
            return "(" + " or ".join(f"F[{s}] == 1" for s in slots) + ")"
        if o == "d2b":
            return f"({self.data(right, ctx)} != 0)"
        if o == "b2d":
            return f"(1 if {self.data(right, ctx)} else 0)"
        if o == "two_comp_mod":
            return f"_tcm({self.data(left, ctx)}, {self.width_arg(right, ctx)})"
        if o == "sat_cast":
            return f"_sat({self.data(left, ctx)}, {self.width_arg(right, ctx)})"
        if o == "usat_cast":
            return f"_usat({self.data(left, ctx)}, {self.width_arg(right, ctx)})"
        if o == "?":
            c = self.data(e.get("cond"), ctx)
            return f"({self.data(left, ctx)} if {c} else {self.data(right, ctx)})"
        if o == "last_stack_index":
            st = self.lay.stack((right or {}).get("value"))
            return f"(F[{st.next_slot}] - 1)"
        if o == "size_stack":
            st = self.lay.stack((right or {}).get("value"))
            return f"F[{st.next_slot}]"
        if o == "access_field":
            h = self.header(left, ctx)
            if not isinstance(right, int) or not 0 <= right < h.nfields:
                raise PipelineLoadError(f"{ctx}: bad field offset {right!r}")
            return f"F[{h.base} + {right}]"
        raise PipelineLoadError(f"{ctx}: unsupported expression operator {o!r}")
