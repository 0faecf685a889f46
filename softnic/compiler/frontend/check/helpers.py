"""Small helpers every checker module shares: building a positioned :class:`CompileError`,
reading ``@name(...)``-style annotations, and p4c's width limit.

They live apart from the checker so the lowering can use the same error wording and annotation
reading without depending on the type checker itself.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.diagnostics import error
from softnic.compiler.ir import ast


def annotation(node: Any, name: str) -> ast.Annotation | None:
    for a in getattr(node, "annotations", []) or []:
        if a.name == name:
            return a
    return None


def annotation_string(node: Any, name: str) -> str | None:
    """The string argument of ``@name("x")``-style annotations."""
    a = annotation(node, name)
    if a is None:
        return None
    if a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
        return a.exprs[0].value
    raw = a.raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1]
    return raw


# p4c's DefaultP4CConfiguration::maximumWidthSupported(): widths of bit<>, int<> and varbit<>
# above this are refused (ir/configuration.h). It also keeps our big-int arithmetic cheap.
MAX_WIDTH = 2048


def check_width(node: ast.Node, width: int, kind: str) -> None:
    """Refuse absurd widths up front, with p4c's message, before anything allocates by them."""
    if width > MAX_WIDTH:
        raise error(node, f"{kind}<{width}>: Compiler only supports widths up to {MAX_WIDTH}")
