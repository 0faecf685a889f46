"""Calls: actions, functions, extern functions, extern object methods and the built-in methods
(isValid, setValid, apply, push_front, minSizeInBits, ...).

Chooses the overload, binds positional and named arguments to parameters, infers type
variables, and records the result as a :class:`CallInfo` in ``Checker.calls``.
"""

from __future__ import annotations

import re
from typing import Any

from softnic.compiler.diagnostics import CompileError, CompileWarning, error
from softnic.compiler.frontend.check.callinfo import CallInfo, ParamT
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.scope import Scope, Sym
from softnic.compiler.ir.types import (
    ApplyResultT,
    BitT,
    BoolT,
    EnumT,
    ExternT,
    HeaderT,
    InfIntT,
    PType,
    StackT,
    StructT,
    TableT,
    TupleT,
    TypeVarT,
    UnionT,
    VarbitT,
    VoidT,
    bit_width,
)

# Methods every header, stack or table has without an extern declaring them.
BUILTIN_METHODS = {
    "isValid",
    "setValid",
    "setInvalid",
    "push_front",
    "pop_front",
    "apply",
    "minSizeInBits",
    "minSizeInBytes",
}


class CallsMixin(CheckerState):
    """Types call expressions and binds their arguments."""

    def type_of_call(self, e: ast.Call, scope: Scope) -> PType:
        tgt = e.target
        if isinstance(tgt, ast.Member):
            bt = self.method_base_type(tgt, scope)
            name = tgt.name
            if isinstance(bt, ExternT):
                methods = [m for m in bt.decl.methods if m.name == name and m.ret is not None]
                if not methods:
                    raise error(tgt, f"{show_expr(tgt)}: extern {bt.name} has no method {name}")
                info = self.check_call_args(
                    e, methods, e.args, scope, self.extern_bindings(bt), show_expr(tgt), e.type_args
                )
                info.kind, info.name, info.base = "method", name, tgt.expr
                info.sym = self.root_sym(tgt.expr)
                self.calls[id(e)] = info
                return info.ret
            return self.builtin_call(e, tgt, bt, scope)
        if isinstance(tgt, ast.PathExpr):
            sym = self.lookup(tgt, scope)
            if sym.kind == "action":
                d: ast.ActionDecl = sym.decl
                params = [ParamT(p.name, p.direction, self.param_type(p, sym)) for p in d.params]
                info = self.bind_args(e, params, e.args, scope, {}, tgt.name)
                info.kind, info.name, info.decl, info.sym = "action", sym.qualified, d, sym
                self.calls[id(e)] = info
                return VoidT()
            if sym.kind in ("function", "extern_func"):
                decls = sym.overloads if sym.kind == "extern_func" else [sym.decl]
                info = self.check_call_args(e, decls, e.args, scope, {}, tgt.name, e.type_args)
                info.kind, info.name, info.sym = sym.kind, sym.name, sym
                self.calls[id(e)] = info
                self.warn_deprecated(tgt, info.decl)
                if sym.kind == "extern_func" and sym.name == "digest" and not e.type_args:
                    self.insert_digest_type_arg(e, info)
                return info.ret
            if sym.kind == "block":
                raise error(e, f"{show_expr(e)}: instantiating {sym.name} here is unsupported on "
                            "this target")
            raise error(e, f"{tgt.name}: is not a function, action or method")
        raise error(e, f"{show_expr(e)}: is not callable")

    def warn_deprecated(self, use: ast.PathExpr, decl: Any) -> None:
        """p4c's Deprecated front-end pass: a use of a declaration annotated
        ``@deprecated("msg")`` (v1model's ``mark_to_drop()``, ``resubmit(data)``, ...) warns
        "<use>: Using deprecated feature <name>. <msg>" and is otherwise accepted."""
        annos = [a for a in getattr(decl, "annotations", []) if a.name == "deprecated"]
        if not annos:
            return
        msg = "".join(x.value for x in annos[0].exprs if isinstance(x, ast.StringLiteral))
        w = CompileWarning(use.loc, f"{use.name}: Using deprecated feature {decl.name}. {msg}",
                           "deprecated", len(use.name))
        if w not in self.warnings:
            self.warnings.append(w)

    def check_default_value(self, p: ast.Param, scope: Scope) -> None:
        """A parameter's default value must be a compile-time constant (p4c's TypeInference:
        "expression must be a compile-time constant"), e.g. ``in bit<8> y = 8w3``, not a
        header field or another parameter."""
        d = p.default
        if d is not None and self.non_constant(d, scope) is not None:
            raise error(d, f"{show_expr(d)}: expression must be a compile-time constant")

    def non_constant(self, e: Any, scope: Scope) -> ast.Expr | None:
        """``e`` itself or the part of it that is not a compile-time constant; None when it is
        one (or when that cannot be told here: the refusal is only for a sure case)."""
        if isinstance(e, (ast.IntLiteral, ast.BoolLiteral, ast.StringLiteral)):
            return None
        if isinstance(e, ast.PathExpr):
            sym = scope.lookup(e.name)
            return e if sym is not None and sym.kind in ("var", "table", "instance") else None
        if isinstance(e, ast.Member):
            base = e.expr
            while isinstance(base, (ast.Member, ast.Index)):
                base = base.expr
            if isinstance(base, ast.PathExpr):
                sym = scope.lookup(base.name)
                if sym is not None and sym.kind in ("var", "instance"):
                    return e
            return None
        if isinstance(e, ast.Index):
            return self.non_constant(e.expr, scope) or self.non_constant(e.index, scope)
        if isinstance(e, ast.Call):
            return e if isinstance(e.target, ast.Member) and self.non_constant(
                e.target.expr, scope) is not None else None
        for child in (getattr(e, f, None) for f in ("expr", "left", "right", "cond", "then",
                                                    "other")):
            if isinstance(child, ast.Expr):
                bad = self.non_constant(child, scope)
                if bad is not None:
                    return e
        for child in getattr(e, "elems", None) or []:
            bad = self.non_constant(child, scope) if isinstance(child, ast.Expr) else None
            if bad is not None:
                return e
        return None

    def insert_digest_type_arg(self, e: ast.Call, info: CallInfo) -> None:
        """``digest(r, {a, b})``: the type argument inferred from the list, ``tuple<A, B>``,
        written into the call, as p4c's TypeInference writes the type arguments it infers.
        The mid end's EliminateTuples then makes it a struct (``tuple_0``, the learn list's
        name in the BMv2 JSON), and the P4Info names such a digest ``digest_<n>`` (p4c's
        v1model P4RuntimeArchHandler for a type argument that is not a named type)."""
        t = info.bindings.get("T")
        if not isinstance(t, TupleT):
            return
        # EliminateTuples ran already (the front end's program could not be checked before
        # this call was reached): the struct it made of this same tuple type is T
        fields = tuple((f"f{i}", x) for i, x in enumerate(t.elems))
        for sym in self.top.syms.values():
            st = sym.type
            if sym.kind == "type" and isinstance(st, StructT) and st.fields == fields and (
                    re.fullmatch(r"tuple_\d+", st.name)):
                e.type_args = [ast.TypeName(st.name, loc=e.loc)]
                info.bindings["T"] = st
                return
        ta = ast_type(t, e.loc)
        if ta is not None:
            e.type_args = [ta]  # for EliminateTuples, when it is still to run
        # T as the struct EliminateTuples makes of it (when it has run already, it did not
        # see this call): the first ``tuple_<n>`` name no type has
        n = 0
        while f"tuple_{n}" in self.top.syms:
            n += 1
        info.bindings["T"] = StructT(f"tuple_{n}", fields)

    def method_base_type(self, tgt: ast.Member, scope: Scope) -> PType:
        base = tgt.expr
        if isinstance(base, ast.PathExpr):
            sym = self.lookup(base, scope)
            if sym.kind == "table":
                self.types[id(base)] = TableT(sym.qualified)
                return TableT(sym.qualified)
        return self.type_of(base, scope)

    def root_sym(self, e: ast.Expr) -> Sym | None:
        while isinstance(e, (ast.Member, ast.Index)):
            e = e.expr
        return self.syms.get(id(e)) if isinstance(e, ast.PathExpr) else None

    def param_type(self, p: ast.Param, owner_sym: Sym) -> PType:
        body_scope = self.scopes.get(id(owner_sym.decl))
        if body_scope is not None:
            s = body_scope.syms.get(p.name)
            if s is not None and s.type is not None:
                return s.type
        return self.resolve_type(p.type, self.top)

    def builtin_call(self, e: ast.Call, tgt: ast.Member, bt: PType, scope: Scope) -> PType:
        name = tgt.name
        info = CallInfo("builtin", name, base=tgt.expr)
        self.calls[id(e)] = info

        def no_args() -> None:
            if e.args:
                raise error(e, f"{show_expr(e)}: Expected 0 arguments, got {len(e.args)}")

        if isinstance(bt, TableT) and name == "apply":
            no_args()
            info.sym = self.syms.get(id(tgt.expr))
            return ApplyResultT(bt.name)
        if isinstance(bt, (HeaderT, UnionT)) and name == "isValid":
            no_args()
            return BoolT()
        if isinstance(bt, HeaderT) and name in ("setValid", "setInvalid"):
            no_args()
            return VoidT()
        if isinstance(bt, StackT) and name in ("push_front", "pop_front"):
            if len(e.args) != 1:
                raise error(e, f"{show_expr(e)}: Expected 1 arguments, got {len(e.args)}")
            self.type_of(e.args[0].value, scope)
            n = self.const_eval(e.args[0].value, scope)
            if not isinstance(n, int) or n < 0:
                raise error(e, f"{show_expr(e)}: argument must be a non-negative constant")
            info.args = [e.args[0].value]
            self.consts[id(e.args[0].value)] = n
            return VoidT()
        if isinstance(bt, (HeaderT, StructT)) and name in ("minSizeInBits", "minSizeInBytes"):
            no_args()
            bits = bit_width(bt)
            if isinstance(bt, HeaderT):
                bits = sum(0 if isinstance(ft, VarbitT) else bit_width(ft) for _, ft in bt.fields)
            self.consts[id(e)] = bits if name == "minSizeInBits" else (bits + 7) // 8
            return InfIntT()
        raise error(tgt, f"{show_expr(tgt)}: no method {name} for a value of type {bt.show()}")

    def check_call_args(
        self,
        node: ast.Node,
        candidates: list[Any],
        args: list[ast.Argument],
        scope: Scope,
        outer: dict[str, PType],
        what: str,
        type_args: list[ast.Type] | None = None,
    ) -> CallInfo:
        """Pick the overload whose parameter count fits, then check the arguments against it."""
        fitting = []
        for c in candidates:
            params = c.params
            required = sum(1 for p in params if p.default is None)
            if required <= len(args) <= len(params) or (
                any(a.name for a in args) and len(args) <= len(params)
            ):
                fitting.append(c)
        if not fitting:
            counts = sorted({len(c.params) for c in candidates})
            exp = " or ".join(str(n) for n in counts) if counts else "0"
            raise error(node, f"{what}: Expected {exp} arguments, got {len(args)}")
        c = fitting[0]
        tscope = scope.child()
        for n, t in outer.items():
            tscope.bind(Sym("type", n, t))
        tparams = list(getattr(c, "type_params", []) or [])
        for tp in tparams:
            tscope.bind(Sym("type", tp, TypeVarT(tp)))
        if type_args:
            if len(type_args) != len(tparams):
                raise error(node, f"{what}: expected {len(tparams)} type arguments")
            for tp, ta in zip(tparams, type_args, strict=False):
                tscope.bind(Sym("type", tp, self.resolve_type(ta, scope)))
        params = [
            ParamT(p.name, p.direction, self.resolve_type(p.type, tscope), p.default is not None)
            for p in c.params
        ]
        explicit: dict[str, PType] = {}
        if type_args:
            for tp in tparams:
                tsym = tscope.syms[tp]
                assert tsym.type is not None
                explicit[tp] = tsym.type
        info = self.bind_args(node, params, args, scope, dict(explicit), what)
        info.decl = c
        ret = getattr(c, "ret", None)
        info.ret = subst(self.resolve_type(ret, tscope), info.bindings) if ret else VoidT()
        if isinstance(info.ret, TypeVarT):
            raise error(node, f"{what}: cannot infer the return type; give it explicitly")
        return info

    def bind_args(
        self,
        node: ast.Node,
        params: list[ParamT],
        args: list[ast.Argument],
        scope: Scope,
        bindings: dict[str, PType],
        what: str,
    ) -> CallInfo:
        by_pos: list[ast.Expr | None] = [None] * len(params)
        names = [p.name for p in params]
        if len(args) > len(params):
            raise error(node, f"{what}: Expected {len(params)} arguments, got {len(args)}")
        for i, a in enumerate(args):
            if a.name is not None:
                if a.name not in names:
                    raise error(a, f"{what}: no parameter named {a.name}")
                by_pos[names.index(a.name)] = a.value
            else:
                by_pos[i] = a.value
        for i, p in enumerate(params):
            a = by_pos[i]
            if a is None:
                if p.has_default:
                    continue
                if isinstance(node, ast.Call) or isinstance(node, ast.InstantiationDecl):
                    raise error(node, f"{what}: Expected {len(params)} arguments, got {len(args)}")
                continue
            ptype = subst(p.type, bindings)
            at = self.type_of(a, scope, None if isinstance(ptype, TypeVarT) else ptype)
            if isinstance(a, ast.DontCare) and p.direction != "out":
                raise error(a, "_: don't care argument only allowed for out parameters")
            if p.direction in ("out", "inout"):
                if isinstance(a, ast.DontCare):
                    continue
                try:
                    self.check_lvalue(a, scope)
                except CompileError:  # p4c's TypeInference words it so for an argument
                    raise error(a, f"{show_expr(a)}: Read-only value used for out/inout "
                                f"parameter {p.name}") from None
                if not has_typevar(ptype) and at != ptype:
                    raise error(a, f"{show_expr(a)}: Cannot unify {at.show()} to {ptype.show()}")
            self.unify(ptype, at, bindings, a)
        return CallInfo("", what, params=params, args=by_pos, bindings=bindings)

    def unify(self, pt: PType, at: PType, b: dict[str, PType], node: ast.Expr) -> None:
        if isinstance(pt, TypeVarT):
            if pt.name in b:
                self.assignable(at, b[pt.name], node)
            else:
                b[pt.name] = at
            return
        if isinstance(pt, TupleT) and isinstance(at, TupleT):
            for x, y in zip(pt.elems, at.elems, strict=False):
                self.unify(x, y, b, node)
            return
        self.assignable(at, pt, node)


def has_typevar(t: PType) -> bool:
    if isinstance(t, TypeVarT):
        return True
    if isinstance(t, TupleT):
        return any(has_typevar(x) for x in t.elems)
    return False


def subst(t: PType, b: dict[str, PType]) -> PType:
    if isinstance(t, TypeVarT) and t.name in b:
        return b[t.name]
    if isinstance(t, TupleT):
        return TupleT(tuple(subst(x, b) for x in t.elems))
    return t


def ast_type(t: PType, loc: Any) -> ast.Type | None:
    """The type ``t`` written as source (None for a type that has no spelling here)."""
    if isinstance(t, BitT):
        return ast.BitType(ast.IntLiteral(t.width, loc=loc), t.signed, loc=loc)
    if isinstance(t, BoolT):
        return ast.BoolType(loc=loc)
    if isinstance(t, (HeaderT, StructT, UnionT, EnumT)):
        return ast.TypeName(t.name, loc=loc)
    if isinstance(t, TupleT):
        elems = [ast_type(x, loc) for x in t.elems]
        if any(x is None for x in elems):
            return None
        return ast.TupleType([x for x in elems if x is not None], loc=loc)
    return None
