"""The primitive registry: one small code generator per BMv2 primitive.

As behavioral-model registers one class per primitive (``REGISTER_PRIMITIVE``), softnic
registers one function per primitive name here with :func:`primitive`. Each gets a
:class:`Call` (the generator context, the JSON parameters, where it is for messages, and
helpers to check and read its parameters) and returns the Python statements it compiles to.
A primitive that needs a temporary asks :meth:`Call.tmp` for its own, so no two primitives
share hidden locals.

``_jump`` / ``_jump_if_zero`` are not here: they are control flow inside an action, handled by
``gen_actions``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.gen_base import GenContext

Generator = Callable[["Call"], list[str]]
REGISTRY: dict[str, Generator] = {}


def primitive(*ops: str) -> Callable[[Generator], Generator]:
    """Register ``fn`` as the generator of the primitives named ``ops``."""
    def register(fn: Generator) -> Generator:
        for op in ops:
            if op in REGISTRY:
                raise ValueError(f"primitive {op!r} registered twice")
            REGISTRY[op] = fn
        return fn
    return register


@dataclass
class Call:
    ctx: GenContext
    op: str
    args: list[Any]
    where: str  # "action 'x': primitive 'op'", for messages

    def nargs(self, *counts: int) -> None:
        if len(self.args) not in counts:
            raise PipelineLoadError(f"{self.where}: expected {counts} parameters, "
                                    f"got {len(self.args)}")

    def arg(self, i: int) -> str:
        """Source of parameter ``i`` as an rvalue."""
        return self.ctx.eg.data(self.args[i], self.where)

    def lvalue(self, i: int) -> tuple[str, int, bool]:
        return self.ctx.eg.lvalue(self.args[i], self.where)

    def value(self, i: int) -> Any:
        """The ``value`` member of parameter ``i`` (None when it has none)."""
        a = self.args[i]
        return a.get("value") if isinstance(a, dict) else None

    def named(self, i: int, kind: str, table: dict) -> Any:
        a = self.args[i]
        if not isinstance(a, dict) or a.get("type") != kind \
                or not isinstance(a.get("value"), str) or a["value"] not in table:
            raise PipelineLoadError(f"{self.where}: parameter {i} must name a known {kind}: "
                                    f"{a!r:.80}")
        return table[a["value"]]

    def list_id(self, i: int, known: dict, kind: str) -> int:
        """A field-list / learn-list id parameter (0 means none)."""
        lid = hexint(self.value(i), self.where)
        if lid and lid not in known:
            raise PipelineLoadError(f"{self.where}: unknown {kind} id {lid}")
        return lid

    def tmp(self) -> str:
        return self.ctx.tmp()


def emit(ctx: GenContext, p: Any, where: str) -> list[str]:
    """Statements of one primitive call from an action or parser body."""
    if not isinstance(p, dict) or not isinstance(p.get("op"), str):
        raise PipelineLoadError(f"{where}: malformed primitive {p!r}")
    op = p["op"]
    args = p.get("parameters", [])
    if not isinstance(args, list):
        raise PipelineLoadError(f"{where}: primitive {op!r} parameters must be an array")
    gen = REGISTRY.get(op)
    if gen is None:
        raise PipelineLoadError(f"{where}: unsupported primitive {op!r}")
    return gen(Call(ctx, op, args, f"{where}: primitive {op!r}"))


# -- assignments ------------------------------------------------------------------------------
@primitive("assign", "modify_field")
def _assign(c: Call) -> list[str]:
    c.nargs(2)
    if isinstance(c.args[0], dict) and c.args[0].get("type") == "header":
        return _assign_header(Call(c.ctx, "assign_header", c.args, c.where))
    src, sw = c.ctx.eg.rv(c.args[1], c.where)
    return [c.ctx.eg.store(c.lvalue(0), src, sw)]


@primitive("assign_header", "copy_header")
def _assign_header(c: Call) -> list[str]:
    c.nargs(2)
    d = c.ctx.eg.header(c.args[0], c.where)
    s = c.ctx.eg.header(c.args[1], c.where)
    td, ts = c.tmp(), c.tmp()
    # BMv2's core assign_header: an invalid source only makes the destination invalid (its
    # fields stay); a valid one is copied whole, and a union member made valid this way
    # invalidates its siblings.
    return [f"{td} = {d.base}", f"{ts} = {s.base}",
            f"if F[{ts} + {s.nfields}]:",
            f"    F[{td}:{td} + {d.span}] = F[{ts}:{ts} + {d.span}]"] + [
                f"    F[{vs}] = 0" for vs in d.siblings] + [
            "else:", f"    F[{td} + {d.nfields}] = 0"]


@primitive("assign_union")
def _assign_union(c: Call) -> list[str]:
    c.nargs(2)
    lay = c.ctx.lay
    du = lay.unions.get(c.value(0)) if isinstance(c.value(0), str) else None
    su = lay.unions.get(c.value(1)) if isinstance(c.value(1), str) else None
    if du is None or su is None or len(du) != len(su):
        raise PipelineLoadError(f"{c.where}: expected two header unions of the same type")
    out = []
    for dn, sn in zip(du, su, strict=True):
        a, b = lay.headers[dn], lay.headers[sn]
        out.append(f"F[{a.base}:{a.base + a.span}] = F[{b.base}:{b.base + b.span}]")
    return out


@primitive("assign_VL")
def _assign_vl(c: Call) -> list[str]:
    c.nargs(2)
    lay = c.ctx.lay
    d = c.lvalue(0)
    dref, sref = c.value(0), c.value(1)
    dh = lay.headers.get(dref[0]) if isinstance(dref, list) and dref else None
    sh = lay.headers.get(sref[0]) if isinstance(sref, list) and sref else None
    if dh is None or sh is None or dh.vl_index is None or sh.vl_index is None:
        raise PipelineLoadError(f"{c.where}: expected two varbit fields")
    return [f"F[{d[0]}] = F[{lay.field_slot(sref)}]", f"F[{dh.len_slot}] = F[{sh.len_slot}]"]


@primitive("assign_header_stack")
def _assign_header_stack(c: Call) -> list[str]:
    c.nargs(2)
    lay = c.ctx.lay
    ds, ss = lay.stack(c.value(0)), lay.stack(c.value(1))
    out = []
    for dh, sh in zip(ds.headers, ss.headers, strict=False):
        a, b = lay.headers[dh], lay.headers[sh]
        n = len(a.fields) + 1
        out.append(f"F[{a.base}:{a.base + n}] = F[{b.base}:{b.base + n}]")
    out.append(f"F[{ds.next_slot}] = F[{ss.next_slot}]")
    return out


# -- arithmetic -------------------------------------------------------------------------------
@primitive("add_to_field", "subtract_from_field")
def _add_to_field(c: Call) -> list[str]:
    c.nargs(2)
    dst = c.lvalue(0)
    sign = "+" if c.op == "add_to_field" else "-"
    return [c.ctx.eg.store(dst, f"F[{dst[0]}] {sign} {c.arg(1)}")]


_BINOPS = {"add": "+", "subtract": "-", "bit_and": "&", "bit_or": "|", "bit_xor": "^",
           "shift_right": ">>"}


@primitive(*_BINOPS)
def _binop(c: Call) -> list[str]:
    c.nargs(3)
    return [c.ctx.eg.store(c.lvalue(0), f"{c.arg(1)} {_BINOPS[c.op]} {c.arg(2)}")]


@primitive("shift_left")
def _shift_left(c: Call) -> list[str]:
    c.nargs(3)
    return [c.ctx.eg.store(c.lvalue(0), c.ctx.eg.shl(c.arg(1), c.args[2], c.where))]


# -- header validity and stacks ---------------------------------------------------------------
@primitive("add_header")
def _add_header(c: Call) -> list[str]:
    c.nargs(1)
    ctx = c.ctx
    h = ctx.eg.header(c.args[0], c.where)
    zeros = ctx.eg.const([0] * h.nfields, "z")
    ctx.len_changes = True
    b = c.tmp()
    return [f"{b} = {h.base}", f"if not F[{b} + {h.nfields}]:",
            f"    F[{b}:{b} + {h.nfields}] = {zeros}", f"    F[{b} + {h.nfields}] = 1",
            f"    F[{ctx.lay.len_reg}] += {ctx.header_nbytes(h, b)}"] + [
                f"F[{vs}] = 0" for vs in h.siblings]


@primitive("add_header_fast")
def _add_header_fast(c: Call) -> list[str]:
    """simple_switch's add_header_fast: only marks the header valid (no reset, no length)."""
    c.nargs(1)
    h = c.ctx.eg.header(c.args[0], c.where)
    b = c.tmp()
    return [f"{b} = {h.base}", f"F[{b} + {h.nfields}] = 1"] + [f"F[{vs}] = 0" for vs in h.siblings]


