"""The checker's findings and working state, shared by every checker mixin.

The mixins in this package each own one part of the language, but they all read and write the
same tables (types, symbols, calls, folded constants, scopes); declaring them once here keeps
those tables - the interface the lowering reads - in a single visible place.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.diagnostics import CompileWarning
from softnic.compiler.frontend.check.callinfo import CallInfo
from softnic.compiler.ir import ast
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import EnumT, PType


class CheckerState:
    """Tables keyed by ``id(node)`` that the checker fills and the lowering reads."""

    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.top = Scope()
        self.types: dict[int, PType] = {}
        self.syms: dict[int, Sym] = {}
        self.calls: dict[int, CallInfo] = {}
        self.consts: dict[int, Any] = {}  # id(expr) -> folded constant value
        self.scopes: dict[int, Scope] = {}  # id(decl) -> scope its body was checked in
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.main: ast.InstantiationDecl | None = None
        self.enums: list[EnumT] = []
        self.actions: list[Sym] = []
        self._cur_action: list[str] = []
        self.table_syms: dict[str, Sym] = {}
        self.decl_syms: dict[int, Sym] = {}  # id(Param/VarDecl/instance/action/table) -> Sym
        self.warnings: list[CompileWarning] = []

    def error_value(self, name: str) -> int:
        return self.errors.index(name)
