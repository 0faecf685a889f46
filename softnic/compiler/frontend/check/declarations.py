"""Declarations: top-level and local names entering scope - error/match_kind members, typedefs,
enums, headers/structs/unions, externs, constants, actions, instances and block parameters.

Bodies are handed on to the statement, parser and control checkers; this module only decides
what each declaration binds and under which (possibly ``@name``-qualified) name.
"""

from __future__ import annotations

import copy

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.callinfo import CallInfo
from softnic.compiler.frontend.check.fold import mask
from softnic.compiler.frontend.check.helpers import annotation_string
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.frontend.desugar import walk
from softnic.compiler.frontend.passes.specialize import subst_types
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import (
    BitT,
    BlockT,
    BoolT,
    EnumT,
    ExternT,
    HeaderT,
    MatchKindT,
    PType,
    StructT,
    UnionT,
    VarbitT,
)


class DeclarationsMixin(CheckerState):
    """Binds declarations into scopes and records their symbols."""

    def declare_top(self, d: ast.Decl) -> None:
        scope = self.top
        if isinstance(d, ast.ErrorDecl):
            for m in d.members:
                if m not in self.errors:
                    self.errors.append(m)
        elif isinstance(d, ast.MatchKindDecl):
            for m in d.members:
                if m not in self.match_kinds:
                    self.match_kinds.append(m)
                scope.declare(Sym("match_kind", m, MatchKindT(), d))
        elif isinstance(d, (ast.TypedefDecl, ast.EnumDecl, ast.HeaderDecl, ast.StructDecl,
                            ast.HeaderUnionDecl)):
            self.declare_type(d, scope)
        elif isinstance(d, ast.ExternDecl):
            if d.type_params:
                scope.declare(Sym("generic", d.name, None, d))
            else:
                scope.declare(Sym("type", d.name, ExternT(d.name, (), d), d))
        elif isinstance(d, ast.ExternFunctionDecl):
            existing = scope.syms.get(d.name)
            if existing is not None and existing.kind == "extern_func":
                existing.overloads.append(d)
            else:
                scope.declare(Sym("extern_func", d.name, None, d, overloads=[d]))
        elif isinstance(d, (ast.ParserTypeDecl, ast.ControlTypeDecl, ast.PackageDecl)):
            scope.declare(Sym("type", d.name, BlockT(d.name, d), d))
        elif isinstance(d, ast.ConstDecl):
            self.declare_const(d, scope)
        elif isinstance(d, ast.ActionDecl):
            self.declare_action(d, scope, "")
        elif isinstance(d, ast.FunctionDecl):
            scope.declare(Sym("function", d.name, None, d))
            self.check_function(d, scope)
        elif isinstance(d, ast.ParserDecl):
            scope.declare(Sym("block", d.name, BlockT(d.name, d), d))
            self.check_parser(d)
        elif isinstance(d, ast.ControlDecl):
            scope.declare(Sym("block", d.name, BlockT(d.name, d), d))
            self.check_control(d)
        elif isinstance(d, ast.InstantiationDecl):
            t = self.resolve_type(d.type, scope)
            if isinstance(t, BlockT) and isinstance(t.decl, ast.PackageDecl):
                if d.name == "main":
                    self.main = d
                for a in d.args:
                    self.check_block_ctor(a.value, scope)
                self.check_package_blocks(d, t.decl, scope)
                scope.declare(Sym("instance", d.name, t, d))
            else:
                self.declare_instance(d, scope, "")
        else:
            raise error(d, f"{type(d).__name__}: unsupported top-level declaration")

    def check_package_blocks(self, d: ast.InstantiationDecl, pkg: ast.PackageDecl,
                             scope: Scope) -> None:
        """The blocks passed to a package must agree on its type parameters (p4c unifies
        them): with ``V1Switch<H, M>(...)`` they are given; otherwise the first block that
        fixes one (the parser's ``out H``) fixes it for all the others."""
        pvars = set(pkg.type_params)
        bound: dict[str, PType] = {}
        targs = d.type.args if isinstance(d.type, ast.TypeName) else []
        for tp, ta in zip(pkg.type_params, targs, strict=False):
            bound[tp] = self.resolve_type(ta, scope)
        names = [p.name for p in pkg.params]
        for a in d.args:
            if a.name is not None and a.name not in names:
                raise error(a, f"{a.name}: no parameter named {a.name} in {pkg.name}")
        if any(a.name is not None for a in d.args):
            # arguments by name: put them in the parameter order the lowering reads them in
            pos = {id(a): (names.index(a.name) if a.name is not None else i)
                   for i, a in enumerate(d.args)}
            if len(set(pos.values())) != len(d.args):
                raise error(d, f"{d.name}: a parameter of {pkg.name} is given twice")
            d.args = sorted(d.args, key=lambda a: pos[id(a)])
        for i, a in enumerate(d.args):
            j = i
            info = self.calls.get(id(a.value))
            if j >= len(pkg.params) or info is None:
                continue
            pt = pkg.params[j].type
            bt = scope.lookup(pt.name) if isinstance(pt, ast.TypeName) else None
            btd = bt.decl if bt is not None else None
            if not isinstance(btd, (ast.ParserTypeDecl, ast.ControlTypeDecl)):
                continue
            assert isinstance(pt, ast.TypeName)
            tsub = dict(zip(btd.type_params, pt.args, strict=False))
            for want_p, have_p in zip(btd.params, info.decl.params, strict=False):
                hsym = self.decl_syms.get(id(have_p))
                if hsym is None or hsym.type is None:
                    continue
                have = hsym.type
                pat = subst_types(copy.deepcopy(want_p.type), tsub)
                if isinstance(pat, ast.TypeName) and pat.name in pvars and not pat.args:
                    want = bound.setdefault(pat.name, have)
                elif any(isinstance(n, ast.TypeName) and n.name in pvars for n in walk(pat)):
                    continue
                else:
                    want = self.resolve_type(pat, scope)
                if have != want:
                    raise error(a, f"{show_expr(a.value)}: Cannot unify {have.show()} to "
                                f"{want.show()} (parameter {have_p.name} of {info.decl.name})")

    def check_block_ctor(self, e: ast.Expr, scope: Scope) -> None:
        if not (isinstance(e, ast.Call) and isinstance(e.target, ast.PathExpr)):
            raise error(e, f"{show_expr(e)}: expected a parser or control instantiation")
        sym = self.lookup(e.target, scope)
        if sym.kind != "block":
            raise error(e, f"{show_expr(e)}: expected a parser or control instantiation")
        if e.args:
            raise error(e, f"{show_expr(e)}: constructor parameters are unsupported on this target")
        if e.type_args:  # generic blocks were specialised (SpecializeAll) and lost them
            raise error(e, f"{sym.name}: is not a generic type")
        self.calls[id(e)] = CallInfo("ctor", sym.name, sym.decl, sym)

    def declare_type(self, d: ast.Decl, scope: Scope) -> None:
        if isinstance(d, ast.TypedefDecl):
            scope.declare(Sym("type", d.name, self.resolve_type(d.type, scope), d))
        elif isinstance(d, ast.EnumDecl):
            if d.underlying is not None:
                under = self.resolve_type(d.underlying, scope)
                if not isinstance(under, BitT):
                    raise error(d, f"{d.name}: enum underlying type must be bit<> or int<>")
                vals = []
                for v in d.values:
                    c = self.const_eval(v, scope)
                    if not isinstance(c, int):
                        raise error(v, f"{show_expr(v)}: enum value must be a compile-time"
                                    " constant")
                    vals.append(c & mask(under.width))
                t = EnumT(d.name, tuple(d.members), under, tuple(vals))
            else:
                t = EnumT(d.name, tuple(d.members))
            self.enums.append(t)
            scope.declare(Sym("type", d.name, t, d))
        elif isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl)):
            if getattr(d, "type_params", None):
                raise error(d, f"{d.name}: generic structures are unsupported on this target")
            fields = []
            fannos = []
            seen = set()
            for f in d.fields:
                if f.name in seen:
                    raise error(f, f"{f.name}: duplicate field name")
                seen.add(f.name)
                ft = self.resolve_type(f.type, scope)
                if isinstance(d, ast.HeaderDecl) and not isinstance(
                    ft, (BitT, VarbitT, BoolT, EnumT)
                ):
                    raise error(f, f"{f.name}: field of header {d.name} cannot have type"
                                f" {ft.show()}")
                if isinstance(d, ast.HeaderUnionDecl) and not isinstance(ft, HeaderT):
                    raise error(f, f"{f.name}: field of header_union must be a header")
                fields.append((f.name, ft))
                fannos.append((f.name, tuple((a.name, a.raw) for a in f.annotations)))
            if isinstance(d, ast.HeaderDecl):
                annos = tuple((a.name, a.raw) for a in d.annotations)
                t: PType = HeaderT(d.name, tuple(fields), annos)
                total = t.width()
                if total % 8:
                    # p4c-bm2-ss's BMv2 back end (HeaderConverter): headers are not padded
                    raise error(d, f"Found header with fields totaling {total} bits.  BMv2 "
                                 "target only supports headers with fields totaling a multiple "
                                 "of 8 bits.")
            elif isinstance(d, ast.StructDecl):
                t = StructT(d.name, tuple(fields), tuple(fannos))
            else:
                t = UnionT(d.name, tuple(fields))
            scope.declare(Sym("type", d.name, t, d))

    def declare_const(self, d: ast.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.type, scope)
        vt = self.type_of(d.value, scope, t)
        self.assignable(vt, t, d.value)
        self.fit_literal(d.value, t)
        v = self.const_eval(d.value, scope)
        if v is None:
            raise error(d.value, f"{show_expr(d.value)}: Cannot evaluate initializer for constant")
        if isinstance(t, BitT) and isinstance(v, int):
            v = v & mask(t.width) if not t.signed else v
        scope.declare(Sym("const", d.name, t, d, value=v))

    def qualify(self, d: ast.Decl, owner: str) -> str:
        n = annotation_string(d, "name")
        if n is not None:
            if n.startswith("."):
                return n[1:]
            return f"{owner}.{n}" if owner else n
        return f"{owner}.{d.name}" if owner else d.name

    def declare_action(self, d: ast.ActionDecl, scope: Scope, owner: str) -> None:
        sym = Sym("action", d.name, None, d, owner=owner, qualified=self.qualify(d, owner))
        scope.declare(sym)
        self.actions.append(sym)
        body_scope = scope.child()
        for p in d.params:
            pt = self.resolve_type(p.type, scope)
            self.check_default_value(p, body_scope)  # type: ignore[attr-defined]  # CallsMixin
            psym = Sym("var", p.name, pt, p, direction=p.direction)
            body_scope.declare(psym)
            self.decl_syms[id(p)] = psym
        self.scopes[id(d)] = body_scope
        self.decl_syms[id(d)] = sym
        self._cur_action.append(sym.qualified)
        try:
            self.check_block(d.body, body_scope, "action")
        finally:
            self._cur_action.pop()

    def declare_instance(self, d: ast.InstantiationDecl, scope: Scope, owner: str) -> None:
        if isinstance(d.type, ast.TypeName) and d.type.name == "value_set":
            return self.declare_value_set(d, scope, owner)  # type: ignore[attr-defined]
        t = self.resolve_type(d.type, scope)
        if isinstance(t, BlockT):
            raise error(d, f"{d.name}: instantiating {t.name} here is unsupported on this target")
        if not isinstance(t, ExternT):
            raise error(d, f"{d.name}: cannot instantiate type {t.show()}")
        ctors = [m for m in t.decl.methods if m.ret is None and m.name == t.decl.name]
        self.check_call_args(d, ctors, d.args, scope, self.extern_bindings(t), f"{t.name}")
        isym = Sym("instance", d.name, t, d, owner=owner, qualified=self.qualify(d, owner))
        scope.declare(isym)
        self.decl_syms[id(d)] = isym

    def extern_bindings(self, t: ExternT) -> dict[str, PType]:
        tps = t.decl.type_params if t.decl is not None else []
        return dict(zip(tps, t.args, strict=False))

    def declare_params(self, params: list[ast.Param], scope: Scope) -> None:
        for p in params:
            t = self.resolve_type(p.type, scope)
            self.check_default_value(p, scope)  # type: ignore[attr-defined]  # CallsMixin
            psym = Sym("var", p.name, t, p, direction=p.direction or "in")
            scope.declare(psym)
            self.decl_syms[id(p)] = psym
