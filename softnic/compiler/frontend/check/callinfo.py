"""The record of what a call expression invokes (:class:`CallInfo`) and the parameter shape it
was checked against (:class:`ParamT`).

The checker fills ``Checker.calls`` with these and the lowering reads them back, so argument
binding and overload choice are decided once, here in the front end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softnic.compiler.ir import ast
from softnic.compiler.ir.scope import Sym
from softnic.compiler.ir.types import (
    PType,
    VoidT,
)


@dataclass
class ParamT:
    name: str
    direction: str | None
    type: PType
    has_default: bool = False


@dataclass
class CallInfo:
    """What a call expression invokes.

    kind: 'action' | 'function' | 'extern_func' | 'method' (extern object method) | 'builtin'
    (isValid, setValid, apply, push_front, ...) | 'ctor' (constructor of a parser/control).
    ``args`` holds, for each parameter in order, the argument expression (None when omitted).
    """

    kind: str
    name: str
    decl: Any = None
    sym: Sym | None = None
    base: ast.Expr | None = None
    params: list[ParamT] = field(default_factory=list)
    args: list[ast.Expr | None] = field(default_factory=list)
    bindings: dict[str, PType] = field(default_factory=dict)
    ret: PType = field(default_factory=VoidT)
