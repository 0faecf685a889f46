"""Assignment rules: which source types may flow into which destination types, which
expressions are left-values, and p4c's truncation (with a warning) of over-wide literals.
"""

from __future__ import annotations

from softnic.compiler.diagnostics import CompileWarning, error
from softnic.compiler.frontend.check.fold import fit
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope
from softnic.compiler.ir.types import (
    BitT,
    DontCareT,
    EnumT,
    HeaderT,
    InfIntT,
    PType,
    StackT,
    StructT,
    TupleT,
    TypeVarT,
)


class AssignMixin(CheckerState):
    """Checks assignability and left-values."""

    def implicit_cast(self, e: ast.Expr, t: PType, scope: Scope | None = None) -> None:
        """Where an arbitrary-precision ``int`` expression meets a ``bit<W>``/``int<W>`` value
        it takes that type (P4_16 8.9.5; p4c's TypeInference inserts a cast that constant
        folding then evaluates): ``-1`` compared with a ``bit<8>`` is 255. ``e`` is recorded
        with type ``t`` and its value folded into ``t``, so the checker and the JSON (never a
        negative or over-wide constant for a ``bit<W>``) see the cast value."""
        if isinstance(t, EnumT) and t.underlying is not None:
            t = t.underlying
        if not isinstance(t, BitT) or not isinstance(self.types.get(id(e)), InfIntT):
            return
        if isinstance(e, ast.Ternary):
            # each arm is cast, so a run-time ?: still yields values of t
            self.implicit_cast(e.then, t, scope)
            self.implicit_cast(e.other, t, scope)
        v = self.const_eval(e, scope)
        self.types[id(e)] = t
        if isinstance(v, int) and not isinstance(v, bool):
            self.consts[id(e)] = fit(v, t)
            self.warn_overflow(e, v, t)

    def warn_overflow(self, e: ast.Expr, v: int, t: BitT) -> None:
        """p4c's warnings when a constant is given a type it does not fit (IR::Constant's
        overflow handling): the value is still used, truncated to the type."""
        text = e.text or str(e.value) if isinstance(e, ast.IntLiteral) else show_expr(e)
        if v < 0 and not t.signed:
            msg, kind = f"{text}: negative value with unsigned type", "mismatch"
        elif fit(v, t) != v:
            msg, kind = f"{text}: value does not fit in {t.width} bits", "overflow"
        else:
            return
        w = CompileWarning(e.loc, msg, kind, len(text))
        if w not in self.warnings:
            self.warnings.append(w)

    def fit_literal(self, e: ast.Expr, t: PType) -> None:
        """An integer literal stored into ``t`` keeps only ``t``'s bits. Like p4c we warn and
        record the truncated value, so the JSON never carries a constant wider than its field.
        Any other ``int`` expression is cast to ``t`` (see :meth:`implicit_cast`)."""
        if not (isinstance(e, ast.IntLiteral) and isinstance(t, BitT)) or isinstance(
            self.types.get(id(e)), InfIntT
        ):
            self.implicit_cast(e, t)
            return
        v = fit(e.value, t)
        if v != e.value:
            self.warn_overflow(e, e.value, t)
            self.consts[id(e)] = v

    def assignable(self, src: PType, dst: PType, node: ast.Node) -> None:
        if src == dst or isinstance(src, DontCareT):
            return
        if isinstance(src, InfIntT) and isinstance(dst, (BitT, InfIntT)):
            if isinstance(node, ast.Expr) and isinstance(dst, BitT):
                self.implicit_cast(node, dst)
            return
        if isinstance(src, EnumT) and src.underlying is not None and dst == src.underlying:
            return
        if isinstance(src, TupleT) and isinstance(dst, (StructT, HeaderT)):
            if len(src.elems) == len(dst.fields):
                for i, (st, (_, ft)) in enumerate(zip(src.elems, dst.fields, strict=False)):
                    self.assignable(st, ft, self.element_node(node, i))
                return
        if isinstance(src, TupleT) and isinstance(dst, TupleT) and len(src.elems) == len(
            dst.elems
        ):
            for i, (a, b) in enumerate(zip(src.elems, dst.elems, strict=False)):
                self.assignable(a, b, self.element_node(node, i))
            return
        if isinstance(dst, TypeVarT):
            return
        raise error(node, f"Cannot unify {src.show()} to {dst.show()}")

    @staticmethod
    def element_node(node: ast.Node, i: int) -> ast.Node:
        """The ``i``-th element of a list expression (for its implicit casts), else ``node``."""
        if isinstance(node, ast.ListExpr) and i < len(node.elems):
            return node.elems[i]
        return node

    def check_lvalue(self, e: ast.Expr, scope: Scope) -> None:
        base: ast.Expr = e
        while isinstance(base, (ast.Member, ast.Index, ast.Slice)):
            if isinstance(base, ast.Member) and isinstance(
                self.types.get(id(base.expr)), StackT
            ) and base.name in ("lastIndex", "size"):
                raise error(e, f"{show_expr(e)}: is not a left-value")
            base = base.expr
        if isinstance(base, ast.PathExpr):
            sym = self.syms.get(id(base))
            if sym is None or sym.kind != "var":
                raise error(e, f"{show_expr(e)}: cannot be the target of an assignment")
            if sym.direction == "in" or (sym.direction is None and isinstance(
                sym.decl, ast.Param
            ) and self._cur_action):
                raise error(e, f"{show_expr(e)}: cannot be the target of an assignment")
            return
        raise error(e, f"{show_expr(e)}: is not a left-value")
