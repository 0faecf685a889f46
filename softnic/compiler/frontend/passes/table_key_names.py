"""TableKeyNames: every table key gets its control-plane name, ``@name("...")``, from its source.

Mirrors p4c's ``TableKeyNames`` (frontends/p4/tableKeyNames.cpp: ``KeyNameGenerator`` and
``DoTableKeyNames``), which runs in the front end right after SpecializeGenericFunctions and
before MoveInitializers, SideEffectOrdering and the inliner. The name is fixed from the key
expression as written, so a table of a sub-control whose key is its apply parameter ``x`` keeps
the key name ``x`` (P4Info match field, BMv2 JSON key ``name``) after the control is inlined and
``x`` has become ``hdr.h.c``. A key element that already has ``@name`` keeps it.

The names, as p4c's KeyNameGenerator prints them:

- a path: its name as written (``x``, ``meta``);
- a member: ``<left>.<field>``; a struct or header field with ``@name("n")`` is printed as ``n``,
  and one with ``@name(".n")`` discards the left side (``n``); ``isValid`` on a header or header
  union is ``$valid$``, and ``h.isValid()`` (no arguments) is named ``<h>.$valid$``;
- ``a[i]`` (header stack element): ``<a>[<i>]``; ``e[h:l]``: ``<e>[<h>:<l>]``;
  ``a & b``: ``<a> & <b>``;
- an integer constant: its value in the base it was written in, without width
  (``0xff00``, ``255``, ``0b101``, ``-1``). p4c's first ConstantFolding (before TableKeyNames)
  has already replaced a reference to a constant declared with a literal by that literal, so
  ``K`` for ``const bit<8> K = 5`` is named ``5``.

Every other expression (``a + b``, ``c ? a : b``, casts, boolean literals, enum members, other
method calls) makes the key "complex": p4c refuses it with
``<expr>: Complex key expression requires a @name annotation``, and so do we.

p4c looks up the struct field's ``@name`` through its type map; without types here the field is
found by following the declared types of the control's parameters and locals, and of the
top-level constants (a generic control's ``H`` is a type variable for p4c too: plain names).
"""

from __future__ import annotations

import re
from typing import Any

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.frontend.desugar import type_decl, type_decls
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr

VALID = "$valid$"
COMPLEX = "Complex key expression requires a @name annotation"
_STRUCTS = (ast.StructDecl, ast.HeaderDecl, ast.HeaderUnionDecl)


def table_key_names(prog: ast.Program) -> ast.Program:
    types = type_decls(prog)
    globals_: dict[str, Any] = {}
    for d in prog.decls:
        if isinstance(d, (ast.ConstDecl, ast.InstantiationDecl)):
            globals_[d.name] = d
        elif isinstance(d, ast.ControlDecl):
            scope = dict(globals_)
            for p in d.ctor_params + d.params:
                scope[p.name] = p
            for loc in d.locals:
                if isinstance(loc, ast.TableDecl):
                    _name_keys(loc, _KeyNamer(scope, types))
                elif isinstance(loc, ast.Decl):
                    scope[loc.name] = loc
    return prog


def _name_keys(t: ast.TableDecl, namer: _KeyNamer) -> None:
    for prop in t.properties:
        if prop.name != "key":
            continue
        for k in prop.keys:
            if any(a.name == "name" for a in k.annotations):
                continue  # already named: kept as written
            if isinstance(k.expr, (ast.ListExpr, ast.StructInit)):
                # not a scalar: p4c's TypeInference, which runs before TableKeyNames, refuses
                # it ("Key ... field type must be a scalar type"); the checker does here
                continue
            name = namer.name(k.expr)
            k.annotations.append(ast.Annotation(
                "name", f'"{name}"', [ast.StringLiteral(name, loc=k.expr.loc)], loc=k.expr.loc))


def constant_text(e: ast.IntLiteral, negative: bool = False) -> str:
    """An integer literal as p4c's ``Util::toString(value, 0, false, base)`` prints it: the
    value in the base it was written in (``0x``/``0o``/``0b`` prefix, lower-case digits), no
    width, ``-`` before the prefix for a negative value."""
    text = re.sub(r"^\d+[ws]", "", e.text.replace("_", "")).lower() if e.text else ""
    base, prefix = 10, ""
    if text.startswith("0x"):
        base, prefix = 16, "0x"
    elif text.startswith("0o"):
        base, prefix = 8, "0o"
    elif text.startswith("0b"):
        base, prefix = 2, "0b"
    v = -e.value if negative else e.value
    sign = "-" if v < 0 else ""
    v = abs(v)
    digits = ""
    while True:
        digits = "0123456789abcdef"[v % base] + digits
        v //= base
        if v == 0:
            break
    return f"{sign}{prefix}{digits}"


