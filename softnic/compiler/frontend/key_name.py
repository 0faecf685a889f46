"""The control-plane name of a table key element, as the P4Info and the BMv2 JSON give it.

The front-end pass :mod:`~softnic.compiler.frontend.passes.table_key_names` puts a
``@name`` on every key element before inlining; this reads it back. Kept out of the passes
package so the lowering and the resource collector can import it without importing every pass.
"""

from __future__ import annotations

from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr


def table_key_name(k: ast.KeyElement) -> str:
    """The key's ``@name`` (TableKeyNames gives every key one); for a program that did not go
    through the front-end passes, the expression as written."""
    for a in k.annotations:
        if a.name == "name":
            if a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
                return a.exprs[0].value
            raw = a.raw.strip()
            return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
    return show_expr(k.expr)