@primitive("remove_header")
def _remove_header(c: Call) -> list[str]:
    c.nargs(1)
    ctx = c.ctx
    h = ctx.eg.header(c.args[0], c.where)
    ctx.len_changes = True
    b = c.tmp()
    return [f"{b} = {h.base}", f"if F[{b} + {h.nfields}]:", f"    F[{b} + {h.nfields}] = 0",
            f"    F[{ctx.lay.len_reg}] -= {ctx.header_nbytes(h, b)}"]


@primitive("push", "pop")
def _push_pop(c: Call) -> list[str]:
    c.nargs(2)
    lay = c.ctx.lay
    sname = c.value(0)
    helper = "_push" if c.op == "push" else "_pop"
    count = c.args[1]
    if isinstance(count, dict) and count.get("type") == "hexstr" \
            and hexint(count.get("value"), c.where) < 0:
        # BMv2 reads the count as an unsigned int; p4c writes a non-negative constant
        raise PipelineLoadError(f"{c.where}: {c.op} count {count.get('value')!r:.40} is "
                                "negative")
    if isinstance(c.args[0], dict) and c.args[0].get("type") == "header_union_stack":
        return _push_pop_unions(c, helper)
    st = lay.stack(sname)
    nf = len(lay.headers[st.headers[0]].fields)
    return [f"{helper}(F, {c.ctx.eg.stack_bases(sname)}, {nf}, {st.next_slot}, {c.arg(1)})"]


