"""``compile_program``/``compile_file``: the semantic half of ``softnic compile``.

preprocess -> parse -> desugar (p4c's inlining rewrites) -> check (names, types, p4c-bm2-ss
restrictions) -> lower (BMv2 JSON); the P4Runtime resources the P4Info writer needs are
collected from the checked program (``p4rt_resources``), not from the lowering. Every user
error is a :class:`CompileError` with a source location. Warnings do not stop the compile; a
caller that wants them passes a list as ``warnings`` and they are appended to it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from softnic.frontend import ast
from softnic.frontend.check import Checker
from softnic.frontend.diagnostics import CompileWarning
from softnic.frontend.errors import CompileError
from softnic.frontend.lower import lower_program
from softnic.frontend.p4rt_resources import collect_resources
from softnic.frontend.passes import run_passes
from softnic.frontend.resources import ProgramResources

RECURSION_LIMIT = 20000


def compile_program(
    prog: ast.Program,
    program_name: str,
    warnings: list[CompileWarning] | None = None,
) -> tuple[dict[str, Any], ProgramResources]:
    """Check and lower a parsed program; returns (BMv2 JSON dict, resources)."""
    run_passes(prog)
    chk = Checker(prog)
    chk.run()
    bmv2_json, lower_warnings = lower_program(chk, program_name)
    # after the lowering, which refuses what the target cannot run before anything else
    resources = collect_resources(chk, program_name)
    if warnings is not None:
        warnings.extend(chk.warnings)
        warnings.extend(lower_warnings)
    return bmv2_json, resources


def compile_file(
    path: str | os.PathLike[str],
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str | None] | None = None,
    warnings: list[CompileWarning] | None = None,
) -> tuple[dict[str, Any], ProgramResources]:
    """Preprocess, parse and compile the P4 file at ``path``."""
    from softnic.frontend.parser import parse_program
    from softnic.frontend.preprocess import preprocess

    p = os.fspath(path)
    text = preprocess(p, list(include_dirs), defines or {})
    # The passes recurse over the tree; the parser bounds its depth (MAX_NESTING), and this
    # limit leaves every pass room for that depth. A RecursionError past both is still a user
    # error (a program we cannot handle), not a crash.
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    try:
        return compile_program(parse_program(text, p), p, warnings)
    except RecursionError:
        raise CompileError(None, f"{p}: program nesting too deep for softnic") from None
    finally:
        sys.setrecursionlimit(old_limit)
