"""The :class:`Checker`: the P4_16 name resolver and type checker, assembled from one mixin per
part of the language (declarations, types, constants, expressions, calls, statements, parsers,
controls, tables).

Only the entry point lives here; each mixin's module says which rules it enforces.
"""

from __future__ import annotations

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.frontend.check.assign import AssignMixin
from softnic.compiler.frontend.check.calls import CallsMixin
from softnic.compiler.frontend.check.constants import ConstantsMixin
from softnic.compiler.frontend.check.controls import ControlsMixin
from softnic.compiler.frontend.check.declarations import DeclarationsMixin
from softnic.compiler.frontend.check.expressions import ExpressionsMixin
from softnic.compiler.frontend.check.functions import FunctionsMixin
from softnic.compiler.frontend.check.parsers import ParsersMixin
from softnic.compiler.frontend.check.resolve import ResolveMixin
from softnic.compiler.frontend.check.side_effects import SideEffectsMixin
from softnic.compiler.frontend.check.stacks import StacksMixin
from softnic.compiler.frontend.check.statements import StatementsMixin
from softnic.compiler.frontend.check.tables import TablesMixin


class Checker(
    DeclarationsMixin,
    ResolveMixin,
    ConstantsMixin,
    ExpressionsMixin,
    AssignMixin,
    CallsMixin,
    StatementsMixin,
    SideEffectsMixin,
    FunctionsMixin,
    ParsersMixin,
    ControlsMixin,
    TablesMixin,
    StacksMixin,
):
    """Checks a whole program; construct with the parsed program, then call :meth:`run`."""

    def run(self) -> None:
        for d in self.prog.decls:
            self.declare_top(d)
        if self.main is None:
            # No position, as p4c: the program's first declaration is in core.p4, not a place
            # the user can fix anything.
            raise CompileError(None, "No main package instantiation found; declare one, e.g. "
                               "'V1Switch(MyParser(), ..., MyDeparser()) main;'")
        self.check_stack_contexts()
