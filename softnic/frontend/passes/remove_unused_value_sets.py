"""RemoveAllUnusedDeclarations, for parser value sets.

Mirrors what p4c's ``RemoveUnusedDeclarations`` (frontends/p4/unusedDeclarations.h) does to an
``IR::P4ValueSet``: a value set is a plain declaration there (only extern instances are kept when
unused), so one that no select case names is removed. The front end runs the pass before the
P4Info is written, so such a set is in neither the P4Info ``value_sets`` nor the BMv2 JSON's
``parse_vsets``. It runs after parser inlining, so a set of an inlined sub-parser counts as used
when the copied states name it.
"""

from __future__ import annotations

from softnic.frontend import ast
from softnic.frontend.ast_util import walk


def is_value_set(d: object) -> bool:
    return (isinstance(d, ast.InstantiationDecl) and isinstance(d.type, ast.TypeName)
            and d.type.name == "value_set")


def remove_unused_value_sets(prog: ast.Program) -> ast.Program:
    for d in prog.decls:
        if not isinstance(d, ast.ParserDecl) or not any(is_value_set(x) for x in d.locals):
            continue
        used = {n.name for st in d.states for n in walk(st) if isinstance(n, ast.PathExpr)}
        d.locals = [x for x in d.locals if not is_value_set(x) or x.name in used]
    return prog
