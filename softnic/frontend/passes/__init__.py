"""The front end's source-to-source passes, run in p4c's order before the checker.

Each pass lives in its own module, is named after the p4c pass it mirrors, and rewrites the
parsed :class:`~softnic.frontend.ast.Program` in place, keeping the source location of every
node it creates so later errors still point at the user's code. :data:`PASSES` is the order
they run in; add a new pass where p4c runs its counterpart (frontends/p4/frontend.cpp, then
midend/ for BMv2's mid end).
"""

from __future__ import annotations

from collections.abc import Callable

from softnic.frontend import ast
from softnic.frontend.desugar import desugar
from softnic.frontend.passes.eliminate_tuples import eliminate_tuples
from softnic.frontend.passes.inline_actions import inline_actions
from softnic.frontend.passes.inline_parsers import inline_parsers
from softnic.frontend.passes.move_initializers import move_initializers
from softnic.frontend.passes.remove_aliases import remove_aliases
from softnic.frontend.passes.side_effect_ordering import side_effect_ordering
from softnic.frontend.passes.specialize import specialize
from softnic.frontend.passes.specialize_functions import specialize_functions

Pass = Callable[[ast.Program], object]

# (name, pass), in the order p4c runs the passes they mirror.
PASSES: list[tuple[str, Pass]] = [
    # UniqueNames/ResolveReferences, InlineControls/InlineFunctions, RemoveParserControlFlow:
    # one module today (softnic.frontend.desugar).
    ("SpecializeAll", specialize),  # generic parsers/controls, per instantiation
    ("SpecializeGenericFunctions", specialize_functions),  # one copy per type arguments
    ("MoveInitializers", move_initializers),  # control/parser-level initializers -> statements
    ("SideEffectOrdering", side_effect_ordering),  # evaluation order made explicit
    ("Desugar", desugar),
    ("InlineParsers", inline_parsers),  # p4c Inline (GeneralInliner), parser half
    ("InlineActions", inline_actions),  # p4c InlineActions + RemoveActionParameters
    ("EliminateTuples", eliminate_tuples),  # mid end: tuple types become structs
    ("RemoveAliases", remove_aliases),  # mid end: s = {s.b, s.a} through a temporary
]


def run_passes(prog: ast.Program) -> ast.Program:
    """Run every front-end pass over ``prog`` in order."""
    for _name, run in PASSES:
        run(prog)
    return prog
