"""AST helpers shared by the front end's source-to-source passes (desugar.py and passes/).

Generic tree walking (:func:`walk`, :func:`map_children`, :func:`transform`), fresh names
(:class:`Names`), left-value roots, and the declared types an expression has before the checker
runs (:class:`ArgTypes`, :func:`type_decl`, :func:`same_type`, :func:`header_resets`), plus
type-variable substitution and unification for the specialising passes. No pass lives here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass
from typing import Any

from softnic.compiler.ir import ast

# ---------------------------------------------------------------------- generic AST walking


def children(node: Any) -> Iterator[Any]:
    """Every AST node directly below ``node`` (through lists and (name, expr) tuples)."""
    if not is_dataclass(node):
        return
    for f in fields(node):
        if f.name == "loc":
            continue
        v = getattr(node, f.name)
        if isinstance(v, ast.Node):
            yield v
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, ast.Node):
                    yield x
                elif isinstance(x, tuple):
                    yield from (y for y in x if isinstance(y, ast.Node))


def walk(node: Any) -> Iterator[Any]:
    yield node
    for c in children(node):
        yield from walk(c)


def map_children(node: Any, fn: Callable[[Any], Any], kind: type = ast.Node) -> None:
    """Replace, in place, every child of ``node`` that is a ``kind`` (directly, in a list, or in
    a tuple inside a list) by ``fn(child)``. The one walk every tree rewrite here builds on."""
    for f in fields(node):
        if f.name == "loc":
            continue
        v = getattr(node, f.name)
        if isinstance(v, kind):
            setattr(node, f.name, fn(v))
        elif isinstance(v, list):
            out = []
            for x in v:
                if isinstance(x, kind):
                    out.append(fn(x))
                elif isinstance(x, tuple):
                    out.append(tuple(fn(y) if isinstance(y, kind) else y for y in x))
                else:
                    out.append(x)
            setattr(node, f.name, out)


def transform(node: Any, fn: Callable[[Any], Any]) -> Any:
    """Rebuild ``node`` bottom-up in place: each child is replaced by ``fn(child)``."""
    if not is_dataclass(node):
        return node
    map_children(node, lambda child: fn(transform(child, fn)))
    return node


def fresh_in(used: set[str], base: str) -> str:
    """``base`` if it is not in ``used``, else ``base_N`` with the lowest free N; the name
    returned is added to ``used``."""
    name, i = base, 0
    while name in used:
        name = f"{base}_{i}"
        i += 1
    used.add(name)
    return name


class Names:
    """Fresh identifiers that collide with no name used anywhere in the program."""

    def __init__(self, prog: ast.Program) -> None:
        self.used: set[str] = set()
        for n in walk(prog):
            for attr in ("name", "state", "next_state", "match_kind"):
                v = getattr(n, attr, None)
                if isinstance(v, str):
                    self.used.add(v)

    def fresh(self, base: str) -> str:
        return fresh_in(self.used, base)

    def numbered(self, base: str) -> str:
        """A fresh ``base_N`` with the lowest free N, also for the first one (p4c's
        ``key_0``, ``key_1``, ...; ``f_0`` for a specialised function)."""
        i = 0
        while f"{base}_{i}" in self.used:
            i += 1
        return self.fresh(f"{base}_{i}")


# ---------------------------------------------------------------------- declared types


def type_decl(t: Any, types: dict[str, ast.Decl]) -> Any:
    """The declaration a type names (through typedefs; a ``type`` declaration is a type of
    its own), or the type itself when it is not a name; None for a name not declared at the
    top level (a type variable)."""
    seen: set[str] = set()
    while isinstance(t, ast.TypeName):
        if t.name in seen:
            return None
        seen.add(t.name)
        d = types.get(t.name.lstrip("."))
        if isinstance(d, ast.TypedefDecl) and not d.is_newtype:
            t = d.type
            continue
        return d
    return t


def is_scalar_type(t: ast.Type, types: dict[str, ast.Decl]) -> bool:
    """A type with no header inside (bit, int, bool, enums, error): an uninitialised value of
    it has no observable validity."""
    d = type_decl(t, types)
    if isinstance(d, ast.TypedefDecl):  # ``type bit<8> T``
        return is_scalar_type(d.type, types)
    return isinstance(d, (ast.BitType, ast.BoolType, ast.VarbitType, ast.ErrorType,
                          ast.InfIntType, ast.EnumDecl, ast.ErrorDecl))


def type_decls(prog: ast.Program) -> dict[str, ast.Decl]:
    """The program's top-level type declarations by name."""
    return {d.name: d for d in prog.decls
            if isinstance(d, (ast.TypedefDecl, ast.HeaderDecl, ast.StructDecl,
                              ast.HeaderUnionDecl, ast.EnumDecl, ast.ErrorDecl))}


