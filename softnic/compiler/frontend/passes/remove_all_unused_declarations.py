"""RemoveAllUnusedDeclarations (p4c frontends/p4/unusedDeclarations.cpp), as it runs after the
inliner in frontends/p4/frontend.cpp: the declarations the inlining left unused are dropped.
Softnic removes the two kinds whose presence would show (the others are never lowered):

- blocks that take an instance as a constructor argument. Once every instance of a control or
  parser has been inlined into its caller, the declaration is unused. That matters for one kind
  of block only: ``control Twice(...)(Inc c)`` instantiated with an existing instance
  (``Inc() inc; Twice(inc) tw;``). SpecializeAll keeps its constructor parameter ``c`` (the
  argument is an instance, shared, not a constructor call that could become a local), Desugar
  inlines ``tw`` with ``c`` bound to ``inc``, and the declaration that is left still applies a
  constructor parameter, which nothing can instantiate any more: every instantiation of such a
  block is a local of another block (a package argument is a constructor call, specialised
  away), and all of them have been inlined.
- parser value sets no select case names. A value set is a plain declaration for p4c's
  ``RemoveUnusedDeclarations`` (frontends/p4/unusedDeclarations.h; only extern instances are
  kept when unused), so an unnamed one is removed. The front end runs the pass before the P4Info
  is written, so such a set is in neither the P4Info ``value_sets`` nor the BMv2 JSON's
  ``parse_vsets``. It runs after parser inlining, so a set of an inlined sub-parser counts as
  used when the copied states name it.
"""

from __future__ import annotations

from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import walk

BLOCK_TYPES = (ast.ControlDecl, ast.ParserDecl, ast.ControlTypeDecl, ast.ParserTypeDecl)


def takes_instance(d: ast.Decl, decls: dict[str, ast.Decl]) -> bool:
    """``d`` is a parser or control with a constructor parameter of parser or control type."""
    if not isinstance(d, (ast.ControlDecl, ast.ParserDecl)):
        return False
    for p in d.ctor_params:
        if isinstance(p.type, ast.TypeName) and isinstance(
                decls.get(p.type.name.lstrip(".")), BLOCK_TYPES):
            return True
    return False


def remove_instance_parameterized_blocks(prog: ast.Program) -> ast.Program:
    decls = {d.name: d for d in prog.decls if isinstance(d, ast.Decl)}
    prog.decls = [d for d in prog.decls if not takes_instance(d, decls)]
    return prog


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


def remove_all_unused_declarations(prog: ast.Program) -> ast.Program:
    """Both removals, blocks first (a removed block's value sets need no look)."""
    remove_instance_parameterized_blocks(prog)
    return remove_unused_value_sets(prog)
