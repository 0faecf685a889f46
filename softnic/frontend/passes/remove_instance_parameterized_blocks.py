"""RemoveAllUnusedDeclarations, for blocks that take an instance as a constructor argument.

Mirrors the part of p4c's ``RemoveAllUnusedDeclarations`` (frontends/p4/unusedDeclarations.cpp)
that runs after the inliner (``InlineControls``) in frontends/p4/frontend.cpp: once every
instance of a control or parser has been inlined into its caller, the declaration is unused
and dropped. Here that matters for one kind of block only: ``control Twice(...)(Inc c)``
instantiated with an existing instance (``Inc() inc; Twice(inc) tw;``). SpecializeAll keeps its
constructor parameter ``c`` (the argument is an instance, shared, not a constructor call that
could become a local), Desugar inlines ``tw`` with ``c`` bound to ``inc``, and the declaration
that is left still applies a constructor parameter, which nothing can instantiate any more:
every instantiation of such a block is a local of another block (a package argument is a
constructor call, specialised away), and all of them have been inlined.
"""

from __future__ import annotations

from softnic.frontend import ast

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
