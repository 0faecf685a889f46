"""The v1model architecture's top level, read from a checked program: the six blocks
``V1Switch(parser, verifyChecksum, ingress, egress, computeChecksum, deparser) main`` binds,
and the extern instances declared outside them. The P4Info collector, the mid end's table-size
check and the BMv2 lowering all start from here (p4c's evaluator gives them its toplevel block).
"""

from __future__ import annotations

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check import Checker
from softnic.compiler.ir import ast
from softnic.compiler.ir.scope import Sym


def v1switch_blocks(chk: Checker) -> tuple[ast.ParserDecl, ast.ControlDecl, ast.ControlDecl,
                                           ast.ControlDecl, ast.ControlDecl, ast.ControlDecl]:
    """The six blocks of ``V1Switch(parser, verifyChecksum, ingress, egress, computeChecksum,
    deparser) main``."""
    main = chk.main
    if main is None:
        raise error(None, "main: no V1Switch instantiation")
    blocks = []
    for a in main.args:
        info = chk.calls.get(id(a.value))
        if info is None:
            raise error(a, "main: expected parser/control instantiations")
        blocks.append(info.decl)
    if len(blocks) != 6:
        raise error(main, "main: only V1Switch(parser, verifyChecksum, ingress, egress, "
                    "computeChecksum, deparser) is supported")
    for d, kind in zip(blocks, (ast.ParserDecl, ast.ControlDecl, ast.ControlDecl,
                                ast.ControlDecl, ast.ControlDecl, ast.ControlDecl), strict=True):
        if not isinstance(d, kind):
            raise error(main, f"main: {d.name} has the wrong kind of block")
    parser_d, vck_d, ig_d, eg_d, ck_d, dep_d = blocks
    return parser_d, vck_d, ig_d, eg_d, ck_d, dep_d


def top_level_instances(chk: Checker) -> list[Sym]:
    """The instances declared at the top level (``main`` excluded), in declaration order."""
    return [chk.decl_syms[id(d)] for d in chk.prog.decls
            if isinstance(d, ast.InstantiationDecl) and d is not chk.main
            and id(d) in chk.decl_syms]
