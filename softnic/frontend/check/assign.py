"""Assignment rules: which source types may flow into which destination types, which
expressions are left-values, and p4c's truncation (with a warning) of over-wide literals.
"""

from __future__ import annotations

from softnic.frontend import ast
from softnic.frontend.check.fold import fit
from softnic.frontend.check.helpers import err
from softnic.frontend.check.state import CheckerState
from softnic.frontend.diagnostics import CompileWarning
from softnic.frontend.pretty import show_expr
from softnic.frontend.scope import Scope
from softnic.frontend.types import (
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

    def fit_literal(self, e: ast.Expr, t: PType) -> None:
        """An integer literal stored into ``t`` keeps only ``t``'s bits. Like p4c we warn and
        record the truncated value, so the JSON never carries a constant wider than its field."""
        if not (isinstance(e, ast.IntLiteral) and isinstance(t, BitT)):
            return
        v = fit(e.value, t)
        if v != e.value:
            text = e.text or str(e.value)
            w = CompileWarning(e.loc, f"{text}: value does not fit in {t.width} bits")
            if w not in self.warnings:
                self.warnings.append(w)
            self.consts[id(e)] = v

    def assignable(self, src: PType, dst: PType, node: ast.Node) -> None:
        if src == dst or isinstance(src, DontCareT):
            return
        if isinstance(src, InfIntT) and isinstance(dst, (BitT, InfIntT)):
            return
        if isinstance(src, EnumT) and src.underlying is not None and dst == src.underlying:
            return
        if isinstance(src, TupleT) and isinstance(dst, (StructT, HeaderT)):
            if len(src.elems) == len(dst.fields):
                for st, (_, ft) in zip(src.elems, dst.fields, strict=False):
                    self.assignable(st, ft, node)
                return
        if isinstance(src, TupleT) and isinstance(dst, TupleT) and len(src.elems) == len(
            dst.elems
        ):
            for a, b in zip(src.elems, dst.elems, strict=False):
                self.assignable(a, b, node)
            return
        if isinstance(dst, TypeVarT):
            return
        raise err(node, f"Cannot unify {src.show()} to {dst.show()}")

    def check_lvalue(self, e: ast.Expr, scope: Scope) -> None:
        base: ast.Expr = e
        while isinstance(base, (ast.Member, ast.Index, ast.Slice)):
            if isinstance(base, ast.Member) and isinstance(
                self.types.get(id(base.expr)), StackT
            ) and base.name in ("lastIndex", "size"):
                raise err(e, f"{show_expr(e)}: is not a left-value")
            base = base.expr
        if isinstance(base, ast.PathExpr):
            sym = self.syms.get(id(base))
            if sym is None or sym.kind != "var":
                raise err(e, f"{show_expr(e)}: cannot be the target of an assignment")
            if sym.direction == "in" or (sym.direction is None and isinstance(
                sym.decl, ast.Param
            ) and self._cur_action):
                raise err(e, f"{show_expr(e)}: cannot be the target of an assignment")
            return
        raise err(e, f"{show_expr(e)}: is not a left-value")