class ArgTypes:
    """The declared type of an argument expression where it is obvious without the checker
    (a location, a typed literal, a cast, an enum member), so an inlined call can use the
    argument in place only when its type is certainly the parameter's. The checker never sees
    an inlined call; any other argument goes through a copy (``T p = arg;``, ``arg = p;``)
    that it checks, so a mistyped call is still refused, as p4c refuses it."""

    def __init__(self, prog: ast.Program) -> None:
        self.types = type_decls(prog)
        consts: set[str] = set()
        other: set[str] = set()
        for n in walk(prog):
            if isinstance(n, ast.ConstDecl):
                consts.add(n.name)
            elif isinstance(n, (ast.VarDecl, ast.Param, ast.InstantiationDecl)):
                other.add(n.name)
        # names that always denote a compile-time constant (never declared otherwise)
        self.consts = consts - other
        self.enums = {d.name for d in prog.decls
                      if isinstance(d, (ast.EnumDecl, ast.ErrorDecl))} | {"error"}
        self.top_env: dict[str, ast.Type] = {
            d.name: d.type for d in prog.decls if isinstance(d, ast.ConstDecl)}
        self.int_consts = {d.name: d.value.value for d in prog.decls
                           if isinstance(d, ast.ConstDecl) and isinstance(d.value, ast.IntLiteral)
                           and d.name in self.consts}

    def unproven(self, params: list[ast.Param], args: list[ast.Expr | None],
                 env: dict[str, ast.Type]) -> set[str]:
        """The parameters whose argument is not certainly of the parameter's type, with
        ``env`` the declared types of the names in scope at the call."""
        out = set()
        for p, a in zip(params, args, strict=True):
            if a is None or isinstance(a, ast.DontCare) or unsized_literal(a):
                continue
            if not same_type(self.type_of(a, env), p.type, self.types, self.int_consts):
                out.add(p.name)
        return out

    def type_of(self, e: Any, env: dict[str, ast.Type]) -> Any:
        """The declared type of a location or typed literal, None when not obvious."""
        if isinstance(e, ast.PathExpr):
            return env.get(e.name, self.top_env.get(e.name.lstrip(".")))
        if isinstance(e, ast.IntLiteral) and e.width is not None:
            return ast.BitType(ast.IntLiteral(e.width, loc=e.loc), e.signed, loc=e.loc)
        if isinstance(e, ast.BoolLiteral):
            return ast.BoolType(loc=e.loc)
        if isinstance(e, ast.Cast):
            return e.type
        if isinstance(e, ast.Slice):
            base = type_decl(self.type_of(e.expr, env), self.types)
            hi, lo = e.hi, e.lo
            if isinstance(base, ast.BitType) and isinstance(hi, ast.IntLiteral) and isinstance(
                    lo, ast.IntLiteral):
                return ast.BitType(ast.IntLiteral(hi.value - lo.value + 1, loc=e.loc),
                                   loc=e.loc)
            return None
        if isinstance(e, ast.Member):
            if isinstance(e.expr, ast.PathExpr) and e.expr.name not in env:
                n = e.expr.name.lstrip(".")
                if n == "error":
                    return ast.ErrorType(loc=e.loc)
                if n in self.enums:
                    return ast.TypeName(n, loc=e.loc)
            d = type_decl(self.type_of(e.expr, env), self.types)
            if isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl)):
                return next((f.type for f in d.fields if f.name == e.name), None)
            if isinstance(d, ast.StackType) and e.name in ("next", "last"):
                return d.elem
            return None
        if isinstance(e, ast.Index):
            d = type_decl(self.type_of(e.expr, env), self.types)
            return d.elem if isinstance(d, ast.StackType) else None
        return None

    def constant(self, e: Any) -> bool:
        """``e`` is certainly a compile-time constant (an unsure answer is False)."""
        if isinstance(e, (ast.IntLiteral, ast.BoolLiteral, ast.StringLiteral)):
            return True
        if isinstance(e, ast.PathExpr):
            return e.name.lstrip(".") in self.consts
        if isinstance(e, ast.Member):
            return isinstance(e.expr, ast.PathExpr) and e.expr.name.lstrip(".") in self.enums
        if isinstance(e, ast.Cast):
            return self.constant(e.expr)
        if isinstance(e, ast.Unary):
            return self.constant(e.expr)
        if isinstance(e, ast.Binary):
            return self.constant(e.left) and self.constant(e.right)
        if isinstance(e, ast.Ternary):
            return all(self.constant(c) for c in (e.cond, e.then, e.other))
        return False


