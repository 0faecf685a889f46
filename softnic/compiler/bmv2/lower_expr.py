"""Lowering of P4 expressions to BMv2 JSON type-value objects.

BMv2 evaluates arithmetic with unbounded precision and only truncates when a value is stored, so,
like p4c, we wrap every operation that can overflow its P4 width (``+ - * << ~``, negation,
narrowing casts) in ``& 0xff..`` (or ``two_comp_mod`` for signed values). BMv2 also keeps booleans
and bit values apart: a bool stored in a field is data and must be read through ``d2b``; a boolean
expression stored into a field goes through ``b2d``. :class:`Val` carries which of the two a JSON
value is so the conversions are inserted exactly where needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from softnic.compiler.bmv2.layout import (
    DynHeaderLoc,
    FieldLoc,
    HeaderLoc,
    JsonLoc,
    Loc,
    StackLastLoc,
    StackLoc,
    StackNextLoc,
    StackNextMemberLoc,
    StructLoc,
    UnionLoc,
)
from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check import (
    Checker,
    CompileError,
    mask,
)
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    HeaderT,
    InfIntT,
    PType,
    StackT,
    StructT,
    TupleT,
    UnionT,
    VarbitT,
    bit_width,
)

Env = dict[int, Loc]  # id(Sym) -> where the variable lives


def hexstr(value: int, width: int | None = None) -> dict[str, Any]:
    """``{"type": "hexstr"}`` with p4c's zero padding to the type's byte width."""
    return {"type": "hexstr", "value": hex_text(value, width)}


def hex_text(value: int, width: int | None = None) -> str:
    if value < 0:
        return "-" + hex_text(-value, width)
    digits = f"{value:x}"
    if width is not None:
        n = max(1, (width + 7) // 8) * 2
        digits = digits.rjust(n, "0")
    elif len(digits) % 2:
        digits = "0" + digits
    return "0x" + digits


def op(o: str, left: dict[str, Any] | None, right: dict[str, Any]) -> dict[str, Any]:
    return {"type": "expression", "value": {"op": o, "left": inner(left), "right": inner(right)}}


def inner(j: dict[str, Any] | None) -> dict[str, Any] | None:
    """Action parameters are ``runtime_data`` at the top of a primitive argument but
    ``local`` inside an expression tree (JSON_format.md)."""
    if j is not None and j.get("type") == "runtime_data":
        return {"type": "local", "value": j["value"]}
    return j


@dataclass
class Val:
    json: dict[str, Any]
    is_bool: bool = False  # True: a BMv2 boolean value; False: data


def field_ref(h: str, f: str) -> dict[str, Any]:
    return {"type": "field", "value": [h, f]}


class ExprLowerer:
    def __init__(self, chk: Checker, env: Env, in_parser: bool = False) -> None:
        self.chk = chk
        self.env = env
        self.in_parser = in_parser
        # Parser states set this: it moves a lookahead found inside an expression into a
        # temporary (a ``set`` op) and returns that field, since BMv2 takes ``lookahead`` only
        # as a whole ``set`` source or a transition key, never inside an expression.
        self.spill: Callable[[dict[str, Any], PType], dict[str, Any]] | None = None
        # Set by an action's statement lowering while it computes the left-hand side of an
        # assignment under an if: a run-time stack index goes through it (p4c's Predication
        # reads the index into a temporary, ``c ? i : 0``), so the element written when the
        # condition is false is element 0 and an index out of range is never dereferenced.
        self.index_guard: Callable[[dict[str, Any], PType], dict[str, Any]] | None = None

    # ------------------------------------------------------------------ helpers

    def type(self, e: ast.Expr) -> PType:
        t = self.chk.types.get(id(e))
        if t is None:
            raise error(e, f"{show_expr(e)}: internal error: expression was not type-checked")
        return t

    def const(self, e: ast.Expr) -> Any:
        """Compile-time value of ``e`` or None (the checker's own folding, over what it found)."""
        return self.chk.const_eval(e, None)

    # ------------------------------------------------------------------ locations

    def loc(self, e: ast.Expr) -> Loc | None:
        """The storage an lvalue-shaped expression denotes, or None for computed values."""
        if isinstance(e, ast.PathExpr):
            sym = self.chk.syms.get(id(e))
            if sym is None or sym.kind != "var":
                return None
            loc = self.env.get(id(sym))
            if loc is None:
                raise error(e, f"{e.name}: internal error: no storage for variable")
            return loc
        if isinstance(e, ast.Member):
            base = self.loc(e.expr)
            if base is None:
                if isinstance(e.expr, ast.Call):
                    return None
                return None
            return self.member_loc(base, e)
        if isinstance(e, ast.Index):
            base = self.loc(e.expr)
            if not isinstance(base, StackLoc):
                return None
            i = self.const(e.index)
            if isinstance(i, int):
                return base.elems[i]
            if isinstance(base.type.elem, UnionT):
                # p4c writes dereference_union_stack / access_union_header here
                raise error(e, f"{show_expr(e)}: softnic does not support a run-time index into "
                            "a stack of header unions yet; use a constant index")
            assert isinstance(base.type.elem, HeaderT)
            idx = self.data(e.index)
            if self.index_guard is not None:
                idx = self.index_guard(idx, self.type(e.index))
            j = {
                "type": "expression",
                "value": {
                    "op": "dereference_header_stack",
                    "left": {"type": "header_stack", "value": base.name},
                    "right": inner(idx),
                },
            }
            return DynHeaderLoc(j, base.type.elem)
        return None

    def member_loc(self, base: Loc, e: ast.Member) -> Loc | None:
        name = e.name
        if isinstance(base, StructLoc):
            return base.fields[name]
        if isinstance(base, HeaderLoc):
            ft = base.type.field_type(name)
            assert ft is not None
            return FieldLoc(base.name, name, ft)
        if isinstance(base, UnionLoc):
            return base.members[name]
        if isinstance(base, StackLoc):
            if name == "last":
                return StackLastLoc(base)
            if name == "next":
                if not self.in_parser:
                    raise error(e, f"{show_expr(e)}: .next is only supported in parsers on this "
                                "target")
                return StackNextLoc(base)
            return None
        if isinstance(base, StackNextLoc) and isinstance(base.stack.type.elem, UnionT):
            return StackNextMemberLoc(base.stack, name)
        if isinstance(base, StackLastLoc):
            elem = base.stack.type.elem
            if isinstance(elem, UnionT):
                # p4c writes union_stack_field (transition keys) / last_stack_index here
                raise error(e, f"{show_expr(e)}: softnic does not support .last of a stack of "
                            "header unions yet")
            assert isinstance(elem, HeaderT)
            ft = elem.field_type(name)
            assert ft is not None
            return JsonLoc({"type": "stack_field", "value": [base.stack.name, name]}, ft, True)
        if isinstance(base, DynHeaderLoc):
            names = [f for f, _ in base.type.fields]
            ft = base.type.field_type(name)
            assert ft is not None
            j = {"type": "expression",
                 "value": {"op": "access_field", "left": base.json, "right": names.index(name)}}
            return JsonLoc(j, ft, True)
        return None

    def loc_json(self, loc: Loc, node: ast.Node) -> dict[str, Any]:
        if isinstance(loc, FieldLoc):
            return field_ref(loc.header, loc.field)
        if isinstance(loc, JsonLoc):
            return loc.json
        if isinstance(loc, HeaderLoc):
            return {"type": "header", "value": loc.name}
        if isinstance(loc, StackLoc):
            if isinstance(loc.type.elem, UnionT):
                return {"type": "header_union_stack", "value": loc.name}
            return {"type": "header_stack", "value": loc.name}
        if isinstance(loc, UnionLoc):
            return {"type": "header_union", "value": loc.name}
        if isinstance(loc, DynHeaderLoc):
            return loc.json
        if isinstance(loc, StructLoc) and loc.header is not None:
            return {"type": "header", "value": loc.header}
        raise error(node, "a value of this kind cannot be used here on this target")

    # ------------------------------------------------------------------ values

    def data(self, e: ast.Expr) -> dict[str, Any]:
        """``e`` as a BMv2 data value (bools converted with b2d)."""
        v = self.lower(e)
        if v.is_bool:
            return op("b2d", None, v.json)
        return v.json

    def boolean(self, e: ast.Expr) -> dict[str, Any]:
        """``e`` (of P4 type bool) as a BMv2 boolean value (fields converted with d2b)."""
        v = self.lower(e)
        if not v.is_bool:
            return op("d2b", None, v.json)
        return v.json

    def param(self, e: ast.Expr) -> dict[str, Any]:
        """A primitive argument: data, with expressions wrapped once more as p4c does."""
        j = self.data(e)
        return wrap_param(j)

    def lower(self, e: ast.Expr) -> Val:
        t = self.type(e)
        c = self.const(e)
        if c is not None and not isinstance(e, ast.PathExpr) or (
            c is not None and isinstance(e, ast.PathExpr)
        ):
            if isinstance(t, BoolT) or isinstance(c, bool):
                return Val({"type": "bool", "value": bool(c)}, True)
            width = bit_width(t) if isinstance(t, (BitT, EnumT, ErrorT)) else None
            return Val(hexstr(int(c), width))
        loc = self.loc(e)
        if loc is not None:
            return Val(self.loc_json(loc, e))
        if isinstance(e, ast.Member):
            return self.lower_member_value(e)
        if isinstance(e, ast.Unary):
            return self.lower_unary(e, t)
        if isinstance(e, ast.Binary):
            return self.lower_binary(e, t)
        if isinstance(e, ast.Ternary):
            cond = self.boolean(e.cond)
            a, b = self.data(e.then), self.data(e.other)
            j = {"type": "expression",
                 "value": {"op": "?", "left": inner(a), "right": inner(b), "cond": cond}}
            return Val(j)
        if isinstance(e, ast.Cast):
            return self.lower_cast(e, t)
        if isinstance(e, ast.Slice):
            base = self.data(e.expr)
            hi, lo = self.const(e.hi), self.const(e.lo)
            shifted = op(">>", base, hexstr(lo)) if lo else base
            return Val(op("&", shifted, hexstr(mask(hi - lo + 1), hi - lo + 1)))
        if isinstance(e, ast.Call):
            return self.lower_call_value(e)
        raise error(e, f"{show_expr(e)}: expression unsupported on this target")

    def lower_member_value(self, e: ast.Member) -> Val:
        bt = self.chk.types.get(id(e.expr))
        if isinstance(bt, StackT) and e.name == "lastIndex":
            base = self.loc(e.expr)
            assert isinstance(base, StackLoc)
            if isinstance(base.type.elem, UnionT):
                raise error(e, f"{show_expr(e)}: softnic does not support lastIndex of a stack of "
                            "header unions yet")
            return Val(op("last_stack_index", None, {"type": "header_stack", "value": base.name}))
        if isinstance(bt, StackT) and e.name == "nextIndex":
            raise error(e, f"{show_expr(e)}: nextIndex is unsupported on this target")
        if isinstance(e.expr, ast.Call) and self.is_lookahead(e.expr):
            return Val(self.lookahead_value(e.expr, e.name, self.type(e)))
        raise error(e, f"{show_expr(e)}: expression unsupported on this target")

    def is_lookahead(self, e: ast.Expr) -> bool:
        info = self.chk.calls.get(id(e))
        return info is not None and info.kind == "method" and info.name == "lookahead"

    def lookahead_value(self, call: ast.Call, member: str | None, t: PType) -> dict[str, Any]:
        """A lookahead used as a value: in a parser state, read into a temporary first (p4c's
        front end moves the call out of the expression the same way)."""
        j = self.lookahead_json(call, member)
        return self.spill(j, t) if self.spill is not None else j

    def lookahead_json(self, call: ast.Call, member: str | None = None) -> dict[str, Any]:
        if not self.in_parser:
            raise error(call, "lookahead is only supported in parsers")
        t = self.type(call)
        parts = [ft for _, ft in t.fields] if isinstance(t, (HeaderT, StructT)) else [t]
        if any(isinstance(ft, VarbitT) for ft in parts):
            # a lookahead reads a fixed number of bits: BMv2 has no lookahead of a varbit
            raise error(call, f"{show_expr(call)}: lookahead of a type with a varbit field is "
                        "unsupported on this target")
        if member is None:
            return {"type": "lookahead", "value": [0, bit_width(t)]}
        assert isinstance(t, HeaderT)
        off = 0
        for fn, ft in t.fields:
            if fn == member:
                return {"type": "lookahead", "value": [off, bit_width(ft)]}
            off += bit_width(ft)
        raise error(call, f"no field {member}")

    def lower_unary(self, e: ast.Unary, t: PType) -> Val:
        if e.op == "!":
            return Val(op("not", None, self.boolean(e.expr)), True)
        x = self.data(e.expr)
        if e.op == "+":
            return Val(x)
        if e.op == "~":
            return self.wrap(op("~", None, x), t)
        if e.op == "-":
            return self.wrap(op("-", hexstr(0), x), t)
        raise error(e, f"unsupported operator {e.op}")

    def wrap(self, j: dict[str, Any], t: PType) -> Val:
        """Truncate an arithmetic result to its P4 width."""
        if isinstance(t, BitT):
            if t.signed:
                return Val(op("two_comp_mod", j, hexstr(t.width)))
            return Val(op("&", j, hexstr(mask(t.width), t.width)))
        return Val(j)

    def lower_binary(self, e: ast.Binary, t: PType) -> Val:
        o = e.op
        if o in ("&&", "||"):
            return Val(op("and" if o == "&&" else "or", self.boolean(e.left),
                          self.boolean(e.right)), True)
        if o in ("==", "!=") and (isinstance(self.type(e.left), AGGREGATES)
                                  or isinstance(self.type(e.right), AGGREGATES)):
            return self.aggregate_eq(e)
        if o in ("==", "!="):
            lt = self.type(e.left)
            if isinstance(lt, BoolT):
                return Val(op(o, self.data(e.left), self.data(e.right)), True)
            return Val(op(o, self.data(e.left), self.data(e.right)), True)
        if o in ("<", "<=", ">", ">="):
            return Val(op(o, self.data(e.left), self.data(e.right)), True)
        if o in ("<<", ">>"):
            self.check_shift_amount(e)
        a, b = self.data(e.left), self.data(e.right)
        if o in ("&", "|", "^"):
            return Val(op(o, a, b))
        if o in (">>", "/", "%"):
            return Val(op(o, a, b))
        if o in ("+", "-", "*", "<<"):
            return self.wrap(op(o, a, b), t)
        if o == "++":
            # as p4c's LowerExpressions: (a << width(b)) | (b & mask), in the result's type (a
            # signed right operand contributes only its bits; a signed result stays signed)
            rt = self.type(e.right)
            assert isinstance(rt, BitT) and isinstance(t, BitT)
            shifted = op("<<", a, hexstr(rt.width))
            low = op("&", b, hexstr(mask(rt.width), rt.width)) if rt.signed else b
            return self.wrap(op("|", shifted, low), t)
        if o in ("|+|", "|-|"):
            assert isinstance(t, BitT)
            raw = op("+" if o == "|+|" else "-", a, b)
            return Val(op("sat_cast" if t.signed else "usat_cast", raw, hexstr(t.width)))
        raise error(e, f"{show_expr(e)}: operator {o} unsupported here")

    # ------------------------------------------------------------------ aggregate ==

    def aggregate_eq(self, e: ast.Binary) -> Val:
        """``==``/``!=`` on headers, structs, unions, stacks and lists, expanded as p4c's mid
        end does (RemoveComplexComparisons): two headers are equal when both are invalid or
        both are valid with equal fields; structs and unions field by field, stacks element by
        element, a list against a struct or header by position (a list counts as a valid
        header)."""
        j = self.explode_eq(self.eq_side(e.left), self.type(e.left), self.eq_side(e.right),
                            self.type(e.right), e)
        return Val(bool_not(j) if e.op == "!=" else j, True)

    def eq_side(self, x: ast.Expr) -> Loc | ast.Expr:
        """An operand of an aggregate comparison: a list/struct expression, or where it lives."""
        if isinstance(x, (ast.ListExpr, ast.StructInit)):
            return x
        if not isinstance(self.type(x), AGGREGATES):
            return x
        loc = self.loc(x)
        if loc is None or isinstance(loc, (StackLastLoc, StackNextLoc, JsonLoc)):
            raise error(x, f"{show_expr(x)}: comparing this value is unsupported on this target; "
                        "assign it to a local variable first")
        return loc

    def explode_eq(self, left: Loc | ast.Expr, lt: PType, right: Loc | ast.Expr, rt: PType,
                   node: ast.Expr) -> dict[str, Any]:
        if isinstance(lt, TupleT) and not isinstance(rt, TupleT):
            return self.explode_eq(right, rt, left, lt, node)
        if isinstance(lt, (HeaderT, StructT, UnionT)):
            parts = [
                self.explode_eq(self.eq_part(left, fn, i, node), ft,
                                self.eq_part(right, fn, i, node), part_type(rt, fn, i), node)
                for i, (fn, ft) in enumerate(lt.fields)
            ]
            if not isinstance(lt, HeaderT):
                return bool_and(*parts)
            lvalid, rvalid = self.eq_valid(left, node), self.eq_valid(right, node)
            both_invalid = bool_and(bool_not(lvalid), bool_not(rvalid))
            return bool_or(both_invalid, bool_and(lvalid, rvalid, *parts))
        if isinstance(lt, StackT):
            assert isinstance(left, StackLoc) and isinstance(right, StackLoc)
            return bool_and(*(self.explode_eq(a, lt.elem, b, lt.elem, node)
                              for a, b in zip(left.elems, right.elems, strict=True)))
        if isinstance(lt, TupleT):
            assert isinstance(left, ast.ListExpr) and isinstance(right, ast.ListExpr)
            assert isinstance(rt, TupleT)
            return bool_and(*(self.explode_eq(self.eq_side(a), at, self.eq_side(b), bt, node)
                              for a, b, at, bt in zip(left.elems, right.elems, lt.elems,
                                                      rt.elems, strict=True)))
        return op("==", self.eq_data(left, node), self.eq_data(right, node))

    def eq_part(self, side: Loc | ast.Expr, name: str, i: int, node: ast.Expr) -> Loc | ast.Expr:
        """Field ``name`` (position ``i``) of one operand."""
        if isinstance(side, ast.ListExpr):
            return self.eq_side(side.elems[i])
        if isinstance(side, ast.StructInit):
            return self.eq_side(dict(side.fields)[name])
        if isinstance(side, Loc):
            part = self.member_loc(side, ast.Member(node, name, loc=node.loc))
            if part is not None:
                return part
        raise error(node, f"{show_expr(node)}: comparing this value is unsupported on this target")

    def eq_valid(self, side: Loc | ast.Expr, node: ast.Expr) -> dict[str, Any]:
        """Whether a header operand is valid; a list or struct expression always is."""
        if isinstance(side, HeaderLoc):
            return op("d2b", None, field_ref(side.name, "$valid$"))
        if isinstance(side, DynHeaderLoc):
            return op("valid", None, side.json)
        if isinstance(side, ast.Expr):
            return TRUE
        raise error(node, f"{show_expr(node)}: comparing this header is unsupported on this "
                    "target")

    def eq_data(self, side: Loc | ast.Expr, node: ast.Expr) -> dict[str, Any]:
        if isinstance(side, ast.Expr):
            return self.data(side)
        return self.loc_json(side, node)

    # p4c's BMv2 back end (LowerExpressions::maxShiftWidth): BMv2 takes a shift amount of at
    # most 8 bits.
    MAX_SHIFT_WIDTH = 8

    def check_shift_amount(self, e: ast.Binary) -> None:
        """Refuse a shift BMv2 cannot run, as p4c-bm2-ss's LowerExpressions::shift does: a
        ``bit<W>`` amount with W > 8 (run-time or a typed constant such as ``16w2``: the check
        is on the type) or an untyped constant above 256. Shifts p4c removes before its back
        end are kept: constant ones are folded before we get here, and a shift by 0 or of a
        constant 0 is simplified away (ConstantFolding, StrengthReduction)."""
        if self.const(e.right) == 0 or self.const(e.left) == 0:
            return
        rt = self.type(e.right)
        if isinstance(rt, BitT) and rt.width > self.MAX_SHIFT_WIDTH:
            raise error(e, f"{show_expr(e)}: shift amount limited to {self.MAX_SHIFT_WIDTH} bits "
                        "on this target")
        limit = 1 << self.MAX_SHIFT_WIDTH
        amount = self.const(e.right)
        if isinstance(rt, InfIntT) and isinstance(amount, int) and amount > limit:
            raise error(e, f"{show_expr(e)}: shift amount limited to {limit} on this target")

    def lower_cast(self, e: ast.Cast, t: PType) -> Val:
        st = self.type(e.expr)
        if isinstance(t, BoolT):
            if isinstance(st, BoolT):
                return self.lower(e.expr)
            return Val(op("d2b", None, self.data(e.expr)), True)
        x = self.data(e.expr)
        if isinstance(t, BitT):
            if isinstance(st, BitT) and st.width <= t.width and st.signed == t.signed:
                return Val(x)
            if isinstance(st, EnumT) and st.underlying is not None and (
                st.underlying.width <= t.width
            ):
                return Val(x)
            return self.wrap(x, t)
        return Val(x)

    def lower_call_value(self, e: ast.Call) -> Val:
        info = self.chk.calls.get(id(e))
        if info is None:
            raise error(e, f"{show_expr(e)}: internal error: call not checked")
        if info.kind == "builtin" and info.name == "isValid":
            assert info.base is not None
            loc = self.loc(info.base)
            if isinstance(loc, HeaderLoc):
                return Val(op("d2b", None, field_ref(loc.name, "$valid$")), True)
            if isinstance(loc, DynHeaderLoc):
                return Val(op("valid", None, loc.json), True)
            if isinstance(loc, UnionLoc):
                return Val(op("valid_union", None, {"type": "header_union", "value": loc.name}),
                           True)
            if isinstance(loc, StackLastLoc):
                raise error(e, f"{show_expr(e)}: isValid on .last is unsupported on this target")
        if self.is_lookahead(e):
            return Val(self.lookahead_value(e, None, self.type(e)))
        if info.kind == "function":
            return self.inline_pure_function(e, info)
        raise error(e, f"{show_expr(e)}: calls with side effects cannot be used inside an "
                    "expression on this target; assign the result in a separate statement")

    def inline_pure_function(self, e: ast.Call, info: Any) -> Val:
        """A function call inside a table key. desugar inlines every other call into
        statements, but a key is evaluated when the table is applied, so here the callee's
        ``return`` expression is lowered in place of the call."""
        d: ast.FunctionDecl = info.sym.decl
        stmts = d.body.stmts
        if len(stmts) != 1 or not isinstance(stmts[0], ast.ReturnStmt) or stmts[0].value is None:
            raise error(e, f"{show_expr(e)}: only functions whose body is a single return "
                        "statement can be used in expressions on this target")
        env = dict(self.env)
        for p, a in zip(d.params, info.args, strict=False):
            psym = self.chk.decl_syms[id(p)]
            assert a is not None
            loc = self.loc(a)
            env[id(psym)] = loc if loc is not None else JsonLoc(self.data(a), self.type(a))
        sub = ExprLowerer(self.chk, env, self.in_parser)
        sub.spill = self.spill
        return sub.lower(stmts[0].value)


AGGREGATES = (HeaderT, StructT, UnionT, StackT, TupleT)
TRUE: dict[str, Any] = {"type": "bool", "value": True}
FALSE: dict[str, Any] = {"type": "bool", "value": False}


def part_type(t: PType, name: str, i: int) -> PType:
    """The type of field ``name`` (position ``i``) of a struct-like or list type."""
    if isinstance(t, TupleT):
        return t.elems[i]
    assert isinstance(t, (HeaderT, StructT, UnionT))
    ft = t.field_type(name)
    assert ft is not None
    return ft


def bool_and(*xs: dict[str, Any]) -> dict[str, Any]:
    """BMv2 ``and`` of boolean values, without the ``true`` operands (as constant folding
    leaves p4c's expansion)."""
    out = TRUE
    for x in xs:
        if x == FALSE:
            return FALSE
        if x != TRUE:
            out = x if out == TRUE else op("and", out, x)
    return out


def bool_or(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if a == TRUE or b == TRUE:
        return TRUE
    if a == FALSE:
        return b
    if b == FALSE:
        return a
    return op("or", a, b)


def bool_not(a: dict[str, Any]) -> dict[str, Any]:
    if a in (TRUE, FALSE):
        return FALSE if a == TRUE else TRUE
    return op("not", None, a)


def wrap_op(j: dict[str, Any]) -> dict[str, Any]:
    """A primitive argument in BMv2's form: an ``expression`` argument's ``value`` is read as a
    whole expression node (P4Objects::process_single_param), so an operation - a computed
    value, or a run-time stack element or its field as an lvalue - is wrapped once more, as p4c
    does. Already wrapped arguments are left as they are, and the values in a
    ``parameters_vector`` (log_msg's) are arguments themselves."""
    v = j.get("value")
    if j.get("type") == "expression" and isinstance(v, dict) and "type" not in v:
        return {"type": "expression", "value": j}
    if j.get("type") == "parameters_vector" and isinstance(v, list):
        return {"type": "parameters_vector", "value": [wrap_param(x) for x in v]}
    return j


def wrap_param(j: dict[str, Any]) -> dict[str, Any]:
    """A value argument (or parser ``set`` source) as p4c writes it: operations wrapped as in
    :func:`wrap_op`, and a ``stack_field`` too (ExpressionConverter::convert wraps both; a
    parser ``set`` takes a stack field only that way)."""
    if j.get("type") == "stack_field":
        return {"type": "expression", "value": j}
    j = wrap_op(j)
    return j


__all__ = [
    "CompileError",
    "Env",
    "ExprLowerer",
    "InfIntT",
    "Val",
    "field_ref",
    "hex_text",
    "hexstr",
    "op",
    "wrap_param",
]
