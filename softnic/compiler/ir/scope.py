"""Symbols and lexical scopes.

P4_16 resolves a name to the innermost declaration (action parameters, then locals of the
enclosing action/state/apply block, then the control or parser parameters and locals, then the top
level). A :class:`Scope` is one of those levels; lookups walk outward through ``parent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir.types import PType


@dataclass
class Sym:
    """What a name means.

    kind: 'var' (variable or parameter), 'const', 'action', 'table', 'instance' (extern object),
    'function', 'extern_func', 'type', 'generic' (a generic type declaration awaiting
    arguments: header/struct/extern), 'block' (parser/control declaration), 'state', 'match_kind'.
    """

    kind: str
    name: str
    type: PType | None = None
    decl: Any = None
    direction: str | None = None
    value: Any = None  # const value (int | bool) when known
    owner: str = ""  # enclosing control/parser name ("" at top level)
    qualified: str = ""  # control-plane name (actions, tables, instances)
    overloads: list[Any] = field(default_factory=list)  # extern functions with one name


class Scope:
    def __init__(self, parent: Scope | None = None, owner: str = "") -> None:
        self.parent = parent
        self.syms: dict[str, Sym] = {}
        self.owner = owner if owner or parent is None else parent.owner

    def declare(self, sym: Sym) -> None:
        """Add ``sym``; a second declaration of one name in one scope is an error, as in p4c
        (silently keeping either one would compile a program the user did not write)."""
        prev = self.syms.get(sym.name)
        if prev is not None:
            loc = getattr(sym.decl, "loc", None)
            raise CompileError(loc, f"{sym.name}: Duplicates declaration {prev.name}")
        self.syms[sym.name] = sym

    def bind(self, sym: Sym) -> None:
        """Add or replace ``sym``: for type-variable bindings, where a later, more specific
        binding (explicit type argument over the generic parameter) must win."""
        self.syms[sym.name] = sym

    def lookup(self, name: str) -> Sym | None:
        if name.startswith("."):
            root = self
            while root.parent is not None:
                root = root.parent
            return root.syms.get(name[1:])
        scope: Scope | None = self
        while scope is not None:
            sym = scope.syms.get(name)
            if sym is not None:
                return sym
            scope = scope.parent
        return None

    def child(self, owner: str = "") -> Scope:
        return Scope(self, owner)
