"""p4c-bm2-ss's "Conditional execution in actions" rule: inside an action, plain assignments may
be predicated, but an ``if`` or ``?:`` whose branch calls an extern or changes header validity
cannot, so such programs are refused at compile time like p4c-bm2-ss does.

This mirrors p4c's mid-end pass Predication (midend/predication.{h,cpp}), which the BMv2 back
end runs on action bodies: every assignment under an ``if`` - to a field, a slice, a whole
header or stack element - becomes ``lhs = c ? rhs : lhs``; a method call statement (an extern
call, ``setValid``/``setInvalid``, ``push_front``...), ``exit`` or ``return`` under an ``if`` is
refused with "<statement>: Conditional execution in actions unsupported on this target",
positioned at that statement. p4c's front end has already removed what these checks must not
see: ``return`` in actions (RemoveReturns), calls of functions and actions (inlined), and ifs
whose condition is a compile-time constant (ConstantFolding, SimplifyControlFlow).

This module answers "does this statement or expression have side effects".
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr, show_stmt
from softnic.compiler.ir.types import HeaderT

# p4c-bm2-ss's own wording for the refusal.
CONDITIONAL_IN_ACTION = "Conditional execution in actions unsupported on this target"
# Built-in methods that change state (header validity, stack contents).
SIDE_EFFECT_BUILTINS = {"setValid", "setInvalid", "push_front", "pop_front"}


class SideEffectsMixin(CheckerState):
    """Side-effect queries on statements already type-checked."""

    def has_side_effects(self, s: Any) -> bool:
        """True if running ``s`` calls an extern or changes header validity (p4c-bm2-ss can
        predicate plain assignments inside actions, but not those)."""
        if isinstance(s, ast.BlockStmt):
            return any(self.has_side_effects(x) for x in s.stmts)
        if isinstance(s, ast.IfStmt):
            return self.has_side_effects(s.then) or (
                s.other is not None and self.has_side_effects(s.other)
            )
        if isinstance(s, ast.CallStmt):
            info = self.calls.get(id(s.call))
            if info is None:
                return True
            if info.kind == "action":
                return self.has_side_effects(info.decl.body)
            if info.kind == "builtin":
                return info.name in SIDE_EFFECT_BUILTINS
            return True
        if isinstance(s, ast.AssignStmt):
            return expr_has_call(s.rhs, self) or expr_has_call(s.lhs, self)
        if isinstance(s, (ast.VarDecl,)):
            return s.init is not None and expr_has_call(s.init, self)
        if isinstance(s, (ast.ExitStmt, ast.ReturnStmt)):
            return True
        return False


    def unpredicable(self, s: Any) -> Any:
        """The first statement in ``s`` that p4c's Predication cannot turn into ``?:`` (it
        refuses it under an if in an action), or None. An inner ``if`` whose condition is a
        compile-time constant counts only with its taken branch, as p4c folds it first."""
        if isinstance(s, ast.BlockStmt):
            for x in s.stmts:
                bad = self.unpredicable(x)
                if bad is not None:
                    return bad
            return None
        if isinstance(s, ast.IfStmt):
            folded = self.const_eval(s.cond, None)
            branches = [s.then, s.other]
            if isinstance(folded, bool):
                branches = [s.then] if folded else [s.other]
            for b in branches:
                bad = self.unpredicable(b) if b is not None else None
                if bad is not None:
                    return bad
            return None
        if isinstance(s, ast.CallStmt):
            info = self.calls.get(id(s.call))
            if info is not None and info.kind == "action":
                return self.unpredicable(info.decl.body)
            return s if self.has_side_effects(s) else None
        if self.header_from_initializer(s):
            return s
        return s if self.has_side_effects(s) else None

    def header_from_initializer(self, s: Any) -> bool:
        """``h = {...}`` for a header ``h``: p4c's front end writes it as ``h.setValid()``
        followed by the assignment, and that method call is what Predication refuses."""
        return (isinstance(s, ast.AssignStmt) and isinstance(s.rhs, (ast.ListExpr, ast.StructInit))
                and isinstance(self.types.get(id(s.lhs)), HeaderT))

    def unpredicable_text(self, s: Any) -> str:
        """How p4c's message names the refused statement."""
        if self.header_from_initializer(s):
            return f"{show_expr(s.lhs)}.setValid()"
        return show_stmt(s)



def expr_has_call(e: Any, chk: CheckerState) -> bool:
    """Does evaluating ``e`` call an extern or function (anything with side effects)?"""
    if isinstance(e, ast.Call):
        info = chk.calls.get(id(e))
        if info is None or info.kind != "builtin" or info.name not in ("isValid",
                                                                      "minSizeInBits",
                                                                      "minSizeInBytes"):
            return True
    if isinstance(e, ast.Expr):
        for v in vars(e).values():
            if isinstance(v, ast.Expr) and expr_has_call(v, chk):
                return True
            if isinstance(v, list):
                for x in v:
                    if isinstance(x, ast.Expr) and expr_has_call(x, chk):
                        return True
                    if isinstance(x, ast.Argument) and expr_has_call(x.value, chk):
                        return True
    return False


def contains_side_effect_in_ternary(e: Any, chk: CheckerState) -> bool:
    if isinstance(e, ast.Ternary):
        return expr_has_call(e.then, chk) or expr_has_call(e.other, chk)
    if isinstance(e, ast.Expr):
        return any(
            isinstance(v, ast.Expr) and contains_side_effect_in_ternary(v, chk)
            for v in vars(e).values()
        )
    return False
