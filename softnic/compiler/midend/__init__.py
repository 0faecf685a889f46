"""The mid end (p4c's backends/bmv2/simple_switch/midend.cpp): passes that run after the P4Info
is built, so none of their rewrites changes it, and the checks p4c makes there.

- RemoveActionParameters: a direct call in ``apply`` replaced by the bound body, a table's bound
  parameters removed; p4c's P4Info still lists that action (gauntlet_inout_slice_table_key-bmv2.p4),
  as the resources come from the program before it.
- EliminateTuples, RemoveAliases: BMv2's mid end eliminates tuples and copies structures; neither
  changes what the P4Info lists.
- LocalCopyPropagation: a no-op copy-in/out removed.
- ``check_table_size`` (CheckTableSize) runs on the checked program after these, in ``compile.py``.
"""

from __future__ import annotations

from softnic.compiler.frontend.passes import Pass
from softnic.compiler.midend.eliminate_tuples import eliminate_tuples
from softnic.compiler.midend.local_copy_propagation import local_copy_propagation
from softnic.compiler.midend.remove_action_parameters import remove_action_parameters
from softnic.compiler.midend.remove_aliases import remove_aliases

# (name, pass), in the order p4c runs the passes they mirror.
PASSES: list[tuple[str, Pass]] = [
    ("RemoveActionParameters", remove_action_parameters),  # direct calls, bound parameters
    ("EliminateTuples", eliminate_tuples),  # tuple types become structs
    ("RemoveAliases", remove_aliases),  # s = {s.b, s.a} through a temporary
    ("LocalCopyPropagation", local_copy_propagation),  # no-op copy-in/out removed
]


def mid_end_passes() -> list[tuple[str, Pass]]:
    """The passes that mirror BMv2's mid end, in order (they run after the P4Info is built)."""
    return list(PASSES)
