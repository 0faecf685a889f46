"""The front end's source-to-source passes, run in p4c's order before the checker.

Each pass lives in its own module, is named after the p4c pass it mirrors, and rewrites the
parsed :class:`~softnic.compiler.ir.ast.Program` in place, keeping the source location of every
node it creates so later errors still point at the user's code. :data:`PASSES` is the order
they run in; add a new pass where p4c runs its counterpart (frontends/p4/frontend.cpp, then
midend/ for BMv2's mid end).

p4c-bm2-ss writes the P4Info from the program its front end produced, before the mid end runs
(backends/bmv2/simple_switch/main.cpp: ``serializeP4RuntimeIfRequired`` between ``FrontEnd`` and
``SimpleSwitchMidEnd``), so a mid-end rewrite never changes the P4Info. :data:`MID_END` names
the passes that mirror mid-end work: the first of them in :data:`PASSES` starts the mid end, and
every pass from there on (also one registered later without a name here) belongs to it.
:func:`front_end_passes` and :func:`mid_end_passes` give the two halves; ``compile.py`` collects
the P4Runtime resources between them.
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
from softnic.compiler.midend.eliminate_tuples import eliminate_tuples
from softnic.compiler.midend.local_copy_propagation import local_copy_propagation
from softnic.compiler.midend.remove_action_parameters import remove_action_parameters
from softnic.compiler.midend.remove_aliases import remove_aliases

Pass = Callable[[ast.Program], object]

# (name, pass), in the order p4c runs the passes they mirror.
PASSES: list[tuple[str, Pass]] = [
    # -- front end (frontends/p4/frontend.cpp)
    # UniqueNames/ResolveReferences, InlineControls/InlineFunctions, RemoveParserControlFlow:
    # one module today (softnic.compiler.frontend.desugar).
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
    # -- mid end from here on (MID_END): the P4Info is collected before these run
    ("RemoveActionParameters", remove_action_parameters),  # direct calls, bound parameters
    ("EliminateTuples", eliminate_tuples),  # mid end: tuple types become structs
    ("RemoveAliases", remove_aliases),  # mid end: s = {s.b, s.a} through a temporary
    ("LocalCopyPropagation", local_copy_propagation),  # mid end: no-op copy-in/out removed
]

# Every pass above the first of these mirrors a p4c front-end pass (frontends/p4/frontend.cpp);
# these mirror mid-end work (backends/bmv2/simple_switch/midend.cpp).
# - RemoveActionParameters: a direct call in ``apply`` replaced by the bound body, a table's
#   bound parameters removed; p4c's P4Info still lists that action
#   (gauntlet_inout_slice_table_key-bmv2.p4), as the resources come from the program before it.
# - EliminateTuples, RemoveAliases: registered as mid-end passes (BMv2's mid end eliminates tuples
#   and copies structures); neither changes what the P4Info lists.
MID_END: frozenset[str] = frozenset({"RemoveActionParameters", "EliminateTuples", "RemoveAliases"})

def _mid_end_start() -> int:
    for i, (name, _run) in enumerate(PASSES):
        if name in MID_END:
            return i
    return len(PASSES)


def front_end_passes() -> list[tuple[str, Pass]]:
    """The passes that mirror p4c's front end, in order."""
    return PASSES[: _mid_end_start()]


def mid_end_passes() -> list[tuple[str, Pass]]:
    """The passes that mirror BMv2's mid end, in order (they run after the P4Info is built)."""
    return PASSES[_mid_end_start():]
