"""Expression typing: P4_16's rules for literals, names, members, indexing, slices and operators,
including width inference for untyped integers and the operand unification of binary operators.

Every typed expression is recorded in ``Checker.types``; call expressions are delegated to
:mod:`softnic.compiler.frontend.check.calls`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from softnic.compiler.diagnostics import CompileWarning, error
from softnic.compiler.frontend.check.helpers import check_width
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope
from softnic.compiler.ir.types import (
    ActionEnumT,
    ApplyResultT,
    BitT,
    BoolT,
    DontCareT,
    EnumT,
    ErrorT,
    HeaderT,
    InfIntT,
    MatchKindT,
    PType,
    StackT,
    StringT,
    StructT,
    TableT,
    TupleT,
    UnionT,
    VoidT,
)

AGGREGATES = (HeaderT, StructT, UnionT, StackT, TupleT)


class ExpressionsMixin(CheckerState):
    """Computes and records the type of every expression."""

    def type_of(self, e: ast.Expr, scope: Scope, expected: PType | None = None) -> PType:
        t = self._type_of(e, scope, expected)
        self.types[id(e)] = t
        return t

    def type_of_tuple_index(self, e: ast.Index, bt: TupleT, scope: Scope) -> PType:
        """``t[i]`` on a tuple: as p4c's TypeInference (ArrayIndex on a Type_BaseList), the index
        must be a compile-time constant (after constant folding) within the tuple's size, and
        the result has that element's type. A folded index is replaced by its literal;
        EliminateTuples later makes ``t[i]`` the field access ``t.f<i>``."""
        it = self.type_of(e.index, scope)
        iv = self.const_eval(e.index, scope)
        if not isinstance(it, (BitT, InfIntT)) and not isinstance(iv, int):
            raise error(e.index, f"Array index {show_expr(e.index)} must be an integer, but it "
                        f"has type {it.show()}")
        # p4c's wording; a negative constant is reported as p4c does (its index < 0 test
        # stands for "not a constant")
        if not isinstance(iv, int) or iv < 0:
            raise error(e.index, f"Tuple index {show_expr(e.index)} must be constant")
        if iv >= len(bt.elems):
            raise error(e.index, f"Tuple index {show_expr(e.index)} larger than tuple size "
                        f"{len(bt.elems)}")
        if not isinstance(e.index, ast.IntLiteral):
            # folded, as TypeInference folds it: EliminateTuples reads the literal
            e.index = ast.IntLiteral(iv, loc=e.index.loc)
            self.types[id(e.index)] = InfIntT()
        self.consts[id(e.index)] = iv
        return bt.elems[iv]

    def _type_of(self, e: ast.Expr, scope: Scope, expected: PType | None) -> PType:
        if isinstance(e, ast.IntLiteral):
            if e.width is not None:
                if e.width <= 0:
                    raise error(e, "literal width must be positive")
                check_width(e, e.width, "int" if e.signed else "bit")
                self.fit_literal(e, BitT(e.width, e.signed))
                return BitT(e.width, e.signed)
            return InfIntT()
        if isinstance(e, ast.BoolLiteral):
            return BoolT()
        if isinstance(e, ast.StringLiteral):
            return StringT()
        if isinstance(e, ast.PathExpr):
            sym = self.lookup(e, scope)
            if sym.kind in ("var", "const", "instance"):
                return sym.type or VoidT()
            if sym.kind == "table":
                return TableT(sym.qualified)
            if sym.kind == "match_kind":
                return MatchKindT()
            if sym.kind == "type" and isinstance(sym.type, (EnumT, ErrorT)):
                return sym.type
            raise error(e, f"{e.name}: is not a value")
        if isinstance(e, ast.Member):
            return self.type_of_member(e, scope)
        if isinstance(e, ast.Index):
            bt = self.type_of(e.expr, scope)
            if isinstance(bt, TupleT):
                return self.type_of_tuple_index(e, bt, scope)
            if not isinstance(bt, StackT):
                raise error(e, f"{show_expr(e)}: indexing a value of type {bt.show()}")
            it = self.type_of(e.index, scope)
            if not isinstance(it, (BitT, InfIntT)):
                raise error(e.index, f"{show_expr(e.index)}: array index must be an integer")
            iv = self.const_eval(e.index, scope)
            # p4c's TypeInference wording for a constant index out of the stack's range
            if isinstance(iv, int) and iv < 0:
                raise error(e, f"{show_expr(e)}: Negative array index {iv}")
            if isinstance(iv, int) and iv >= bt.size:
                raise error(e.index, f"Array index {iv} larger or equal to array size {bt.size}")
            if isinstance(iv, int):
                self.consts[id(e.index)] = iv
            return bt.elem
        if isinstance(e, ast.Slice):
            bt = self.type_of(e.expr, scope)
            if isinstance(bt, InfIntT):
                raise error(e, f"{show_expr(e)}: cannot slice an integer without a width")
            if not isinstance(bt, BitT):
                raise error(e, f"{show_expr(e)}: bit slice of a value of type {bt.show()}")
            self.type_of(e.hi, scope)
            self.type_of(e.lo, scope)
            hi = self.const_eval(e.hi, scope)
            lo = self.const_eval(e.lo, scope)
            if not isinstance(hi, int) or not isinstance(lo, int):
                raise error(e, f"{show_expr(e)}: slice indices must be compile-time constants")
            if hi < lo or lo < 0 or hi >= bt.width:
                raise error(e, f"{show_expr(e)}: bit slice [{hi}:{lo}] out of range for "
                            f"{bt.show()}")
            self.consts[id(e.hi)] = hi
            self.consts[id(e.lo)] = lo
            return BitT(hi - lo + 1)
        if isinstance(e, ast.Unary):
            return self.type_of_unary(e, scope, expected)
        if isinstance(e, ast.Binary):
            return self.type_of_binary(e, scope, expected)
        if isinstance(e, ast.Ternary):
            ct = self.type_of(e.cond, scope)
            if not isinstance(ct, BoolT):
                raise error(e.cond, f"{show_expr(e.cond)}: condition must be bool, not {ct.show()}")
            a = self.type_of(e.then, scope, expected)
            b = self.type_of(e.other, scope, expected)
            if isinstance(a, InfIntT) and isinstance(b, InfIntT):
                if expected is not None and isinstance(expected, BitT):
                    self.cast_operands(e.then, e.other, expected, scope)
                    return expected
                if self.const_eval(e.cond, scope) is None:
                    raise error(e, f"{show_expr(e)}: width of ?: operands cannot be inferred")
                return InfIntT()
            t = self.unify_operands(a, b, e)
            self.cast_operands(e.then, e.other, t, scope)
            return t
        if isinstance(e, ast.Cast):
            return self.type_of_cast(e, scope)
        if isinstance(e, ast.Call):
            return self.type_of_call(e, scope)
        if isinstance(e, ast.ListExpr):
            exp_elems: list[PType | None] = [None] * len(e.elems)
            if isinstance(expected, (StructT, HeaderT)) and len(expected.fields) == len(e.elems):
                exp_elems = [ft for _, ft in expected.fields]
            elif isinstance(expected, TupleT) and len(expected.elems) == len(e.elems):
                exp_elems = list(expected.elems)
            pairs = zip(e.elems, exp_elems, strict=False)
            return TupleT(tuple(self.type_of(x, scope, et) for x, et in pairs))
        if isinstance(e, ast.StructInit):
            if not isinstance(expected, (StructT, HeaderT)):
                raise error(e, f"{show_expr(e)}: cannot infer the type of a structure initializer")
            names = [n for n, _ in e.fields]
            if sorted(names) != sorted(n for n, _ in expected.fields):
                raise error(e, f"{show_expr(e)}: fields do not match those of {expected.show()}")
            for n, x in e.fields:
                ft = expected.field_type(n)
                assert ft is not None
                self.assignable(self.type_of(x, scope, ft), ft, x)
            return expected
        if isinstance(e, (ast.DontCare, ast.Default)):
            return DontCareT()
        raise error(e, f"{type(e).__name__}: unsupported expression")

    def type_of_member(self, e: ast.Member, scope: Scope) -> PType:
        base = e.expr
        if isinstance(base, ast.PathExpr):
            if base.name == "error" and scope.lookup("error") is None:
                if e.name not in self.errors:
                    raise error(e, f"{show_expr(e)}: error.{e.name} is not declared")
                self.consts[id(e)] = self.error_value(e.name)
                return ErrorT()
            sym = scope.lookup(base.name)
            if sym is not None and sym.kind == "type" and isinstance(sym.type, EnumT):
                self.syms[id(base)] = sym
                if e.name not in sym.type.members:
                    raise error(e, f"{show_expr(e)}: {sym.type.name} has no member {e.name}")
                self.consts[id(e)] = sym.type.value_of(e.name)
                return sym.type
        bt = self.type_of(base, scope)
        if isinstance(bt, (HeaderT, StructT, UnionT)):
            ft = bt.field_type(e.name)
            if ft is None:
                kind = {HeaderT: "header", StructT: "structure", UnionT: "header_union"}[type(bt)]
                raise error(e, f"Field {e.name} is not a member of {kind} {bt.name}")
            return ft
        if isinstance(bt, StackT):
            if e.name in ("next", "last"):
                return bt.elem
            if e.name in ("lastIndex", "size", "nextIndex"):
                if e.name == "size":
                    self.consts[id(e)] = bt.size
                return BitT(32)
            raise error(e, f"{show_expr(e)}: header stack has no member {e.name}")
        if isinstance(bt, ApplyResultT):
            if e.name in ("hit", "miss"):
                return BoolT()
            if e.name == "action_run":
                return ActionEnumT(bt.table)
        raise error(e, f"{show_expr(e)}: no member {e.name} in a value of type {bt.show()}")

    def type_of_unary(self, e: ast.Unary, scope: Scope, expected: PType | None) -> PType:
        t = self.type_of(e.expr, scope, expected)
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise error(e, f"{show_expr(e)}: ! applied to a value of type {t.show()}")
            return t
        if e.op in ("~", "-", "+"):
            if isinstance(t, InfIntT) and e.op == "~":
                if isinstance(expected, BitT):
                    return expected
                raise error(e, f"{show_expr(e)}: ~ needs an operand with a known width")
            if not isinstance(t, (BitT, InfIntT)):
                raise error(e, f"{show_expr(e)}: {e.op} applied to a value of type {t.show()}")
            return t
        raise error(e, f"unknown unary operator {e.op}")

    def cast_operands(self, left: ast.Expr, right: ast.Expr, t: PType, scope: Scope) -> None:
        """The operands of a binary operator (or the arms of ``?:``) whose common type is
        ``t``: an ``int`` operand takes ``t`` (p4c's TypeInference inserts the cast)."""
        self.implicit_cast(left, t, scope)
        self.implicit_cast(right, t, scope)

    def unify_operands(self, a: PType, b: PType, e: ast.Expr) -> PType:
        if isinstance(a, InfIntT) and isinstance(b, (BitT, InfIntT)):
            return b
        if isinstance(b, InfIntT) and isinstance(a, BitT):
            return a
        if isinstance(a, EnumT) and isinstance(b, EnumT) and a == b:
            return a
        if a == b:
            return a
        if isinstance(a, EnumT) and a.underlying is not None and isinstance(b, (BitT, InfIntT)):
            return a.underlying if isinstance(b, InfIntT) else self.unify_operands(
                a.underlying, b, e)
        if isinstance(b, EnumT) and b.underlying is not None and isinstance(a, BitT):
            return self.unify_operands(a, b.underlying, e)
        if isinstance(a, BitT) and isinstance(b, BitT):
            raise error(e, f"{show_expr(e)}: Cannot operate on values with different types "
                        f"{a.show()} and {b.show()}")
        raise error(e, f"{show_expr(e)}: Cannot unify {b.show()} to {a.show()}")

    def type_of_binary(self, e: ast.Binary, scope: Scope, expected: PType | None) -> PType:
        op = e.op
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                st = self.type_of(side, scope)
                if not isinstance(st, BoolT):
                    raise error(side, f"{show_expr(side)}: {op} needs bool operands,"
                                f" not {st.show()}")
            return BoolT()
        if op in ("&&&", ".."):
            a = self.type_of(e.left, scope, expected)
            b = self.type_of(e.right, scope, expected)
            t = self.unify_operands(a, b, e)
            self.cast_operands(e.left, e.right, t, scope)
            return t
        if op == "++":
            a = self.type_of(e.left, scope)
            b = self.type_of(e.right, scope)
            for side, st in ((e.left, a), (e.right, b)):
                if isinstance(st, InfIntT):
                    # p4c's TypeInference wording
                    raise error(side, f"Please specify a width for the operand {show_expr(side)} "
                                "of a concatenation")
            if not isinstance(a, BitT) or not isinstance(b, BitT):
                raise error(e, f"{show_expr(e)}: ++ needs operands with known widths, got "
                            f"{a.show()} and {b.show()}")
            check_width(e, a.width + b.width, f"{show_expr(e)}: bit")
            return BitT(a.width + b.width, a.signed)
        if op in ("<<", ">>"):
            a = self.type_of(e.left, scope, expected)
            b = self.type_of(e.right, scope)
            if not isinstance(b, (BitT, InfIntT)):
                raise error(e.right, f"{show_expr(e)}: shift amount must be an integer")
            amount = self.const_eval(e.right, scope)
            if isinstance(amount, int) and amount < 0:
                # p4c's ConstantFolding wording
                raise error(e, f"{show_expr(e)}: Shifts with negative amounts are not permitted")
            if isinstance(b, BitT) and b.signed:
                if not isinstance(amount, int):
                    raise error(e.right, f"{show_expr(e.right)}: Shift amount must be an unsigned "
                                "number")
                # p4c's TypeInference: a non-negative signed constant becomes unsigned
                self.types[id(e.right)] = BitT(b.width)
            if isinstance(a, InfIntT):
                if self.const_eval(e.right, scope) is None:
                    if isinstance(expected, BitT):
                        self.implicit_cast(e.left, expected, scope)
                        return expected
                    raise error(e, f"{show_expr(e)}: shift of an integer without a width by a "
                                "non-constant amount")
                return a
            if not isinstance(a, BitT):
                raise error(e, f"{show_expr(e)}: cannot shift a value of type {a.show()}")
            n = self.const_eval(e.right, scope)
            if isinstance(n, int) and not isinstance(n, bool) and n >= a.width:
                # p4c's TypeInference::shift warns (and accepts: the result is 0, or the sign)
                w = CompileWarning(e.loc, f"{show_expr(e)}: shifting value with {a.width} "
                                   f"bits by {n}", "overflow")
                if w not in self.warnings:
                    self.warnings.append(w)
            return a
        a = self.type_of(e.left, scope, expected)
        b = self.type_of(e.right, scope, a if not isinstance(a, InfIntT) else expected)
        if op in ("==", "!="):
            if isinstance(a, AGGREGATES) or isinstance(b, AGGREGATES):
                self.check_aggregate_compare(e, e.left, a, e.right, b)
                return BoolT()
            t = self.unify_operands(a, b, e)
            self.cast_operands(e.left, e.right, t, scope)
            return BoolT()
        if op in ("<", "<=", ">", ">="):
            t = self.unify_operands(a, b, e)
            if not isinstance(t, (BitT, InfIntT)):
                raise error(e, f"{show_expr(e)}: {op} needs integer operands, not {t.show()}")
            self.cast_operands(e.left, e.right, t, scope)
            return BoolT()
        if op in ("+", "-", "*", "/", "%", "&", "|", "^", "|+|", "|-|"):
            for t in (a, b):
                if not isinstance(t, (BitT, InfIntT)):
                    raise error(e, f"{show_expr(e)}: {op} needs integer operands, not {t.show()}")
            t = self.unify_operands(a, b, e)
            self.cast_operands(e.left, e.right, t, scope)
            if op in ("/", "%") and self.const_eval(e.right, scope) == 0:
                # p4c's constant folder refuses these; BMv2 would fault at run time.
                what = "Division" if op == "/" else "Modulo"
                raise error(e, f"{show_expr(e)}: {what} by zero")
            if op in ("/", "%"):
                x, y = self.const_eval(e.left, scope), self.const_eval(e.right, scope)
                if isinstance(x, int) and isinstance(y, int) and (x < 0 or y < 0):
                    # p4c's ConstantFolding folds / and % only on non-negative numbers
                    what = "Division" if op == "/" else "Modulo"
                    raise error(e, f"{show_expr(e)}: {what} is not defined for negative numbers")
            if op in ("/", "%") and isinstance(t, BitT) and t.signed:
                raise error(e, f"{show_expr(e)}: Cannot operate on signed values")
            if op in ("|+|", "|-|") and isinstance(t, InfIntT):
                raise error(e, f"{show_expr(e)}: saturating operation on untyped values")
            return t
        raise error(e, f"unknown binary operator {op}")

    def check_aggregate_compare(self, e: ast.Binary, left: ast.Expr, a: PType,
                                right: ast.Expr, b: PType) -> None:
        """``==``/``!=`` on headers, structs, header unions, stacks and lists (P4_16 8.x: two
        values of the same type, or a struct/header and a list of its fields' types): p4c's
        TypeInference accepts them and its mid end (RemoveComplexComparisons) expands them into
        validity and field comparisons, as the lowering does."""
        msg = (f"'{show_expr(left)}' with type '{a.show()}' cannot be compared to "
               f"'{show_expr(right)}' with type '{b.show()}'")

        def refuse() -> NoReturn:
            raise error(e, msg)

        if isinstance(a, TupleT) and isinstance(b, (StructT, HeaderT)):
            left, a, right, b = right, b, left, a
        if isinstance(b, TupleT) and isinstance(a, (StructT, HeaderT)):
            if len(b.elems) != len(a.fields):
                refuse()
            for i, (et, (_, ft)) in enumerate(zip(b.elems, a.fields, strict=True)):
                el = right.elems[i] if isinstance(right, ast.ListExpr) else right
                self.check_element_compare(e, el, ft, et, refuse)
            return
        if isinstance(a, TupleT) and isinstance(b, TupleT):
            if len(a.elems) != len(b.elems) or not isinstance(left, ast.ListExpr) or not (
                isinstance(right, ast.ListExpr)
            ):
                refuse()
            for x, y, xt, yt in zip(left.elems, right.elems, a.elems, b.elems, strict=True):
                if isinstance(xt, AGGREGATES) or isinstance(yt, AGGREGATES):
                    self.check_aggregate_compare(e, x, xt, y, yt)
                else:
                    self.implicit_cast(x, yt)
                    self.implicit_cast(y, xt)
                    if self.types.get(id(x)) != self.types.get(id(y)):
                        refuse()
            return
        if a != b or isinstance(a, TupleT):
            refuse()

    def check_element_compare(self, e: ast.Binary, el: ast.Expr, want: PType, got: PType,
                              refuse: Callable[[], NoReturn]) -> None:
        """One list element compared with the field (or element) of type ``want``."""
        if isinstance(want, AGGREGATES) or isinstance(got, AGGREGATES):
            if isinstance(got, TupleT) and isinstance(want, (StructT, HeaderT)):
                # a nested list against a nested struct: compared field by field
                self.check_aggregate_compare(e, el, got, el, want)
                return
            if want != got:
                refuse()
            return
        if isinstance(got, InfIntT) and isinstance(want, (BitT, InfIntT)):
            self.implicit_cast(el, want)
            return
        if want != got:
            refuse()

    def type_of_cast(self, e: ast.Cast, scope: Scope) -> PType:
        dst = self.resolve_type(e.type, scope)
        src = self.type_of(e.expr, scope, dst)
        ok = False
        if isinstance(dst, BitT):
            ok = isinstance(src, (BitT, InfIntT)) or (
                isinstance(src, BoolT) and dst.width == 1 and not dst.signed
            ) or (isinstance(src, EnumT) and src.underlying is not None)
            if isinstance(src, BitT) and src.signed != dst.signed and src.width != dst.width:
                ok = False
        elif isinstance(dst, BoolT):
            ok = isinstance(src, BoolT) or (isinstance(src, BitT) and src.width == 1 and not (
                src.signed)) or isinstance(src, InfIntT)
            v = self.const_eval(e.expr, scope) if isinstance(src, InfIntT) else None
            if isinstance(v, int) and not isinstance(v, bool) and v not in (0, 1):
                # p4c's ConstantFolding wording
                raise error(e, f"{show_expr(e)}: Only 0 and 1 can be cast to booleans")
        elif isinstance(dst, EnumT) and dst.underlying is not None:
            ok = isinstance(src, (BitT, InfIntT)) or src == dst
        elif isinstance(dst, InfIntT):
            ok = isinstance(src, InfIntT)
        else:
            ok = src == dst
        if not ok:
            raise error(e, f"{show_expr(e)}: Illegal cast from {src.show()} to {dst.show()}")
        return dst
