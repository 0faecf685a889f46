"""The compile-time value of an expression of a checked program, from the checker's findings:
the constants it folded, the values of ``const`` declarations, and literals, casts, slices and
operators over them, folded with the same arithmetic as the checker (``fold``). Every later
stage asks here (the P4Info collector, the BMv2 lowering), so they never disagree on a value.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.frontend.check.checker import Checker
from softnic.compiler.frontend.check.fold import fold_cast, fold_typed_binary, fold_unary, mask
from softnic.compiler.ir import ast


def constant_value(chk: Checker, e: ast.Expr) -> Any:
    """The compile-time value of ``e`` (an int or bool), or None when it has none."""
    if id(e) in chk.consts:
        return chk.consts[id(e)]
    if isinstance(e, ast.IntLiteral):
        return e.value
    if isinstance(e, ast.BoolLiteral):
        return e.value
    if isinstance(e, ast.PathExpr):
        sym = chk.syms.get(id(e))
        return sym.value if sym is not None and sym.kind == "const" else None
    if isinstance(e, ast.Unary):
        v = constant_value(chk, e.expr)
        if v is None:
            return None
        return fold_unary(e.op, v, chk.types.get(id(e)))
    if isinstance(e, ast.Binary) and e.op not in ("&&&", ".."):
        a, b = constant_value(chk, e.left), constant_value(chk, e.right)
        if a is None or b is None:
            return None
        return fold_typed_binary(e.op, a, b, chk.types.get(id(e)),
                                 chk.types.get(id(e.right)))
    if isinstance(e, ast.Cast):
        v = constant_value(chk, e.expr)
        return None if v is None else fold_cast(v, chk.types.get(id(e)))
    if isinstance(e, ast.Slice):
        v = constant_value(chk, e.expr)
        if v is None:
            return None
        hi, lo = constant_value(chk, e.hi), constant_value(chk, e.lo)
        return (v >> lo) & mask(hi - lo + 1)
    if isinstance(e, ast.Ternary):
        c = constant_value(chk, e.cond)
        if c is None:
            return None
        return constant_value(chk, e.then if c else e.other)
    return None
