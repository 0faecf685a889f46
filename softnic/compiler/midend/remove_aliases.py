"""RemoveAliases: a struct or header assigned from a list or struct expression that reads it.

Mirrors p4c's mid-end pass of that name (midend/copyStructures.cpp, run before
DoCopyStructures): ``h = {h.b, h.a}`` must swap the fields, since the right-hand side is
evaluated before anything is assigned (P4_16 spec 11.1), but BMv2 has no struct values, so
the assignment becomes one assignment per field, and the second would read the field the first
just wrote. Like p4c, the value goes through a temporary of the left-hand side's type first:
``T tmp = {h.b, h.a}; h = tmp;``.

The left-hand side's type comes from the declarations (a variable, parameter or field:
:class:`desugar.ArgTypes`); the rewrite is applied when the right-hand side mentions the
variable the left-hand side is rooted at.
"""

from __future__ import annotations

import copy
from typing import Any

from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import ArgTypes, Names, lvalue_root, map_children, walk

SCOPES = (ast.ActionDecl, ast.FunctionDecl, ast.ControlDecl, ast.ParserDecl)


class RemoveAliases:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.names = Names(prog)
        self.arg_types = ArgTypes(prog)

    def run(self) -> ast.Program:
        for d in self.prog.decls:
            self.visit(d, {})
        return self.prog

    def visit(self, node: Any, env: dict[str, Any]) -> None:
        if isinstance(node, SCOPES):
            env = dict(env)
        if isinstance(node, (ast.Param, ast.VarDecl, ast.ConstDecl)):
            env[node.name] = node.type
        if isinstance(node, ast.Annotation) or not hasattr(node, "__dataclass_fields__"):
            return
        if isinstance(node, (ast.BlockStmt, ast.ParserState)):
            node.stmts = self.stmts(node.stmts, env)
            for s in node.stmts:
                self.visit(s, env)
            if isinstance(node, ast.ParserState) and node.transition is not None:
                self.visit(node.transition, env)
            return
        if isinstance(node, ast.IfStmt):
            for f in ("then", "other"):
                s = getattr(node, f)
                if isinstance(s, ast.AssignStmt) and self.aliased(s, env):
                    setattr(node, f, ast.BlockStmt([s], loc=s.loc))

        def each(c: Any) -> Any:
            self.visit(c, env)
            return c

        map_children(node, each)

    def aliased(self, s: ast.AssignStmt, env: dict[str, Any]) -> bool:
        if not isinstance(s.rhs, (ast.ListExpr, ast.StructInit)):
            return False
        root = lvalue_root(s.lhs)
        if root is None or not any(isinstance(n, ast.PathExpr) and n.name == root
                                   for n in walk(s.rhs)):
            return False
        return self.arg_types.type_of(s.lhs, env) is not None

    def stmts(self, ss: list[Any], env: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        local = dict(env)
        for s in ss:
            if isinstance(s, (ast.VarDecl, ast.ConstDecl)):
                local[s.name] = s.type
            if isinstance(s, ast.AssignStmt) and self.aliased(s, local):
                t = self.arg_types.type_of(s.lhs, local)
                tmp = self.names.fresh("tmp")
                out.append(ast.VarDecl(tmp, copy.deepcopy(t), s.rhs, loc=s.loc))
                out.append(ast.AssignStmt(s.lhs, ast.PathExpr(tmp, loc=s.loc), loc=s.loc))
                continue
            out.append(s)
        return out


def remove_aliases(prog: ast.Program) -> ast.Program:
    return RemoveAliases(prog).run()