def _push_pop_unions(c: Call, helper: str) -> list[str]:
    """push/pop on a stack of header unions (BMv2's StackIface over a union stack): each
    element union moves as a whole, i.e. every member column (member m of every element)
    shifts by the same count; only the last column's call updates nextIndex."""
    lay = c.ctx.lay
    us = lay.union_stack(c.value(0))
    n = c.tmp()
    out = [f"{n} = {c.arg(1)}"]
    for m, mname in enumerate(us.members):
        hs = [lay.union_stack_member(us, i, mname) for i in range(len(us.unions))]
        bases = c.ctx.eg.const(tuple(h.base for h in hs), "ub")
        nx = us.next_slot if m == len(us.members) - 1 else us.scratch
        out.append(f"{helper}(F, {bases}, {len(hs[0].fields)}, {nx}, {n})")
    return out


# -- packet fate ------------------------------------------------------------------------------
@primitive("mark_to_drop", "drop")
def _mark_to_drop(c: Call) -> list[str]:
    """egress_spec = the switch's drop port (511 unless ``--drop-port`` says otherwise)."""
    ctx = c.ctx
    out = []
    if ctx.sm_espec is not None:
        out.append(f"F[{ctx.sm_espec}] = {int(ctx.drop_port)}")
    if ctx.sm_mcast is not None:
        out.append(f"F[{ctx.sm_mcast}] = 0")
    return out or ["pass"]


@primitive("exit")
def _exit(c: Call) -> list[str]:
    """BMv2's exit_ only marks the packet for exit: the rest of the action still runs, and the
    pipeline stops before its next table or condition (Pipeline::apply)."""
    c.nargs(0)
    return ["S.exited = True"]


@primitive("no_op", "_nop")
def _no_op(c: Call) -> list[str]:
    return ["pass"]


@primitive("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress")
def _clone(c: Call) -> list[str]:
    c.nargs(1, 2)
    fl = c.list_id(1, c.ctx.p.field_lists, "field list") if len(c.args) == 2 else 0
    return [f"S.clone = ({c.arg(0)}, {fl})"]


@primitive("resubmit", "recirculate")
def _resubmit(c: Call) -> list[str]:
    """Sets ``S.resubmit`` or ``S.recirculate`` (the registered name) to the field list id."""
    c.nargs(0, 1)
    fl = c.list_id(0, c.ctx.p.field_lists, "field list") if c.args else 0
    return [f"S.{c.op} = {fl}"]