def same_type(a: Any, b: Any, types: dict[str, ast.Decl],
              consts: dict[str, int] | None = None) -> bool:
    """``a`` and ``b`` are certainly the same type (an unsure answer is False); ``consts``
    gives the values of top-level integer constants used as widths or sizes."""
    da, db = type_decl(a, types), type_decl(b, types)
    if da is None or db is None:
        return False
    if isinstance(da, ast.Decl) or isinstance(db, ast.Decl):
        return da is db
    if type(da) is not type(db):
        return False

    def equal(x: Any, y: Any) -> bool:
        v = int_value(x, consts)
        return v is not None and v == int_value(y, consts)

    if isinstance(da, ast.BitType):
        return equal(da.width, db.width) and da.signed == db.signed
    if isinstance(da, ast.VarbitType):
        return equal(da.max_width, db.max_width)
    if isinstance(da, ast.StackType):
        return equal(da.size, db.size) and same_type(da.elem, db.elem, types, consts)
    return isinstance(da, (ast.BoolType, ast.ErrorType))


def int_value(e: Any, consts: dict[str, int] | None = None) -> int | None:
    if isinstance(e, ast.IntLiteral):
        return e.value
    if isinstance(e, ast.PathExpr) and consts is not None:
        return consts.get(e.name.lstrip("."))
    return None


def header_resets(e: ast.Expr, t: ast.Type, types: dict[str, ast.Decl], depth: int = 0
                  ) -> list[Any]:
    """``setInvalid()`` for every header inside ``e`` of type ``t``: an ``out`` parameter
    starts uninitialised, and an uninitialised header is invalid (p4c's ResetHeaders)."""
    d = type_decl(t, types)
    if depth > 32 or d is None:
        return []
    if isinstance(d, ast.HeaderDecl):
        call = ast.Call(ast.Member(copy.deepcopy(e), "setInvalid", loc=e.loc), [], loc=e.loc)
        return [ast.CallStmt(call, loc=e.loc)]
    if isinstance(d, (ast.StructDecl, ast.HeaderUnionDecl)):
        return [x for f in d.fields for x in header_resets(
            ast.Member(copy.deepcopy(e), f.name, loc=e.loc), f.type, types, depth + 1)]
    if isinstance(d, ast.StackType) and isinstance(d.size, ast.IntLiteral):
        return [x for i in range(d.size.value) for x in header_resets(
            ast.Index(copy.deepcopy(e), ast.IntLiteral(i, loc=e.loc), loc=e.loc), d.elem,
            types, depth + 1)]
    return []


def unsized_literal(e: ast.Expr) -> bool:
    """An integer literal without a width (``5``, ``-1``): its type comes from its context."""
    if isinstance(e, ast.Unary) and e.op in ("-", "+"):
        return unsized_literal(e.expr)
    return isinstance(e, ast.IntLiteral) and e.width is None


# ---------------------------------------------------------------------- left-values


def lvalue_base(e: Any) -> ast.PathExpr | None:
    """The path a location (``a.b[i].c``, ``a[3:0]``) is rooted at, else None."""
    while isinstance(e, (ast.Member, ast.Index, ast.Slice)):
        e = e.expr
    return e if isinstance(e, ast.PathExpr) else None


def lvalue_root(e: Any) -> str | None:
    """The name of the variable a location is rooted at, else None."""
    b = lvalue_base(e)
    return b.name if b is not None else None


# ---------------------------------------------------------------------- type variables


def subst_types(node: Any, bind: dict[str, ast.Type]) -> Any:
    """``node`` with every type name bound in ``bind`` replaced by (a copy of) its type;
    rewritten in place (pass a copy to keep the original)."""
    if not bind:
        return node
    if isinstance(node, ast.TypeName) and node.name in bind and not node.args:
        return copy.deepcopy(bind[node.name])

    def fn(n: Any) -> Any:
        if isinstance(n, ast.TypeName) and n.name in bind and not n.args:
            return copy.deepcopy(bind[n.name])
        return n

    return transform(node, fn)


def mentions(t: Any, tvars: set[str]) -> bool:
    """Does the type ``t`` name one of the type variables ``tvars``?"""
    return any(isinstance(n, ast.TypeName) and n.name in tvars for n in walk(t))


def unify(pat: Any, actual: Any, tvars: set[str], bind: dict[str, ast.Type]) -> None:
    """Bind the type variables ``tvars`` in ``pat`` so that it matches ``actual``, adding to
    ``bind`` (a mismatch is left for the checker, which types the specialised code)."""
    if actual is None:
        return
    if isinstance(pat, ast.TypeName) and pat.name in tvars and not pat.args:
        if pat.name not in bind and not mentions(actual, tvars):
            bind[pat.name] = copy.deepcopy(actual)
        return
    if isinstance(pat, ast.TypeName) and isinstance(actual, ast.TypeName):
        for x, y in zip(pat.args, actual.args, strict=False):
            unify(x, y, tvars, bind)
    elif isinstance(pat, ast.StackType) and isinstance(actual, ast.StackType):
        unify(pat.elem, actual.elem, tvars, bind)
    elif isinstance(pat, ast.TupleType) and isinstance(actual, ast.TupleType):
        for x, y in zip(pat.elems, actual.elems, strict=False):
            unify(x, y, tvars, bind)
