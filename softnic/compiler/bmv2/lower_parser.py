"""Lowering of a P4 parser to a BMv2 ``parsers`` entry.

Select keys must be fields, ``stack_field``s or ``lookahead`` windows in BMv2; any other key
expression is first ``set`` into a scalar temporary, as p4c does. Keyset values and masks are the
byte-padded concatenation of the key elements (JSON_format.md, "parsers"). BMv2 transitions know
only value/mask, so a range keyset ``lo .. hi`` is expanded into several masked transitions (for a
tuple, the cartesian product), the same expansion p4c's ReplaceSelectRange pass performs.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.bmv2.context import LowerContext
from softnic.compiler.bmv2.layout import FieldLoc, JsonLoc, Loc
from softnic.compiler.bmv2.lower_expr import field_ref, hex_text, wrap_param
from softnic.compiler.bmv2.lower_stmt import StmtLowerer
from softnic.compiler.diagnostics import error
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.types import VALUE_SET_KIND, ValueSetT, bit_width, value_set_width


def lower_parser(prog: LowerContext, d: ast.ParserDecl, env: dict[int, Loc]) -> dict[str, Any]:
    states = []
    for st in d.states:
        states.append(lower_state(prog, st, env))
    return {"name": "parser", "id": 0, "init_state": "start", "parse_states": states}


def parse_vsets(prog: LowerContext, d: ast.ParserDecl) -> list[dict[str, Any]]:
    """The JSON's ``parse_vsets``: the parser's value sets in declaration order, each with its
    control-plane name, ``compressed_bitwidth`` (the width of its element type) and
    ``max_size``, the declared size (p4c ParserConverter and JsonObjects::add_parse_vset since
    p4c#2185/#2195; JSON_format.md "parse_vsets")."""
    out: list[dict[str, Any]] = []
    for loc in d.locals:
        sym = prog.chk.decl_syms.get(id(loc))
        if sym is None or sym.kind != VALUE_SET_KIND:
            continue
        assert isinstance(sym.type, ValueSetT)
        out.append({"name": sym.qualified, "id": len(out),
                    "compressed_bitwidth": value_set_width(sym.type.elem),
                    "max_size": sym.type.size})
    return out


def lower_state(prog: LowerContext, st: ast.ParserState, env: dict[int, Loc]) -> dict[str, Any]:
    sl = StmtLowerer(prog, env, mode="parser")
    sl.stmts(st.stmts)
    tr = st.transition
    assert tr is not None
    key: list[dict[str, Any]] = []
    widths: list[int] = []
    transitions: list[dict[str, Any]] = []
    if not tr.select_exprs:
        transitions.append(default_transition(prog, tr.next_state or "", tr))
    else:
        for k in tr.select_exprs:
            key.append(select_key(sl, k))
            widths.append(bit_width(sl.x.type(k)))
        for c in tr.cases:
            transitions.extend(case_transition(prog, sl, c, widths))
    return {
        "name": st.name,
        "id": prog.next_id("parse_state"),
        "parser_ops": sl.ops,
        "transitions": transitions,
        "transition_key": key,
    }


def next_state(prog: LowerContext, name: str, node: ast.Node) -> Any:
    if name == "reject":
        # p4c's ParserConverter::stateName: the position is the state's name in the transition
        loc = getattr(node, "state_loc", None)
        prog.warn(node, "Explicit transition to reject not supported on this target",
                  "unsupported", len(name), loc if loc is not None and loc.line > 0 else None)
        return None
    return None if name == "accept" else name


def default_transition(prog: LowerContext, name: str, node: ast.Node) -> dict[str, Any]:
    return {"type": "default", "value": None, "mask": None,
            "next_state": next_state(prog, name, node)}


def select_key(sl: StmtLowerer, k: ast.Expr) -> dict[str, Any]:
    if isinstance(k, ast.Call) and sl.x.is_lookahead(k):
        return sl.x.lookahead_json(k)
    if isinstance(k, ast.Member) and isinstance(k.expr, ast.Call) and sl.x.is_lookahead(k.expr):
        return sl.x.lookahead_json(k.expr, k.name)
    loc = sl.x.loc(k)
    if isinstance(loc, FieldLoc):
        return field_ref(loc.header, loc.field)
    if isinstance(loc, JsonLoc) and loc.json.get("type") == "stack_field":
        return loc.json
    t = sl.x.type(k)
    tmp = sl.prog.layout.add_scalar("tmp", t)
    ref = field_ref(tmp.header, tmp.field)
    sl.ops.append({"op": "set", "parameters": [ref, wrap_param(sl.x.data(k))]})
    return ref


def case_transition(prog: LowerContext, sl: StmtLowerer, c: ast.SelectCase,
                    widths: list[int]) -> list[dict[str, Any]]:
    """One select case as BMv2 transitions: several when a range keyset is expanded."""
    ks = c.keyset
    if isinstance(ks, (ast.Default, ast.DontCare)):
        return [default_transition(prog, c.state, c)]
    vs = prog.chk.syms.get(id(ks))
    if vs is not None and vs.kind == VALUE_SET_KIND:
        # p4c ParserConverter: the set's control-plane name, no mask (BMv2 matches the key,
        # its fields concatenated without padding, against the set's members)
        return [{"type": "parse_vset", "value": vs.qualified, "mask": None,
                 "next_state": next_state(prog, c.state, c)}]
    elems = ks.elems if isinstance(ks, ast.ListExpr) and len(widths) > 1 else [ks]
    if isinstance(ks, ast.ListExpr) and len(widths) == 1 and len(ks.elems) == 1:
        elems = ks.elems
    # each element becomes a list of (value, mask, masked) alternatives; ranges expand into
    # several, and a tuple with ranges becomes the cartesian product (p4c ReplaceSelectRange)
    combos: list[list[tuple[int, int, bool]]] = [[]]
    for el, w in zip(elems, widths, strict=False):
        alts = keyset_alternatives(sl, el, w)
        combos = [prev + [alt] for prev in combos for alt in alts]
    out = []
    nxt = next_state(prog, c.state, c)
    for combo in combos:
        value = ""
        mask = ""
        for (v, m, _), w in zip(combo, widths, strict=False):
            nbytes = (w + 7) // 8
            value += hex_text(v & m, w)[2:].rjust(nbytes * 2, "0")
            mask += hex_text(m, w)[2:].rjust(nbytes * 2, "0")
        masked = any(x[2] for x in combo)
        out.append({"type": "hexstr", "value": "0x" + value,
                    "mask": ("0x" + mask) if masked else None, "next_state": nxt})
    return out


def keyset_alternatives(sl: StmtLowerer, el: ast.Expr, w: int) -> list[tuple[int, int, bool]]:
    full = (1 << w) - 1
    if isinstance(el, (ast.Default, ast.DontCare)):
        return [(0, 0, True)]
    if isinstance(el, ast.Binary) and el.op == "..":
        lo, hi = sl.x.const(el.left), sl.x.const(el.right)
        if lo is None or hi is None:
            raise error(el, f"{show_expr(el)}: Range boundaries must be a compile-time constants.")
        t = sl.x.type(el.left)
        signed = getattr(t, "signed", False)
        return [(v, m, True) for v, m in range_to_masks(int(lo), int(hi), w, signed)]
    if isinstance(el, ast.Binary) and el.op == "&&&":
        v, m = sl.x.const(el.left), sl.x.const(el.right)
        masked = True
    else:
        v, m = sl.x.const(el), full
        masked = False
    if v is None or m is None:
        raise error(el, f"{show_expr(el)}: keyset must be a compile-time constant")
    return [(int(v) & full, int(m) & full, masked)]


def range_to_masks(lo: int, hi: int, width: int, signed: bool = False) -> list[tuple[int, int]]:
    """Cover ``lo..hi`` with value/mask pairs, in ascending order, as p4c's midend does before
    the BMv2 back end sees the select (BMv2 parser transitions only know value/mask). An empty
    range (hi < lo) gives no pairs; a signed range crossing zero is split at zero."""
    if hi < lo:
        return []
    if signed and lo < 0 <= hi:
        return _expand(lo, -1, width) + _expand(0, hi, width)
    return _expand(lo, hi, width)


def _expand(lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    full = (1 << width) - 1
    if lo < 0:
        lo, hi = lo + full + 1, hi + full + 1
    out = []
    remaining = hi - lo + 1
    while remaining > 0:
        if lo == 0:
            stride = 1 << ((hi + 1).bit_length() - 1)
        else:
            stride = lo & -lo  # the largest aligned block starting at lo
        while stride > remaining:
            stride >>= 1
        out.append((lo, ~(stride - 1) & full))
        remaining -= stride
        lo += stride
    return out
