"""``compile_program``/``compile_file``: the semantic half of ``softnic compile``, stage by stage.

The stages are the packages of ``softnic.compiler``, run in p4c-bm2-ss's order:

=================  ==================================================================
``frontend``       preprocess -> parse -> front-end passes (``frontend.passes``) -> check
``p4info``         the P4Runtime resources of the front end's checked program
``midend``         mid-end passes -> check again -> CheckTableSize
``bmv2``           lower the checked program to BMv2 JSON
=================  ==================================================================

``ir`` (the syntax tree, types, symbols) and ``diagnostics`` (errors and warnings) are shared by
all of them; nothing in a stage imports a later one. As in p4c-bm2-ss, whose P4Info is
serialized from the front end's program before its mid end runs, the resources the P4Info
writer needs are collected from the program as the front-end passes left it, checked on its
own, so a mid-end rewrite (a direct action call inlined, a table dropped) does not change the
P4Info; the BMv2 JSON comes from the program after all passes.

The front end's check is the first: an error there stops the compile before any mid-end pass
runs, as p4c reports front-end errors before mid-end ones. Every program takes this one route:
the checker takes tuple types, list expressions and constant tuple indices as p4c's
TypeInference does, before the mid end's EliminateTuples makes them structs.

Every user error is a :class:`CompileError` with a source location. Warnings do not stop the
compile; a caller that wants them passes a list as ``warnings`` and they are appended to it in
p4c's order: the front end's, then the mid end's (CheckTableSize), then the back end's. A
caller may pass ``after_front_end``, run once the front end is done (where p4c-bm2-ss writes
the P4Info and checks the P4Runtime file names); an exception it raises ends the compile.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from softnic.compiler.bmv2.lower import lower_program
from softnic.compiler.diagnostics import CompileError, CompileWarning
from softnic.compiler.frontend.check import Checker
from softnic.compiler.frontend.passes import front_end_passes
from softnic.compiler.ir import ast
from softnic.compiler.midend import mid_end_passes
from softnic.compiler.midend.check_table_size import check_table_size
from softnic.compiler.p4info.collect import collect_resources
from softnic.compiler.p4info.resources import ProgramResources

RECURSION_LIMIT = 20000


def compile_program(
    prog: ast.Program,
    program_name: str,
    warnings: list[CompileWarning] | None = None,
    after_front_end: Callable[[], None] | None = None,
) -> tuple[dict[str, Any], ProgramResources]:
    """Check and lower a parsed program; returns (BMv2 JSON dict, resources)."""
    found: list[CompileWarning] = [] if warnings is None else warnings
    for _name, run in front_end_passes():
        run(prog)
    resources = p4rt_view(prog, program_name, found)
    if after_front_end is not None:
        after_front_end()
    for _name, run in mid_end_passes():
        run(prog)
    chk = Checker(prog)
    chk.run()
    # the final check finds the front end's warnings again; each is reported once
    found.extend(w for w in chk.warnings if w not in found)
    found.extend(check_table_size(chk))
    bmv2_json, lower_warnings = lower_program(chk, program_name)
    found.extend(lower_warnings)
    return bmv2_json, resources


def p4rt_view(
    prog: ast.Program, program_name: str, warnings: list[CompileWarning] | None = None
) -> ProgramResources:
    """The P4Runtime resources of the front end's program ``prog`` (after the front-end passes,
    before the mid end), as p4c-bm2-ss serializes its P4Info; its errors are the compile's,
    its warnings the front end's (appended to ``warnings``).

    Checking does not rewrite the program beyond normalising it, and the resources hold no AST
    nodes, so the mid end can go on with the same tree.
    """
    chk = Checker(prog)
    chk.run()
    if warnings is not None:
        warnings.extend(chk.warnings)
    return collect_resources(chk, program_name)


def compile_file(
    path: str | os.PathLike[str],
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str | None] | None = None,
    warnings: list[CompileWarning] | None = None,
    after_front_end: Callable[[], None] | None = None,
) -> tuple[dict[str, Any], ProgramResources]:
    """Preprocess, parse and compile the P4 file at ``path``."""
    from softnic.compiler.frontend.parser import parse_program
    from softnic.compiler.frontend.preprocess import preprocess

    p = os.fspath(path)
    text = preprocess(p, list(include_dirs), defines or {})
    # The passes recurse over the tree; the parser bounds its depth (MAX_NESTING), and this
    # limit leaves every pass room for that depth. A RecursionError past both is still a user
    # error (a program we cannot handle), not a crash.
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    try:
        return compile_program(parse_program(text, p), p, warnings, after_front_end)
    except RecursionError:
        raise CompileError(None, f"{p}: program nesting too deep for softnic") from None
    finally:
        sys.setrecursionlimit(old_limit)
