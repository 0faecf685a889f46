"""The :class:`Checker`: the P4_16 name resolver and type checker, assembled from one mixin per
part of the language (declarations, types, constants, expressions, calls, statements, parsers,
controls, tables).

Only the entry point lives here; each mixin's module says which rules it enforces.
"""

from __future__ import annotations

from softnic.frontend.check.assign import AssignMixin
from softnic.frontend.check.calls import CallsMixin
from softnic.frontend.check.constants import ConstantsMixin
from softnic.frontend.check.controls import ControlsMixin
from softnic.frontend.check.declarations import DeclarationsMixin
from softnic.frontend.check.expressions import ExpressionsMixin
from softnic.frontend.check.functions import FunctionsMixin
from softnic.frontend.check.parsers import ParsersMixin
from softnic.frontend.check.resolve import ResolveMixin
from softnic.frontend.check.side_effects import SideEffectsMixin
from softnic.frontend.check.stacks import StacksMixin
from softnic.frontend.check.statements import StatementsMixin
from softnic.frontend.check.tables import TablesMixin
from softnic.frontend.errors import CompileError


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
