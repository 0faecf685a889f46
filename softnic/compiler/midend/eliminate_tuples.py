"""EliminateTuples: every ``tuple<...>`` type becomes a struct.

Mirrors p4c's mid-end pass of that name (midend/eliminateTuples.h, ``DoReplaceTuples``): BMv2
has no tuple type, so each distinct tuple type ``tuple<T0, T1>`` is replaced by a fresh top-level
``struct tuple_0 { T0 f0; T1 f1; }`` declared before the first declaration that uses it, and an
index into a tuple value (``t[1]``) becomes the field access ``t.f1``. Tuples nested in a tuple
are replaced first. Like p4c, it leaves alone the list expressions themselves (``{a, b}``
initialises the struct by position) and the element type of a ``value_set`` (whose keys stay a
list of fields).

Types are not known before the checker runs, so a tuple index is recognised from the
declarations: a variable, constant or parameter declared with a tuple type (directly or
through a ``typedef``), and struct fields of a tuple type reached through ``.`` from one.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import Names, map_children, walk
from softnic.compiler.ir.pretty import show_expr


class EliminateTuples:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.names = Names(prog)
        self.structs: dict[str, ast.StructDecl] = {}  # show_type(tuple) -> its struct
        self.tuple_names: set[str] = set()
        self.pending: list[ast.StructDecl] = []

    def run(self) -> ast.Program:
        if not any(isinstance(n, ast.TupleType) for n in walk(self.prog)):
            return self.prog
        out: list[Any] = []
        for d in self.prog.decls:
            self.replace_types(d)
            out.extend(self.pending)
            self.pending = []
            out.append(d)
        self.prog.decls = out
        self.types: dict[str, Any] = {d.name: d for d in out if isinstance(
            d, (ast.StructDecl, ast.HeaderDecl, ast.HeaderUnionDecl, ast.TypedefDecl))}
        self.consts = {d.name: d for d in out if isinstance(d, ast.ConstDecl)}
        for d in out:
            self.indices(d, {})
        return self.prog

    # ------------------------------------------------------------------ types

    def replace_types(self, node: Any) -> Any:
        """Replace, bottom-up, every tuple type below ``node`` by its struct's name."""
        if isinstance(node, ast.InstantiationDecl) and isinstance(node.type, ast.TypeName) and (
                node.type.name == "value_set"):
            return node
        if isinstance(node, ast.Annotation):
            return node
        if isinstance(node, ast.TupleType):
            node.elems = [self.replace_types(e) for e in node.elems]
            return ast.TypeName(self.struct_for(node), loc=node.loc)
        if hasattr(node, "__dataclass_fields__"):
            map_children(node, self.replace_types)
        return node

    def struct_for(self, t: ast.TupleType) -> str:
        key = repr(t)  # structural: Loc is left out of the repr
        s = self.structs.get(key)
        if s is None:
            i = 0
            while f"tuple_{i}" in self.names.used:
                i += 1
            name = self.names.fresh(f"tuple_{i}")
            s = ast.StructDecl(name, [ast.StructField(e, f"f{i}", loc=e.loc)
                                      for i, e in enumerate(t.elems)], loc=t.loc)
            self.structs[key] = s
            self.tuple_names.add(name)
            self.pending.append(s)
        return s.name

    # ------------------------------------------------------------------ t[i] -> t.fi

    def resolve(self, t: Any) -> Any:
        seen = 0
        while isinstance(t, ast.TypeName) and seen < 32:
            d = self.types.get(t.name.lstrip("."))
            if isinstance(d, ast.TypedefDecl):
                t = d.type
                seen += 1
            else:
                return d if d is not None else t
        return t

    def index_value(self, e: Any, env: dict[str, Any]) -> int | None:
        """A constant tuple index: a literal or a top-level integer constant."""
        if isinstance(e, ast.IntLiteral):
            return e.value
        if isinstance(e, ast.PathExpr) and e.name not in env:
            d = self.consts.get(e.name.lstrip("."))
            if d is not None and isinstance(d.value, ast.IntLiteral):
                return d.value.value
        return None

    def type_of(self, e: Any, env: dict[str, Any]) -> Any:
        """The declared type (a declaration or ast type) of a location expression, or None."""
        if isinstance(e, ast.PathExpr):
            t = env.get(e.name)
            return self.resolve(t) if t is not None else None
        if isinstance(e, ast.Member):
            base = self.type_of(e.expr, env)
            if isinstance(base, (ast.StructDecl, ast.HeaderDecl, ast.HeaderUnionDecl)):
                for f in base.fields:
                    if f.name == e.name:
                        return self.resolve(f.type)
            return None
        if isinstance(e, ast.Index):
            base = self.type_of(e.expr, env)
            if isinstance(base, ast.StackType):
                return self.resolve(base.elem)
            if isinstance(base, ast.StructDecl) and base.name in self.tuple_names and isinstance(
                    e.index, ast.IntLiteral) and 0 <= e.index.value < len(base.fields):
                return self.resolve(base.fields[e.index.value].type)
        return None

    def indices(self, node: Any, env: dict[str, Any]) -> Any:
        """Rewrite tuple indices below ``node``; ``env`` maps the names in scope to their
        declared types (names are unique per block after the earlier passes)."""
        if isinstance(node, (ast.Param, ast.VarDecl, ast.ConstDecl)):
            env[node.name] = node.type
        if isinstance(node, (ast.ActionDecl, ast.FunctionDecl, ast.ControlDecl,
                             ast.ParserDecl)):
            env = dict(env)
        if isinstance(node, ast.Index):
            node.expr = self.indices(node.expr, env)
            node.index = self.indices(node.index, env)
            base = self.type_of(node.expr, env)
            if isinstance(base, ast.StructDecl) and base.name in self.tuple_names:
                i = self.index_value(node.index, env)
                if i is None:
                    raise CompileError(node.index.loc, f"{show_expr(node)}: a tuple index must "
                                       "be a compile-time constant")
                if not 0 <= i < len(base.fields):
                    raise CompileError(node.index.loc, f"{show_expr(node)}: index {i} out of "
                                       f"range for a tuple of {len(base.fields)} elements")
                return ast.Member(node.expr, f"f{i}", loc=node.loc)
            return node
        if isinstance(node, ast.Annotation):
            return node
        if hasattr(node, "__dataclass_fields__"):
            map_children(node, lambda c: self.indices(c, env))
        return node


def eliminate_tuples(prog: ast.Program) -> ast.Program:
    return EliminateTuples(prog).run()
