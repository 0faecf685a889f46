"""Constant evaluation: the compile-time value of an expression, or None when it has none.

Widths, stack sizes, enum values, keysets and table properties must all be constants; this is
the single place that decides what counts as one and what its value is.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.frontend.check.fold import fold_cast, fold_typed_binary, fold_unary, mask
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.scope import Scope
from softnic.compiler.ir.types import (
    EnumT,
)


class ConstantsMixin(CheckerState):
    """Folds constant expressions using the types already recorded."""

    def const_eval(self, e: ast.Expr, scope: Scope | None) -> Any:
        """Fold a compile-time constant (int or bool); None when not constant.

        A value already recorded for ``e`` wins: it is the value after an implicit cast
        (``-1`` compared with a ``bit<8>`` is 255). Without a scope, names are resolved through
        the symbols the checker recorded when it typed ``e``."""
        if id(e) in self.consts:
            return self.consts[id(e)]
        if isinstance(e, ast.IntLiteral):
            return e.value
        if isinstance(e, ast.BoolLiteral):
            return e.value
        if isinstance(e, ast.PathExpr):
            sym = scope.lookup(e.name) if scope is not None else self.syms.get(id(e))
            if sym is not None and sym.kind == "const":
                return sym.value
            return None
        if scope is None:
            return self.const_eval_rest(e, scope)
        if isinstance(e, ast.Member) and isinstance(e.expr, ast.PathExpr):
            sym = scope.lookup(e.expr.name)
            if sym is not None and sym.kind == "type" and isinstance(sym.type, EnumT):
                if sym.type.underlying is not None and e.name in sym.type.members:
                    return sym.type.value_of(e.name)
            return None
        return self.const_eval_rest(e, scope)

    def const_eval_rest(self, e: ast.Expr, scope: Scope | None) -> Any:
        if isinstance(e, ast.Unary):
            v = self.const_eval(e.expr, scope)
            if v is None:
                return None
            return fold_unary(e.op, v, self.types.get(id(e)))
        if isinstance(e, ast.Binary):
            a = self.const_eval(e.left, scope)
            b = self.const_eval(e.right, scope)
            if a is None or b is None:
                return None
            return fold_typed_binary(e.op, a, b, self.types.get(id(e)),
                                     self.types.get(id(e.right)))
        if isinstance(e, ast.Cast):
            v = self.const_eval(e.expr, scope)
            return None if v is None else fold_cast(v, self.types.get(id(e)))
        if isinstance(e, ast.Ternary):
            c = self.const_eval(e.cond, scope)
            if c is None:
                return None
            return self.const_eval(e.then if c else e.other, scope)
        if isinstance(e, ast.Slice):
            v = self.const_eval(e.expr, scope)
            hi = self.const_eval(e.hi, scope)
            lo = self.const_eval(e.lo, scope)
            if v is None or hi is None or lo is None:
                return None
            return (v >> lo) & mask(hi - lo + 1)
        if isinstance(e, ast.Call) and id(e) in self.consts:
            return self.consts[id(e)]
        return None
