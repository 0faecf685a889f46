"""InstantiateDirectCalls: ``Sub.apply(...)`` on a control or parser type gets an instance.

Mirrors p4c's ``InstantiateDirectCalls`` (frontends/p4/directCalls.cpp), which runs before
SpecializeAll and the inliner. P4_16 lets a parser or control without constructor parameters be
applied through its type name (``E.apply(x);``, spec section "Direct type invocation"). Each
such call gets its own instance, declared as a local of the enclosing block under a fresh name
(``E_inst``, ``E_inst_0``, ...) with ``@name("E")``, so the control-plane names of what is
inlined from it are those of an instance called ``E`` (``cIngress.E.c1.stats``), and the call
becomes ``E_inst.apply(x);``.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.frontend.desugar import declared_names
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import Names, transform

BLOCKS = (ast.ControlDecl, ast.ParserDecl)


def instantiate_direct_calls(prog: ast.Program) -> ast.Program:
    blocks = {d.name for d in prog.decls if isinstance(d, BLOCKS)}
    names = Names(prog)
    for d in prog.decls:
        if not isinstance(d, BLOCKS):
            continue
        body: list[Any] = [d.apply] if isinstance(d, ast.ControlDecl) else list(d.states)
        # a parameter, local or variable of the block named like a block type shadows it
        shadow = {p.name for p in d.params + d.ctor_params} | {
            x.name for x in d.locals if isinstance(x, ast.Decl)}
        for b in body:
            shadow |= set(declared_names(b))
        made: list[ast.InstantiationDecl] = []

        def fn(n: Any, made: list[ast.InstantiationDecl] = made, shadow: set[str] = shadow
               ) -> Any:
            if not (isinstance(n, ast.Call) and isinstance(n.target, ast.Member)
                    and n.target.name == "apply" and isinstance(n.target.expr, ast.PathExpr)):
                return n
            tname = n.target.expr.name
            if tname.lstrip(".") not in blocks or (tname in shadow):
                return n
            inst = names.fresh(f"{tname.lstrip('.')}_inst")
            loc = n.target.expr.loc
            made.append(ast.InstantiationDecl(
                inst, ast.TypeName(tname, [], loc=loc), [], loc=n.loc,
                annotations=[ast.Annotation("name", f'"{tname}"',
                                            [ast.StringLiteral(tname, loc=loc)], loc=loc)]))
            n.target.expr = ast.PathExpr(inst, loc=loc)
            return n

        for b in body:
            transform(b, fn)
        d.locals = list(d.locals) + made
    return prog
