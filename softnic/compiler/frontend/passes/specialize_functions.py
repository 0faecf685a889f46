"""SpecializeGenericFunctions: a generic function gets one concrete copy per type argument list.

Mirrors p4c's front-end pass of that name (frontends/p4/specializeGenericFunctions.h): for
``T max<T>(in T a, in T b)`` each call ``max<bit<8>>(x, y)``, or ``max(x, y)`` with the type
arguments inferred from the arguments' declared types, calls a copy ``max_0`` whose type
parameters are replaced by those types; the inliner then treats it as an ordinary function.
Calls with the same type arguments share one copy. A generic function left uncalled is removed
(p4c's RemoveAllUnusedDeclarations).

Before the checker has run, an argument's type is known only where it is declared plainly (a
variable, parameter or field, a typed literal, a cast: :class:`desugar.ArgTypes`); a call whose
type arguments cannot be inferred that way is refused with a positioned error asking for them
explicitly.
"""

from __future__ import annotations

import copy
from typing import Any

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import ArgTypes, Names, map_children, subst_types, unify

SCOPES = (ast.ActionDecl, ast.FunctionDecl, ast.ControlDecl, ast.ParserDecl)


class SpecializeFunctions:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.generic = {d.name: d for d in prog.decls
                        if isinstance(d, ast.FunctionDecl) and d.type_params}
        self.names = Names(prog)
        self.done: dict[tuple[str, str], str] = {}
        self.made: dict[str, list[ast.FunctionDecl]] = {n: [] for n in self.generic}

    def run(self) -> ast.Program:
        if not self.generic:
            return self.prog
        self.arg_types = ArgTypes(self.prog)
        work = [d for d in self.prog.decls
                if not (isinstance(d, ast.FunctionDecl) and d.name in self.generic)]
        while work:
            d = work.pop(0)
            work.extend(self.calls(d, {}))
        out: list[Any] = []
        for d in self.prog.decls:
            if isinstance(d, ast.FunctionDecl) and d.name in self.generic:
                out.extend(self.made[d.name])  # an uncalled generic function is dropped
            else:
                out.append(d)
        self.prog.decls = out
        return self.prog

    def calls(self, node: Any, env: dict[str, Any]) -> list[Any]:
        """Point every generic call below ``node`` at its specialisation; returns the
        specialised copies made (their bodies may call generic functions too)."""
        made: list[Any] = []
        if isinstance(node, SCOPES):
            env = dict(env)
        if isinstance(node, (ast.Param, ast.VarDecl, ast.ConstDecl)):
            env[node.name] = node.type
        if isinstance(node, ast.Annotation):
            return made
        if isinstance(node, ast.Call):
            made.extend(self.calls(node.target, env))
            for a in node.args:
                made.extend(self.calls(a, env))
            t = node.target
            g = self.generic.get(t.name.lstrip(".")) if isinstance(t, ast.PathExpr) else None
            if g is not None and not (isinstance(t, ast.PathExpr) and t.name in env):
                name, new = self.specialized(g, node, env)
                node.target = ast.PathExpr(name, loc=t.loc)
                node.type_args = []
                made.extend(new)
            return made
        if hasattr(node, "__dataclass_fields__"):
            def visit(c: Any) -> Any:
                made.extend(self.calls(c, env))
                return c
            map_children(node, visit)
        return made

    def specialized(self, g: ast.FunctionDecl, call: ast.Call, env: dict[str, Any]
                    ) -> tuple[str, list[ast.FunctionDecl]]:
        tps = g.type_params
        if call.type_args:
            if len(call.type_args) != len(tps):
                raise CompileError(call.loc, f"{g.name}: expected {len(tps)} type arguments, "
                                   f"got {len(call.type_args)}")
            bind = dict(zip(tps, call.type_args, strict=True))
        else:
            bind = self.infer(g, call, env)
        key = (g.name, repr([bind[t] for t in tps]))
        if key in self.done:
            return self.done[key], []
        name = self.names.numbered(g.name)
        self.done[key] = name
        f = copy.deepcopy(g)
        f.name = name
        f.type_params = []
        f.params = [subst_types(p, bind) for p in f.params]
        f.ret = subst_types(f.ret, bind)
        f.body = subst_types(f.body, bind)
        f.loc = g.loc
        self.made[g.name].append(f)
        return name, [f]

    def infer(self, g: ast.FunctionDecl, call: ast.Call, env: dict[str, Any]
              ) -> dict[str, ast.Type]:
        tvars = set(g.type_params)
        bind: dict[str, ast.Type] = {}
        names = [p.name for p in g.params]
        for i, a in enumerate(call.args):
            j = names.index(a.name) if a.name in names else i
            if j >= len(g.params):
                continue
            unify(g.params[j].type, self.arg_types.type_of(a.value, env), tvars, bind)
        missing = [t for t in g.type_params if t not in bind]
        if missing:
            raise CompileError(call.loc, f"{g.name}: cannot infer the type argument "
                               f"{missing[0]} from the arguments here; give the type "
                               f"arguments explicitly: {g.name}<...>(...)")
        return bind


def specialize_functions(prog: ast.Program) -> ast.Program:
    return SpecializeFunctions(prog).run()