class _KeyNamer:
    """p4c's KeyNameGenerator over one table's key expressions."""

    def __init__(self, scope: dict[str, Any], types: dict[str, ast.Decl]) -> None:
        self.scope = scope
        self.types = types

    def name(self, e: ast.Expr) -> str:
        n = self.visit(e)
        assert n is not None  # every unnamed sub-expression raised on the way
        return n

    def complex(self, e: ast.Expr) -> CompileError:
        # p4c prints the offending IR node; a Mux prints as its operator
        what = "?:" if isinstance(e, ast.Ternary) else show_expr(e)
        return CompileError(e.loc, f"{what}: {COMPLEX}")

    def visit(self, e: ast.Expr) -> str | None:
        if isinstance(e, ast.PathExpr):
            d = self.scope.get(e.name.lstrip("."))
            if isinstance(d, ast.ConstDecl):
                lit = _literal(d.value)
                if lit is not None:
                    return lit
                if isinstance(d.value, ast.BoolLiteral):
                    raise self.complex(d.value)
            if d is None and e.name.lstrip(".") in self.types:
                raise self.complex(e)  # a type name (enum, error): a TypeNameExpression
            return e.name
        lit = _literal(e)  # a literal, or what ConstantFolding folds into one
        if lit is not None:
            return lit
        if isinstance(e, ast.Member):
            if isinstance(e.expr, ast.PathExpr) and e.expr.name == "error":
                raise self.complex(e.expr)
            left = self.visit(e.expr)
            field = self.member_name(e)
            if field.startswith("."):
                return field[1:]
            return None if left is None else f"{left}.{field}"
        if isinstance(e, ast.Index):
            left, right = self.visit(e.expr), self.visit(e.index)
            return None if left is None or right is None else f"{left}[{right}]"
        if isinstance(e, ast.Slice):
            parts = [self.visit(e.expr), self.visit(e.hi), self.visit(e.lo)]
            if None in parts:
                return None
            return f"{parts[0]}[{parts[1]}:{parts[2]}]"
        if isinstance(e, ast.Binary) and e.op == "&":
            left, right = self.visit(e.left), self.visit(e.right)
            return None if left is None or right is None else f"{left} & {right}"
        if isinstance(e, ast.Call):
            m = self.visit(e.target)
            for a in e.args:
                self.visit(a.value)
            if m is None:
                return None
            if m.endswith(VALID) and not e.args:
                return m
            raise self.complex(e)
        # p4c visits the children first: an unnamed one is reported before its parent
        for c in _subexprs(e):
            self.visit(c)
        raise self.complex(e)

    def member_name(self, e: ast.Member) -> str:
        """p4c's keyComponentNameForMember: ``$valid$`` for isValid of a header (here: the
        method of a call without arguments), the field's external name for a struct field."""
        if e.name == "isValid" and self.is_valid_target(e):
            return VALID
        t = self.type_of(e.expr)
        d = type_decl(t, self.types) if t is not None else None
        if isinstance(d, _STRUCTS):
            for f in d.fields:
                if f.name == e.name:
                    return key_name_of_field(f)
        return e.name

    def is_valid_target(self, e: ast.Member) -> bool:
        if isinstance(e.expr, ast.PathExpr) and isinstance(
                self.scope.get(e.expr.name.lstrip(".")), ast.InstantiationDecl):
            return False  # an extern instance's own isValid method: a plain member name
        t = self.type_of(e.expr)
        d = type_decl(t, self.types) if t is not None else None
        if d is None or isinstance(d, (ast.HeaderDecl, ast.HeaderUnionDecl)):
            return True  # unknown type: isValid is only a header's (or union's) method
        return False

    def type_of(self, e: ast.Expr) -> ast.Type | None:
        if isinstance(e, ast.PathExpr):
            d = self.scope.get(e.name.lstrip("."))
            if isinstance(d, (ast.Param, ast.VarDecl, ast.ConstDecl)):
                return d.type
            return None
        if isinstance(e, ast.Member):
            t = self.type_of(e.expr)
            d = type_decl(t, self.types) if t is not None else None
            if isinstance(d, ast.StackType) and e.name in ("next", "last"):
                return d.elem
            if isinstance(d, _STRUCTS):
                for f in d.fields:
                    if f.name == e.name:
                        return f.type
            return None
        if isinstance(e, ast.Index):
            t = self.type_of(e.expr)
            d = type_decl(t, self.types) if t is not None else None
            return d.elem if isinstance(d, ast.StackType) else None
        return None


def key_name_of_field(f: ast.StructField) -> str:
    """A field's externalName(): its ``@name`` when it has one."""
    for a in f.annotations:
        if a.name == "name":
            if a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
                return a.exprs[0].value
    return f.name


def _literal(e: ast.Expr) -> str | None:
    """The folded value of a constant's initializer, when ConstantFolding (before types are
    known) makes it a constant: a literal, a negated literal, a literal cast to ``bit<W>``."""
    if isinstance(e, ast.Cast) and isinstance(e.type, ast.BitType) and isinstance(
            e.expr, ast.IntLiteral) and isinstance(e.type.width, ast.IntLiteral):
        w = e.type.width.value
        v = e.expr.value & ((1 << w) - 1) if not e.type.signed else e.expr.value
        return constant_text(ast.IntLiteral(v, text=e.expr.text, loc=e.expr.loc))
    if isinstance(e, ast.IntLiteral):
        return constant_text(e)
    if isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.expr, ast.IntLiteral):
        lit = e.expr
        if lit.width is not None and not lit.signed:  # -8w1 folds to 8w255
            v = -lit.value & ((1 << lit.width) - 1)
            return constant_text(ast.IntLiteral(v, text=lit.text, loc=lit.loc))
        return constant_text(lit, negative=True)
    return None


def _subexprs(e: ast.Expr) -> list[ast.Expr]:
    out: list[ast.Expr] = []
    for v in vars(e).values():
        if isinstance(v, ast.Expr):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, ast.Expr))
    return out
