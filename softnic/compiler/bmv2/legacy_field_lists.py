"""v1model's deprecated field-list forms ``resubmit(data)``, ``recirculate(data)`` and
``clone3(type, session, data)`` as p4c-bm2-ss 1.2.4 treats them.

p4c's v1model.p4 (since the ``*_preserving_field_list`` externs were added, well before
1.2.4) still declares the three, marked ``@deprecated``, so the front end accepts a call
(with a deprecation warning). But the simple_switch back end (simpleSwitch.cpp) registers
extern converters only for ``clone``, ``clone_preserving_field_list``,
``resubmit_preserving_field_list`` and ``recirculate_preserving_field_list``: a call of one
of the old forms falls to the default ExternConverter, which (without ``--emit-externs``)
reports "Unknown extern function <name>" and emits no JSON. That holds for every argument,
an empty list ``{}`` included. softnic refuses the same calls, at the call, and says what to
write instead.
"""

from __future__ import annotations

from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr

LEGACY_FIELD_LIST_CALLS: dict[str, str] = {
    "resubmit": "resubmit_preserving_field_list",
    "recirculate": "recirculate_preserving_field_list",
    "clone3": "clone_preserving_field_list",
}


def legacy_field_list_message(call: ast.Call, name: str) -> str:
    """p4c-bm2-ss's error for a deprecated field-list call, plus the replacement to use."""
    new = LEGACY_FIELD_LIST_CALLS[name]
    args = "index" if name != "clone3" else "type, session, index"
    return (f"{show_expr(call)}: Unknown extern function {name} (p4c-bm2-ss has no conversion "
            f"for the deprecated v1model {name}); use {new}({args}) and tag the user metadata "
            f"fields to preserve with @field_list(index)")
