"""RemoveActionParameters: direct action calls in ``apply`` blocks and the parameters a table's
actions list binds (mid end).

Mirrors p4c's RemoveActionParameters (midend/removeParameters.cpp), which BMv2's mid end
(backends/bmv2/simple_switch/midend.cpp) runs first of its passes, after the P4Info has been
serialized from the front end's program: an action's ``in``/``out``/``inout`` parameters become
variables copied in before its body and back after it. For a direct call in ``apply`` the bound
body replaces the call where one BMv2 table invocation cannot express it (BMv2's mid end then
moves what is left into synthesized actions and tables, p4c's SynthesizeActions and
MoveActionsToTables, which softnic's lowering does); a call with compile-time action data stays
a call, for the lowering's hidden ``tbl_<action>``. A table's ``actions = { a(hdr.x); }`` loses
the bound arguments, the action its directional parameters (p4c's LocalizeActions and
DuplicateActions give each such table its own copy, under the action's control-plane name).

The front end's InlineActions (:mod:`softnic.compiler.frontend.passes.inline_actions`) has already
inlined every action called from an action, and shares its machinery with this pass: see that
module for the calling convention both follow.
"""

from __future__ import annotations

from softnic.compiler.frontend.passes.inline_actions import InlineActions
from softnic.compiler.ir import ast


def remove_action_parameters(prog: ast.Program) -> ast.Program:
    """p4c's RemoveActionParameters: direct calls in ``apply`` and tables' bound parameters."""
    return InlineActions(prog, bodies=False, applies=True).run()
