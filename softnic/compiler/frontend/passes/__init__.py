"""The front end's source-to-source passes (p4c's frontends/p4/frontend.cpp), in p4c's order.

Each pass lives in its own module, is named after the p4c pass it mirrors, and rewrites the
parsed :class:`~softnic.compiler.ir.ast.Program` in place, keeping the source location of every
node it creates so later errors still point at the user's code. :data:`PASSES` is the order they
run in; add a new pass where p4c runs its counterpart. The mid end's passes are
:mod:`softnic.compiler.midend`'s; ``compile.py`` runs this list, collects the P4Runtime resources
from the program it leaves (p4c-bm2-ss serializes its P4Info between ``FrontEnd`` and
``SimpleSwitchMidEnd``, backends/bmv2/simple_switch/main.cpp), then runs the mid end.
"""

from __future__ import annotations

from collections.abc import Callable

from softnic.compiler.frontend.desugar import desugar
from softnic.compiler.frontend.passes.inline_actions import inline_actions
from softnic.compiler.frontend.passes.inline_parsers import inline_parsers
from softnic.compiler.frontend.passes.instantiate_direct_calls import instantiate_direct_calls
from softnic.compiler.frontend.passes.move_initializers import move_initializers
from softnic.compiler.frontend.passes.remove_all_unused_declarations import (
    remove_all_unused_declarations,
)
from softnic.compiler.frontend.passes.side_effect_ordering import side_effect_ordering
from softnic.compiler.frontend.passes.specialize import specialize
from softnic.compiler.frontend.passes.specialize_functions import specialize_functions
from softnic.compiler.frontend.passes.table_key_names import table_key_names
from softnic.compiler.ir import ast

Pass = Callable[[ast.Program], object]

# (name, pass), in the order p4c runs the passes they mirror.
PASSES: list[tuple[str, Pass]] = [
    # UniqueNames/ResolveReferences, InlineControls/InlineFunctions, RemoveParserControlFlow:
    # one module today (desugar).
    ("InstantiateDirectCalls", instantiate_direct_calls),  # Sub.apply() -> an instance
    ("SpecializeAll", specialize),  # generic parsers/controls, per instantiation
    ("SpecializeGenericFunctions", specialize_functions),  # one copy per type arguments
    ("TableKeyNames", table_key_names),  # @name on every key, from its text before inlining
    ("MoveInitializers", move_initializers),  # control/parser-level initializers -> statements
    ("SideEffectOrdering", side_effect_ordering),  # evaluation order made explicit
    ("Desugar", desugar),
    ("InlineParsers", inline_parsers),  # p4c Inline (GeneralInliner), parser half
    # blocks taking an instance argument (all inlined), value sets no select names
    ("RemoveAllUnusedDeclarations", remove_all_unused_declarations),
    # p4c runs InlineActions right after Inline, and RemoveAllUnusedDeclarations again later;
    # here after the unused blocks are gone (an action called only from actions stays
    # declared, and the P4Info lists only referenced actions)
    ("InlineActions", inline_actions),  # actions called from actions
]


def front_end_passes() -> list[tuple[str, Pass]]:
    """The passes that mirror p4c's front end, in order."""
    return list(PASSES)
