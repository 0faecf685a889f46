"""Controls: parameters, local declarations (constants, variables, instances, actions, tables,
functions) and the ``apply`` block.
"""

from __future__ import annotations

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.scope import Scope, Sym


class ControlsMixin(CheckerState):
    """Checks control declarations and their locals."""

    def check_control(self, d: ast.ControlDecl) -> None:
        scope = self.enter_block(d, "controls")
        self.check_block(d.apply, scope, "apply")

    def enter_block(self, d: ast.ControlDecl | ast.ParserDecl, kind: str) -> Scope:
        """The scope of a control or parser: its parameters, then its local declarations."""
        if d.type_params:
            raise error(d, f"{d.name}: generic {kind} are unsupported on this target")
        scope = self.top.child(owner=d.name)
        self.scopes[id(d)] = scope
        self.declare_params(d.params + d.ctor_params, scope)
        for loc in d.locals:
            self.declare_local(loc, scope, d.name)
        return scope

    def declare_local(self, d: ast.Decl, scope: Scope, owner: str) -> None:
        if isinstance(d, ast.ConstDecl):
            self.declare_const(d, scope)
        elif isinstance(d, ast.VarDecl):
            self.check_stmt(d, scope, "local")
        elif isinstance(d, ast.InstantiationDecl):
            self.declare_instance(d, scope, owner)
        elif isinstance(d, ast.ActionDecl):
            self.declare_action(d, scope, owner)
        elif isinstance(d, ast.TableDecl):
            self.declare_table(d, scope, owner)
        elif isinstance(d, ast.FunctionDecl):
            scope.declare(Sym("function", d.name, None, d))
            self.check_function(d, scope)
        else:
            raise error(d, f"{type(d).__name__}: unsupported local declaration")
