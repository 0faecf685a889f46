"""Function declarations: parameters, body, and that a non-void function returns a value of its
return type on every path.
"""

from __future__ import annotations

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.frontend.desugar import always_returns, walk
from softnic.compiler.ir import ast
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import (
    VoidT,
)


class FunctionsMixin(CheckerState):
    """Checks function bodies and their returns."""

    def check_function(self, d: ast.FunctionDecl, scope: Scope) -> None:
        if d.type_params:
            raise error(d, f"{d.name}: generic functions are unsupported on this target")
        body_scope = scope.child()
        for p in d.params:
            self.check_default_value(p, body_scope)  # type: ignore[attr-defined]  # CallsMixin
            psym = Sym("var", p.name, self.resolve_type(p.type, scope), p, direction=p.direction)
            body_scope.declare(psym)
            self.decl_syms[id(p)] = psym
        self.scopes[id(d)] = body_scope
        self.check_block(d.body, body_scope, "function")
        ret = self.resolve_type(d.ret, scope)
        if not isinstance(ret, VoidT):
            if not always_returns(d.body):
                raise error(d, f"{d.name}: function does not return a value on every path")
            for n in walk(d.body):
                if isinstance(n, ast.ReturnStmt):
                    if n.value is None:
                        raise error(n, f"{d.name}: return without a value in a function returning "
                                    f"{ret.show()}")
                    self.assignable(self.types[id(n.value)], ret, n.value)
        else:
            for n in walk(d.body):
                if isinstance(n, ast.ReturnStmt) and n.value is not None:
                    raise error(n, f"{d.name}: return with a value in a void function")