@primitive("truncate")
def _truncate(c: Call) -> list[str]:
    c.nargs(1)
    # BMv2 keeps the smallest length of all the calls in a pass (Packet::truncate).
    v = c.tmp()
    return [f"{v} = {c.arg(0)}", f"if not S.truncate or {v} < S.truncate:",
            f"    S.truncate = {v}"]


@primitive("generate_digest")
def _generate_digest(c: Call) -> list[str]:
    c.nargs(2)
    lid = hexint(c.value(1), c.where)
    if lid not in c.ctx.p.learn_lists:
        raise PipelineLoadError(f"{c.where}: unknown learn list id {lid}")
    return [f"S.digests = S.digests + ({lid},)"]


# -- debugging --------------------------------------------------------------------------------
@primitive("log_msg")
def _log_msg(c: Call) -> list[str]:
    c.nargs(1, 2)
    fmt = c.value(0)
    if not isinstance(fmt, str):
        raise PipelineLoadError(f"{c.where}: format must be a string")
    vals = []
    if len(c.args) == 2:
        vec = c.value(1)
        if not isinstance(vec, list):
            raise PipelineLoadError(f"{c.where}: expected a parameters_vector")
        vals = [c.ctx.eg.data(x, c.where) for x in vec]
    return ["if S.logs is not None:",
            f"    S.logs.append(_logfmt({fmt!r}, [{', '.join(vals)}]))"]


@primitive("assert", "assume")
def _assert(c: Call) -> list[str]:
    c.nargs(1)
    return [f"if not {c.arg(0)}:", f"    raise _AF({c.op!r} + ' failed')"]


# -- externs ----------------------------------------------------------------------------------
@primitive("register_read")
def _register_read(c: Call) -> list[str]:
    c.nargs(3)
    reg = c.named(1, "register_array", c.ctx.registers)
    # In place rather than through _regget: one call less per read. An out-of-range index
    # leaves the destination as it was (BMv2's register_read logs an error and does not
    # update it).
    i = c.tmp()
    r = c.ctx.eg.const(reg, "reg")
    return [f"{i} = {c.arg(2)}", f"if 0 <= {i} < {reg.size}:",
            "    " + c.ctx.eg.store(c.lvalue(0), f"{r}.cells[{i}]", reg.bitwidth)]


@primitive("register_write")
def _register_write(c: Call) -> list[str]:
    c.nargs(3)
    reg = c.named(0, "register_array", c.ctx.registers)
    r = c.ctx.eg.const(reg, "reg")
    i = c.tmp()
    return [f"{i} = {c.arg(1)}", f"if 0 <= {i} < {reg.size}:",
            f"    {r}.cells[{i}] = ({c.arg(2)}) & {reg.mask:#x}"]


def _plen(c: Call) -> str:
    return f"F[{c.ctx.sm_plen}]" if c.ctx.sm_plen is not None else "0"


@primitive("count")
def _count(c: Call) -> list[str]:
    c.nargs(2)
    cnt = c.named(0, "counter_array", c.ctx.counters)
    return [f"{c.ctx.eg.const(cnt, 'cnt')}.count({c.arg(1)}, {_plen(c)})"]


@primitive("execute_meter")
def _execute_meter(c: Call) -> list[str]:
    c.nargs(3)
    m = c.named(0, "meter_array", c.ctx.meters)
    # out of range: no meter runs and the destination keeps its value (BMv2's execute_meter)
    i = c.tmp()
    return [f"{i} = {c.arg(1)}", f"if 0 <= {i} < {m.size}:",
            "    " + c.ctx.eg.store(c.lvalue(2),
                                    f"{c.ctx.eg.const(m, 'mtr')}.execute({i}, {_plen(c)})", 2)]


@primitive("modify_field_with_hash_based_offset")
def _hash(c: Call) -> list[str]:
    c.nargs(4)
    hf = c.ctx.calcs.hash_fn(c.value(2), c.where)
    m, hv = c.tmp(), c.tmp()
    return [f"{m} = {c.arg(3)}", f"{hv} = {hf}(F, b'')",
            c.ctx.eg.store(c.lvalue(0), f"{c.arg(1)} + ({hv} % {m} if {m} else {hv})")]


@primitive("modify_field_rng_uniform")
def _random(c: Call) -> list[str]:
    c.nargs(3)
    return [c.ctx.eg.store(c.lvalue(0), f"_rand({c.arg(1)}, {c.arg(2)})")]
