"""Statements: blocks, assignments, call statements, if, switch (on an action_run or on a value),
local variables and constants, exit and return.

``ctx`` says where the statement sits ('action', 'function', 'apply', 'parser', 'local'),
because what is allowed differs: e.g. no switch in actions and no conditional side effects in
actions on this target.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.fold import mask
from softnic.compiler.frontend.check.side_effects import (
    CONDITIONAL_IN_ACTION,
    contains_side_effect_in_ternary,
)
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import (
    ActionEnumT,
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    ExternT,
    PType,
    VoidT,
)


class StatementsMixin(CheckerState):
    """Checks statements in their context."""

    # > 0 while checking the dead branch of an if whose condition is a compile-time constant
    _dead_branches: int = 0

    def check_block(self, blk: ast.BlockStmt, scope: Scope, ctx: str) -> None:
        inner = scope.child()
        for s in blk.stmts:
            self.check_stmt(s, inner, ctx)

    def check_stmt(self, s: Any, scope: Scope, ctx: str) -> None:
        if isinstance(s, ast.BlockStmt):
            self.check_block(s, scope, ctx)
        elif isinstance(s, ast.AssignStmt):
            lt = self.type_of(s.lhs, scope)
            self.check_lvalue(s.lhs, scope)
            rt = self.type_of(s.rhs, scope, lt)
            self.assignable(rt, lt, s)
            self.fit_literal(s.rhs, lt)
            if ctx == "action" and contains_side_effect_in_ternary(s.rhs, self):
                raise error(s, CONDITIONAL_IN_ACTION)
        elif isinstance(s, ast.CallStmt):
            self.type_of(s.call, scope)
            info = self.calls.get(id(s.call))
            if info is not None and info.kind == "action" and ctx == "action":
                if info.name in self._cur_action:
                    raise error(s, f"{show_expr(s.call)}: recursive action call")
        elif isinstance(s, ast.IfStmt):
            ct = self.type_of(s.cond, scope)
            if not isinstance(ct, BoolT):
                raise error(s.cond, f"{show_expr(s.cond)}: condition must be bool, not {ct.show()}")
            # p4c's Predication (side_effects.py) refuses, at the statement it cannot predicate,
            # what is left under an if in an action; an if whose condition is a compile-time
            # constant is folded away before that, so its dead branch is never looked at
            folded = self.const_eval(s.cond, scope)
            for branch, live in ((s.then, folded is not False), (s.other, folded is not True)):
                if branch is None:
                    continue
                self._dead_branches += 0 if live else 1
                try:
                    self.check_stmt(branch, scope.child(), ctx)
                finally:
                    self._dead_branches -= 0 if live else 1
            if ctx == "action" and not isinstance(folded, bool) and not self._dead_branches:
                bad = self.unpredicable(s)
                if bad is not None:
                    raise error(bad, f"{self.unpredicable_text(bad)}: {CONDITIONAL_IN_ACTION}")
        elif isinstance(s, ast.SwitchStmt):
            if ctx in ("action", "function"):
                raise error(s, "switch statements in actions are unsupported on this target")
            self.check_switch(s, scope, ctx)
        elif isinstance(s, ast.VarDecl):
            t = self.resolve_type(s.type, scope)
            if isinstance(t, (ExternT, VoidT)):
                raise error(s, f"{s.name}: variables of type {t.show()} are not allowed")
            if s.init is not None:
                it = self.type_of(s.init, scope, t)
                self.assignable(it, t, s.init)
                self.fit_literal(s.init, t)
            vsym = Sym("var", s.name, t, s, direction="inout")
            scope.declare(vsym)
            self.decl_syms[id(s)] = vsym
        elif isinstance(s, ast.ConstDecl):
            self.declare_const(s, scope)
        elif isinstance(s, ast.ExitStmt):
            if ctx == "function":
                raise error(s, "exit in functions is unsupported on this target")
        elif isinstance(s, ast.ReturnStmt):
            if s.value is not None:
                if ctx != "function":
                    raise error(s, "return with a value outside a function")
                self.type_of(s.value, scope)
        elif isinstance(s, ast.EmptyStmt):
            pass
        elif isinstance(s, ast.InstantiationDecl):
            raise error(s, f"{s.name}: instantiation inside a block is not allowed")
        elif isinstance(s, ast.ActionDecl):
            raise error(s, f"{s.name}: nested action declarations are not allowed")
        else:
            raise error(s, f"{type(s).__name__}: unsupported statement")

    def check_switch(self, s: ast.SwitchStmt, scope: Scope, ctx: str) -> None:
        t = self.type_of(s.expr, scope)
        if not isinstance(t, ActionEnumT):
            self.check_value_switch(s, t, scope, ctx)
            return
        table_sym = self.table_syms.get(t.table)
        allowed = set()
        if table_sym is not None:
            allowed = {r.name for r in self.table_action_refs(table_sym.decl)}
        seen: set[str] = set()
        for c in s.cases:
            if isinstance(c.label, ast.Default):
                pass
            elif isinstance(c.label, ast.PathExpr):
                sym = self.lookup(c.label, scope)
                if sym.kind != "action" or (allowed and c.label.name not in allowed):
                    raise error(c.label, f"{c.label.name}: not an action of table {t.table}")
                if c.label.name in seen:
                    raise error(c.label, f"{c.label.name}: duplicate switch label")
                seen.add(c.label.name)
            else:
                raise error(c.label, f"{show_expr(c.label)}: switch label must be an action name")
            if c.body is not None:
                self.check_block(c.body, scope, ctx)

    def check_value_switch(self, s: ast.SwitchStmt, t: PType, scope: Scope, ctx: str) -> None:
        """``switch (e) { 1: {...} default: {...} }`` on a bit<W>/int<W>/enum/error value;
        the labels must be distinct compile-time constants of e's type."""
        if not isinstance(t, (BitT, EnumT, ErrorT)):
            raise error(s.expr, f"{show_expr(s.expr)}: switch on a value of type {t.show()} is "
                        "not allowed")
        seen: set[Any] = set()
        for i, c in enumerate(s.cases):
            if isinstance(c.label, ast.Default):
                if i != len(s.cases) - 1:
                    raise error(c.label, "default label must be the last switch label")
            else:
                lt = self.type_of(c.label, scope, t)
                self.assignable(lt, t, c.label)
                v = self.const_eval(c.label, scope)
                if v is None:
                    v = self.consts.get(id(c.label))
                if not isinstance(v, int):
                    raise error(c.label, f"{show_expr(c.label)}: switch label must be a "
                                "compile-time constant")
                if isinstance(t, BitT):
                    v &= mask(t.width)
                if v in seen:
                    raise error(c.label, f"{show_expr(c.label)}: duplicate switch label")
                seen.add(v)
                self.consts[id(c.label)] = v
            if c.body is not None:
                self.check_block(c.body, scope, ctx)
