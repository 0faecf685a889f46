"""Lowering of a P4 parser to a BMv2 ``parsers`` entry.

Select keys must be fields, ``stack_field``s or ``lookahead`` windows in BMv2; any other key
expression is first ``set`` into a scalar temporary, as p4c does. Keyset values and masks are the
byte-padded concatenation of the key elements (JSON_format.md, "parsers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softnic.frontend import ast
from softnic.frontend.check import err
from softnic.frontend.layout import FieldLoc, JsonLoc, Loc
from softnic.frontend.lower_expr import field_ref, hex_text, wrap_param
from softnic.frontend.lower_stmt import StmtLowerer
from softnic.frontend.pretty import show_expr
from softnic.frontend.types import bit_width

if TYPE_CHECKING:
    from softnic.frontend.lower import Program


def lower_parser(prog: Program, d: ast.ParserDecl, env: dict[int, Loc]) -> dict[str, Any]:
    states = []
    for st in d.states:
        states.append(lower_state(prog, st, env))
    return {"name": "parser", "id": 0, "init_state": "start", "parse_states": states}


def lower_state(prog: Program, st: ast.ParserState, env: dict[int, Loc]) -> dict[str, Any]:
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
            transitions.append(case_transition(prog, sl, c, widths))
    return {
        "name": st.name,
        "id": prog.next_id("parse_state"),
        "parser_ops": sl.ops,
        "transitions": transitions,
        "transition_key": key,
    }


def next_state(prog: Program, name: str, node: ast.Node) -> Any:
    if name == "reject":
        prog.warn(node, "Explicit transition to reject not supported on this target")
        return None
    return None if name == "accept" else name


def default_transition(prog: Program, name: str, node: ast.Node) -> dict[str, Any]:
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


def case_transition(prog: Program, sl: StmtLowerer, c: ast.SelectCase,
                    widths: list[int]) -> dict[str, Any]:
    ks = c.keyset
    if isinstance(ks, (ast.Default, ast.DontCare)):
        return default_transition(prog, c.state, c)
    elems = ks.elems if isinstance(ks, ast.ListExpr) and len(widths) > 1 else [ks]
    if isinstance(ks, ast.ListExpr) and len(widths) == 1 and len(ks.elems) == 1:
        elems = ks.elems
    value = ""
    mask = ""
    masked = False
    for el, w in zip(elems, widths, strict=False):
        nbytes = (w + 7) // 8
        full = (1 << w) - 1
        if isinstance(el, (ast.Default, ast.DontCare)):
            v, m = 0, 0
            masked = True
        elif isinstance(el, ast.Binary) and el.op == "&&&":
            v, m = sl.x.const(el.left), sl.x.const(el.right)
            masked = True
        elif isinstance(el, ast.Binary) and el.op == "..":
            raise err(el, f"{show_expr(el)}: range keysets in select are unsupported on this "
                      "target")
        else:
            v, m = sl.x.const(el), full
        if v is None or m is None:
            raise err(el, f"{show_expr(el)}: keyset must be a compile-time constant")
        v, m = int(v) & full, int(m) & full
        value += hex_text(v & m, w)[2:].rjust(nbytes * 2, "0")
        mask += hex_text(m, w)[2:].rjust(nbytes * 2, "0")
    return {
        "type": "hexstr",
        "value": "0x" + value,
        "mask": ("0x" + mask) if masked else None,
        "next_state": next_state(prog, c.state, c),
    }
