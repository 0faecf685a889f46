"""SideEffectOrdering: make P4_16's left-to-right evaluation of side effects explicit.

Mirrors p4c's ``SideEffectOrdering`` (frontends/p4/sideEffects.cpp, ``DoSimplifyExpressions``),
which runs before p4c inlines functions. The P4_16 spec evaluates an expression left to right:
in ``x + f(x)`` the left operand is read before ``f`` runs, ``a && f(x)`` calls ``f`` only when
``a`` holds, and an argument is evaluated (an ``inout`` one copied in) before the arguments after
it. The later passes evaluate every function call of a statement first (desugar inlines them in
front of it), and the BMv2 back end knows a table's ``apply().hit``/``.miss`` only as a whole
``if`` condition. So, in a statement whose expressions have side effects, this pass:

- saves in a fresh temporary each value read before a later call that may change it (the
  written set of a call: the roots of its ``out``/``inout`` arguments; everything for a table
  apply or an action), and the index of a left-value before a right-hand side that may change it;
- hoists a call with side effects into a temporary (``T tmp = f(..);``) when anything with side
  effects is evaluated after it; the last one stays where it is;
- turns ``a && b``, ``a || b`` and ``c ? x : y`` whose later part has side effects into ``if``
  statements that assign a temporary, so short-circuiting is kept;
- turns ``t.apply().hit``/``.miss`` used as a value into
  ``bool tmp; if (t.apply().hit) { tmp = true; } else { tmp = false; }`` (what p4c's
  SideEffectOrdering plus its mid-end TableHit give the BMv2 back end);
- copies an ``inout`` argument into a temporary (and back after the call) when an argument
  after it has side effects that may change it;
- computes every key of a table that has a key with side effects into ``key_N`` control
  variables in front of each apply, in key order (p4c's KeySideEffect, part of its
  SideEffectOrdering); the keys keep their control-plane names.

Unlike p4c, the result of a plain binary operation is not copied into a temporary of its own:
its operands are already saved or are the last side effect, so only values that need a copy
get one (and no operator's result type has to be known).

A statement needing none of this is left exactly as it was, so a program without side effects in
expressions compiles to the same JSON as before.

Side effects are decided from the AST and the declarations, since there are no types yet: a call
of a function (unless it is pure: no ``out``/``inout`` parameter and only pure calls inside), an
action, an extern function, an extern object's method (except ``lookahead``, which changes
nothing) or a table ``apply`` has side effects; ``isValid()`` and ``minSizeIn*`` do not. The type
of each temporary is the declared type of what it holds: a function's or extern method's return
type, ``bool`` for hit/miss and short-circuits, the declared type of a saved left-value (fields
followed through header, struct and stack declarations and typedefs), the parameter type of an
``inout`` argument, the declared type of the variable a ``?:`` is assigned to. A value whose type
cannot be told that way (a ``?:`` whose branches and context give none, a generic callee's
unbound type variable) is refused with a positioned error.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import Names, lvalue_base, mentions, subst_types, walk
from softnic.compiler.ir.pretty import show_expr

EVERYTHING = "*"  # in a written set: the call may change any variable
PURE_BUILTINS = {"isValid", "minSizeInBits", "minSizeInBytes"}
WRITING_BUILTINS = {"setValid", "setInvalid", "push_front", "pop_front"}
PURE_METHODS = {"lookahead"}
CMP_OPS = {"==", "!=", "<", ">", "<=", ">=", "&&", "||"}


@dataclass
class Entry:
    """What a name means where it is used: ``kind`` is 'var', 'const', 'func', 'extfunc',
    'action', 'table', 'inst' or 'type'."""

    kind: str
    decl: Any = None
    type: ast.Type | None = None


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, Entry] = {}

    def add(self, name: str, entry: Entry) -> None:
        self.names[name] = entry

    def lookup(self, name: str) -> Entry | None:
        s: Scope | None = self
        if name.startswith("."):
            name = name[1:]
            while s is not None and s.parent is not None:
                s = s.parent
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


@dataclass
class CallInfo:
    """A call, classified: ``kind`` is 'func', 'extfunc', 'action', 'table', 'block' (a
    control's apply), 'method' (extern object), 'builtin' (header/stack method), 'pure' (a call
    without side effects) or 'unknown'."""

    kind: str
    decl: Any = None
    params: list[ast.Param] | None = None
    ret: ast.Type | None = None
    effect: bool = False
    obj: ast.Expr | None = None  # the header/stack a builtin method works on
    type_map: dict[str, ast.Type] = field(default_factory=dict)
    tvars: set[str] = field(default_factory=set)  # the callee's type variables

    def ret_type(self) -> ast.Type | None:
        """The return type with the type arguments bound; None when it still has a type
        variable (or is unknown or void)."""
        ret = self.ret
        if ret is None or isinstance(ret, ast.VoidType):
            return None
        if self.type_map:
            ret = subst_types(copy.deepcopy(ret), self.type_map)
        return None if mentions(ret, self.tvars - set(self.type_map)) else ret


def strip_not(e: ast.Expr) -> tuple[ast.Expr, bool]:
    neg = False
    while isinstance(e, ast.Unary) and e.op == "!":
        neg = not neg
        e = e.expr
    return e, neg


class SideEffectOrdering:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.names = Names(prog)
        self.temps: dict[str, ast.Type] = {}  # temporaries made here, with their types
        self.top = Scope()
        self.pure_memo: dict[int, bool] = {}
        self.tvars: set[str] = set()  # type variables of the declaration being rewritten
        for d in prog.decls:
            self.declare(self.top, d)

    # ------------------------------------------------------------------ declarations

    def declare(self, scope: Scope, d: Any) -> None:
        if isinstance(d, ast.FunctionDecl):
            scope.add(d.name, Entry("func", d))
        elif isinstance(d, ast.ExternFunctionDecl):
            old = scope.names.get(d.name)
            decls = (old.decl if old is not None and old.kind == "extfunc" else []) + [d]
            scope.add(d.name, Entry("extfunc", decls))
        elif isinstance(d, ast.ActionDecl):
            scope.add(d.name, Entry("action", d))
        elif isinstance(d, ast.TableDecl):
            scope.add(d.name, Entry("table", d))
        elif isinstance(d, ast.InstantiationDecl):
            scope.add(d.name, Entry("inst", d, d.type))
        elif isinstance(d, ast.ConstDecl):
            scope.add(d.name, Entry("const", d, d.type))
        elif isinstance(d, ast.VarDecl):
            scope.add(d.name, Entry("var", d, d.type))
        elif isinstance(d, ast.ErrorDecl | ast.MatchKindDecl):
            scope.add(d.name, Entry("type", d))
        elif isinstance(d, ast.Decl):
            scope.add(d.name, Entry("type", d))

    def params_scope(self, parent: Scope, params: Iterable[ast.Param],
                     ctor: Iterable[ast.Param] = ()) -> Scope:
        s = Scope(parent)
        for p in ctor:
            s.add(p.name, Entry("const", p, p.type))
        for p in params:
            s.add(p.name, Entry("var", p, p.type))
        return s

    # ------------------------------------------------------------------ driver

    def run(self) -> ast.Program:
        for d in self.prog.decls:
            self.tvars = set(getattr(d, "type_params", []))
            if isinstance(d, ast.FunctionDecl):
                s = self.params_scope(self.top, d.params)
                d.body.stmts = self.stmts(d.body.stmts, s, d.ret)
            elif isinstance(d, ast.ActionDecl):
                self.action(d, self.top)
            elif isinstance(d, ast.ControlDecl):
                self.control(d)
            elif isinstance(d, ast.ParserDecl):
                self.parser(d)
        return self.prog

    def action(self, d: ast.ActionDecl, scope: Scope) -> None:
        s = self.params_scope(scope, d.params)
        d.body.stmts = self.stmts(d.body.stmts, s)

    def control(self, d: ast.ControlDecl) -> None:
        s = self.params_scope(self.top, d.params, d.ctor_params)
        for x in d.locals:
            self.declare(s, x)
        for x in d.locals:
            if isinstance(x, ast.ActionDecl):
                self.action(x, s)
            elif isinstance(x, ast.FunctionDecl):
                fs = self.params_scope(s, x.params)
                x.body.stmts = self.stmts(x.body.stmts, fs, x.ret)
        d.apply.stmts = self.stmts(d.apply.stmts, Scope(s))
        keys = self.lift_keys(d, s)
        if keys:
            d.apply.stmts = self.key_assignments(d.apply.stmts, keys, Scope(s))

    # ------------------------------------------------------------------ table keys

    def lift_keys(self, d: ast.ControlDecl, scope: Scope) -> dict[str, list[ast.AssignStmt]]:
        """p4c's KeySideEffect: when a key expression of a table has side effects, every key
        of that table is computed into a control-level ``key`` variable before each apply
        (all of them, to keep their order). The key keeps its control-plane name."""
        out: dict[str, list[ast.AssignStmt]] = {}
        new_locals: list[Any] = []
        for x in d.locals:
            props = [p for p in x.properties if p.name == "key"] if isinstance(
                x, ast.TableDecl) else []
            if props and self.effects_any([k.expr for k in props[0].keys], scope):
                assigns = []
                for k in props[0].keys:
                    typ = self.need_type(self.type_of(k.expr, scope), k.expr)
                    name = self.names.numbered("key")
                    new_locals.append(ast.VarDecl(name, copy.deepcopy(typ), None, loc=k.loc))
                    if not any(a.name == "name" for a in k.annotations):
                        text = show_expr(k.expr)
                        k.annotations.append(ast.Annotation(
                            "name", f'"{text}"', [ast.StringLiteral(text, loc=k.loc)],
                            loc=k.loc))
                    assigns.append(ast.AssignStmt(ast.PathExpr(name, loc=k.loc), k.expr,
                                                  loc=k.loc))
                    k.expr = ast.PathExpr(name, loc=k.expr.loc)
                out[x.name] = assigns
            new_locals.append(x)
        d.locals = new_locals
        return out

    def key_assignments(self, ss: list[Any], keys: dict[str, list[ast.AssignStmt]],
                        scope: Scope) -> list[Any]:
        """Put the key computations of ``keys``' tables in front of each statement that
        applies one (after the rewriting above, an apply stands alone in its statement)."""
        out: list[Any] = []
        for s in ss:
            own: list[Any] = []
            if isinstance(s, ast.IfStmt):
                own = [s.cond]
            elif isinstance(s, ast.SwitchStmt):
                own = [s.expr]
            elif isinstance(s, (ast.CallStmt, ast.AssignStmt, ast.VarDecl, ast.ReturnStmt)):
                own = [s]
            applied = [n.target.expr.name for e in own for n in walk(e)
                       if self.table_apply(n, scope) and n.target.expr.name in keys]
            for t in applied:
                for a in keys[t]:
                    out.extend(self.stmt(copy.deepcopy(a), scope, None))
            if isinstance(s, ast.BlockStmt):
                s.stmts = self.key_assignments(s.stmts, keys, Scope(scope))
            elif isinstance(s, ast.IfStmt):
                for attr in ("then", "other"):
                    b = getattr(s, attr)
                    if b is not None:
                        nb = self.key_assignments([b], keys, scope)
                        setattr(s, attr, nb[0] if len(nb) == 1 else ast.BlockStmt(nb, loc=b.loc))
            elif isinstance(s, ast.SwitchStmt):
                for c in s.cases:
                    if c.body is not None:
                        c.body.stmts = self.key_assignments(c.body.stmts, keys, Scope(scope))
            out.append(s)
            if isinstance(s, ast.Decl):
                self.declare(scope, s)
        return out

    def parser(self, d: ast.ParserDecl) -> None:
        s = self.params_scope(self.top, d.params, d.ctor_params)
        for x in d.locals:
            self.declare(s, x)
        for st in d.states:
            inner = Scope(s)
            st.stmts = self.stmts(st.stmts, inner)
            tr = st.transition
            if tr is not None and tr.select_exprs and self.effects_any(tr.select_exprs, inner):
                pre: list[Any] = []
                tr.select_exprs = self.sequence(tr.select_exprs, inner, pre, False, set())
                st.stmts.extend(pre)

    # ------------------------------------------------------------------ statements

    def stmts(self, ss: list[Any], scope: Scope, ret: ast.Type | None = None) -> list[Any]:
        out: list[Any] = []
        for s in ss:
            out.extend(self.stmt(s, scope, ret))
            if isinstance(s, ast.Decl):
                self.declare(scope, s)
        return out

    def one(self, s: ast.Stmt, scope: Scope, ret: ast.Type | None) -> ast.Stmt:
        ss = self.stmt(s, Scope(scope), ret)
        return ss[0] if len(ss) == 1 else ast.BlockStmt(ss, loc=s.loc)

    def stmt(self, s: Any, scope: Scope, ret: ast.Type | None) -> list[Any]:
        if isinstance(s, ast.BlockStmt):
            s.stmts = self.stmts(s.stmts, Scope(scope), ret)
            return [s]
        if isinstance(s, ast.IfStmt):
            pre: list[Any] = []
            core, _ = strip_not(s.cond)
            if self.hit_miss(core, scope) is None:
                s.cond = self.value(s.cond, scope, pre, False, set())
            s.then = self.one(s.then, scope, ret)
            if s.other is not None:
                s.other = self.one(s.other, scope, ret)
            return pre + [s]
        if isinstance(s, ast.SwitchStmt):
            pre = []
            if not self.is_action_run(s.expr, scope):
                s.expr = self.value(s.expr, scope, pre, False, set())
            for c in s.cases:
                if c.body is not None:
                    c.body.stmts = self.stmts(c.body.stmts, Scope(scope), ret)
            return pre + [s]
        if isinstance(s, ast.AssignStmt):
            return self.assign(s, scope)
        if isinstance(s, ast.VarDecl) and s.init is not None:
            return self.var_decl(s, scope)
        if isinstance(s, ast.CallStmt):
            return self.call_stmt(s, scope)
        if isinstance(s, ast.ReturnStmt) and s.value is not None:
            if not self.effects(s.value, scope):
                return [s]
            pre = []
            s.value = self.value(s.value, scope, pre, False, set(), hint=ret)
            return pre + [s]
        return [s]

    def assign(self, s: ast.AssignStmt, scope: Scope) -> list[Any]:
        if not (self.effects(s.rhs, scope) or self.effects(s.lhs, scope)):
            return [s]
        pre: list[Any] = []
        hm = self.hit_miss_value(s.rhs, scope)
        if hm is not None:
            lhs = self.location(s.lhs, scope, pre, True, {EVERYTHING})
            pre.append(self.hit_if(hm, lambda v: ast.AssignStmt(
                copy.deepcopy(lhs), ast.BoolLiteral(v, loc=s.loc), loc=s.loc), s))
            return pre
        # the left-hand side is evaluated first (p4c: "For assignment statements e = e1; the
        # left hand side is evaluated first")
        s.lhs = self.location(s.lhs, scope, pre, self.effects(s.rhs, scope),
                              self.writes(s.rhs, scope))
        s.rhs = self.value(s.rhs, scope, pre, False, set(), hint=self.lvalue_type(s.lhs, scope))
        return pre + [s]

    def var_decl(self, s: ast.VarDecl, scope: Scope) -> list[Any]:
        assert s.init is not None
        if not self.effects(s.init, scope):
            return [s]
        pre: list[Any] = []
        hm = self.hit_miss_value(s.init, scope)
        if hm is not None:
            s.init = None
            pre.append(s)
            pre.append(self.hit_if(hm, lambda v: ast.AssignStmt(
                ast.PathExpr(s.name, loc=s.loc), ast.BoolLiteral(v, loc=s.loc), loc=s.loc), s))
            return pre
        s.init = self.value(s.init, scope, pre, False, set(), hint=s.type)
        return pre + [s]

    def call_stmt(self, s: ast.CallStmt, scope: Scope) -> list[Any]:
        if not self.effects_any([a.value for a in s.call.args] + [s.call.target], scope):
            return [s]
        pre: list[Any] = []
        post: list[Any] = []
        info = self.classify(s.call, scope)
        self.call_parts(s.call, info, scope, pre, post)
        return pre + [s] + post

    # ------------------------------------------------------------------ table results

    def table_apply(self, e: Any, scope: Scope) -> bool:
        if not (isinstance(e, ast.Call) and isinstance(e.target, ast.Member)
                and e.target.name == "apply" and isinstance(e.target.expr, ast.PathExpr)):
            return False
        ent = scope.lookup(e.target.expr.name)
        return ent is not None and ent.kind == "table"

    def hit_miss(self, e: Any, scope: Scope) -> ast.Member | None:
        if isinstance(e, ast.Member) and e.name in ("hit", "miss") and self.table_apply(
                e.expr, scope):
            return e
        return None

    def is_action_run(self, e: Any, scope: Scope) -> bool:
        return isinstance(e, ast.Member) and e.name == "action_run" and self.table_apply(
            e.expr, scope)

    def hit_miss_value(self, e: ast.Expr, scope: Scope) -> tuple[ast.Member, bool] | None:
        core, neg = strip_not(e)
        m = self.hit_miss(core, scope)
        return (m, neg) if m is not None else None

    def hit_if(self, hm: tuple[ast.Member, bool], assign: Any, at: ast.Node) -> ast.IfStmt:
        """``if (t.apply().hit) { x = true; } else { x = false; }`` (p4c's TableHit)."""
        m, neg = hm
        return ast.IfStmt(m, ast.BlockStmt([assign(not neg)], loc=at.loc),
                          ast.BlockStmt([assign(neg)], loc=at.loc), loc=at.loc)

    # ------------------------------------------------------------------ effects analysis

    def classify(self, c: ast.Call, scope: Scope) -> CallInfo:
        t = c.target
        if isinstance(t, ast.PathExpr):
            ent = scope.lookup(t.name)
            if ent is None:
                return CallInfo("unknown")
            if ent.kind == "func":
                f: ast.FunctionDecl = ent.decl
                pure = self.pure(f, scope)
                return CallInfo("func" if not pure else "pure", f, f.params, f.ret, not pure,
                                tvars=set(f.type_params))
            if ent.kind == "extfunc":
                ef = self.overload(ent.decl, len(c.args))
                if ef is None:
                    return CallInfo("extfunc", effect=True)
                tmap = {n: a for n, a in zip(ef.type_params, c.type_args, strict=False)}
                return CallInfo("extfunc", ef, ef.params, ef.ret, True, type_map=tmap,
                                tvars=set(ef.type_params))
            if ent.kind == "action":
                return CallInfo("action", ent.decl, ent.decl.params, ast.VoidType(), True)
            return CallInfo("unknown")
        if not isinstance(t, ast.Member):
            return CallInfo("unknown")
        obj, name = t.expr, t.name
        if isinstance(obj, ast.PathExpr):
            ent = scope.lookup(obj.name)
            if ent is not None and ent.kind == "table":
                return CallInfo("table", ent.decl, [], None, True) if name == "apply" else \
                    CallInfo("unknown")
            if ent is not None and ent.kind in ("inst", "var") and ent.type is not None:
                tdecl, targs = self.type_decl(ent.type)
                if isinstance(tdecl, ast.ExternDecl):
                    return self.method(c, tdecl, targs, name)
                if isinstance(tdecl, (ast.ControlDecl, ast.ParserDecl)) and name == "apply":
                    return CallInfo("block", tdecl, tdecl.params, ast.VoidType(), True)
                if ent.kind == "inst":
                    return CallInfo("unknown")
        if name in PURE_BUILTINS:
            ret = ast.BoolType(loc=c.loc) if name == "isValid" else None
            return CallInfo("pure", ret=ret, obj=obj)
        if name in WRITING_BUILTINS:
            return CallInfo("builtin", effect=True, obj=obj)
        return CallInfo("unknown")

    def method(self, c: ast.Call, ext: ast.ExternDecl, targs: list[ast.Type],
               name: str) -> CallInfo:
        cands = [m for m in ext.methods if m.name == name and m.ret is not None]
        m = self.overload(cands, len(c.args))
        if m is None:
            return CallInfo("method", effect=name not in PURE_METHODS)
        tmap = {n: a for n, a in zip(ext.type_params, targs, strict=False)}
        tmap.update({n: a for n, a in zip(m.type_params, c.type_args, strict=False)})
        return CallInfo("method", ext, m.params, m.ret, name not in PURE_METHODS, type_map=tmap,
                        tvars=set(ext.type_params) | set(m.type_params))

    @staticmethod
    def overload(cands: list[Any], nargs: int) -> Any:
        for m in cands:
            required = [p for p in m.params if p.default is None]
            if len(required) <= nargs <= len(m.params):
                return m
        return cands[0] if len(cands) == 1 else None

    def pure(self, f: ast.FunctionDecl, scope: Scope) -> bool:
        """No ``out``/``inout`` parameter and only calls without side effects inside."""
        key = id(f)
        if key in self.pure_memo:
            return self.pure_memo[key]
        self.pure_memo[key] = False  # recursion: assume the worst
        ok = not any(p.direction in ("out", "inout") for p in f.params)
        if ok:
            inner = self.params_scope(scope, f.params)
            for n in walk(f.body):
                if isinstance(n, ast.Decl):
                    self.declare(inner, n)
            ok = not any(isinstance(n, ast.Call) and self.classify(n, inner).effect
                         for n in walk(f.body))
            ok = ok and not any(isinstance(n, ast.ExitStmt) for n in walk(f.body))
        self.pure_memo[key] = ok
        return ok

    def effects(self, e: Any, scope: Scope) -> bool:
        """Does evaluating ``e`` have side effects (a call that has them)?"""
        return any(isinstance(n, ast.Call) and self.classify(n, scope).effect for n in walk(e))

    def effects_any(self, es: Iterable[Any], scope: Scope) -> bool:
        return any(self.effects(e, scope) for e in es)

    def writes(self, e: Any, scope: Scope) -> set[str]:
        """Roots of the variables evaluating ``e`` may change (EVERYTHING for a table apply,
        an action or a control's apply)."""
        out: set[str] = set()
        for n in walk(e):
            if isinstance(n, ast.Call):
                out |= self.call_writes(n, self.classify(n, scope))
        return out

    def call_writes(self, c: ast.Call, info: CallInfo) -> set[str]:
        if not info.effect:
            return set()
        if info.kind in ("table", "action", "block"):
            return {EVERYTHING}
        if info.kind == "builtin":
            b = lvalue_base(info.obj) if info.obj is not None else None
            return {b.name} if b is not None else set()
        out: set[str] = set()
        for p, a in self.bind(c, info):
            if isinstance(a, ast.DontCare):
                continue
            if p is None or p.direction in ("out", "inout"):
                b = lvalue_base(a)
                if b is not None:
                    out.add(b.name)
        return out

    def writes_list(self, es: Iterable[Any], scope: Scope) -> set[str]:
        out: set[str] = set()
        for e in es:
            out |= self.writes(e, scope)
        return out

    @staticmethod
    def bind(c: ast.Call, info: CallInfo) -> list[tuple[ast.Param | None, ast.Expr]]:
        """(parameter, argument) in the order the arguments are written (None: unknown)."""
        params = info.params
        out: list[tuple[ast.Param | None, ast.Expr]] = []
        for i, a in enumerate(c.args):
            p: ast.Param | None = None
            if params is not None:
                if a.name is not None:
                    p = next((q for q in params if q.name == a.name), None)
                elif i < len(params):
                    p = params[i]
            out.append((p, a.value))
        return out

    # ------------------------------------------------------------------ rewriting

    def fresh(self, typ: ast.Type, init: ast.Expr | None, pre: list[Any], at: ast.Node
              ) -> ast.PathExpr:
        name = self.names.fresh("tmp")
        self.temps[name] = typ
        pre.append(ast.VarDecl(name, copy.deepcopy(typ), init, loc=at.loc))
        return ast.PathExpr(name, loc=at.loc)

    def need_type(self, t: ast.Type | None, e: ast.Expr) -> ast.Type:
        if t is None or mentions(t, self.tvars) or isinstance(t, ast.InfIntType):
            raise CompileError(e.loc, f"{show_expr(e)}: cannot tell the type of this value, "
                               "which must be computed before a later call with side effects; "
                               "cast it or assign it to a variable first")
        return t

    def is_read(self, e: ast.Expr, scope: Scope) -> bool:
        """Is ``e`` a left-value rooted at a variable (not a constant, not a temporary)?"""
        b = lvalue_base(e)
        if b is None or b.name in self.temps:
            return False
        ent = scope.lookup(b.name)
        return ent is not None and ent.kind == "var"

    def value(self, e: ast.Expr, scope: Scope, pre: list[Any], after: bool, later: set[str],
              hint: ast.Type | None = None) -> ast.Expr:
        """``e`` rewritten so that evaluating it where it stands (after ``pre``) gives what the
        spec's left-to-right evaluation gives. ``after``: something with side effects is
        evaluated after ``e`` before its value is used; ``later``: what that may change."""
        if not after and not self.effects(e, scope):
            return e
        if isinstance(e, (ast.PathExpr, ast.Member, ast.Index, ast.Slice)) and self.is_read(
                e, scope):
            return self.read(e, scope, pre, after, later)
        if isinstance(e, ast.Slice):
            e.expr = self.value(e.expr, scope, pre, after, later)
            return e
        if isinstance(e, ast.Member):
            hm = self.hit_miss(e, scope)
            if hm is not None:
                tmp = self.fresh(ast.BoolType(loc=e.loc), None, pre, e)
                pre.append(self.hit_if((hm, False), lambda v: ast.AssignStmt(
                    ast.PathExpr(tmp.name, loc=e.loc), ast.BoolLiteral(v, loc=e.loc),
                    loc=e.loc), e))
                return tmp
            if isinstance(e.expr, ast.Call):
                e.expr = self.value(e.expr, scope, pre, after, later)
            return e
        if isinstance(e, ast.Index):
            e.expr = self.value(e.expr, scope, pre, after or self.effects(e.index, scope),
                                later | self.writes(e.index, scope))
            e.index = self.value(e.index, scope, pre, after, later)
            return e
        if isinstance(e, ast.Call):
            return self.call_value(e, scope, pre, after, later)
        if isinstance(e, (ast.Unary, ast.Cast)):
            e.expr = self.value(e.expr, scope, pre, after, later)
            return e
        if isinstance(e, ast.Binary):
            if e.op in ("&&", "||") and self.effects(e.right, scope):
                return self.short_circuit(e, scope, pre)
            e.left = self.value(e.left, scope, pre, after or self.effects(e.right, scope),
                                later | self.writes(e.right, scope))
            e.right = self.value(e.right, scope, pre, after, later)
            return e
        if isinstance(e, ast.Ternary):
            if self.effects_any([e.then, e.other], scope):
                return self.mux(e, scope, pre, hint)
            rest = [e.then, e.other]
            e.cond = self.value(e.cond, scope, pre, after or self.effects_any(rest, scope),
                                later | self.writes_list(rest, scope))
            e.then = self.value(e.then, scope, pre, after, later)
            e.other = self.value(e.other, scope, pre, after, later)
            return e
        if isinstance(e, ast.ListExpr):
            e.elems = self.sequence(e.elems, scope, pre, after, later)
            return e
        if isinstance(e, ast.StructInit):
            vals = self.sequence([v for _, v in e.fields], scope, pre, after, later)
            e.fields = [(n, v) for (n, _), v in zip(e.fields, vals, strict=True)]
            return e
        return e

    def sequence(self, es: list[ast.Expr], scope: Scope, pre: list[Any], after: bool,
                 later: set[str]) -> list[ast.Expr]:
        """Expressions evaluated one after the other, all used after the last."""
        out = []
        for i, x in enumerate(es):
            rest = es[i + 1:]
            out.append(self.value(x, scope, pre, after or self.effects_any(rest, scope),
                                  later | self.writes_list(rest, scope)))
        return out

    def read(self, e: ast.Expr, scope: Scope, pre: list[Any], after: bool, later: set[str]
             ) -> ast.Expr:
        """A left-value read: its indices first; saved when a later call may change it."""
        e = self.location(e, scope, pre, after, later)
        b = lvalue_base(e)
        if b is None or not (EVERYTHING in later or b.name in later):
            return e
        if isinstance(e, ast.Member) and e.name == "size" and isinstance(
                self.type_decl(self.lvalue_type(e.expr, scope))[0], ast.StackType):
            return e  # a stack's size is a constant
        if isinstance(e, ast.Slice):
            e.expr = self.fresh(self.need_type(self.lvalue_type(e.expr, scope), e.expr),
                                e.expr, pre, e)
            return e
        return self.fresh(self.need_type(self.lvalue_type(e, scope), e), e, pre, e)

    def location(self, e: ast.Expr, scope: Scope, pre: list[Any], after: bool,
                 later: set[str]) -> ast.Expr:
        """A left-value whose run-time indices are evaluated now (saved when a later call may
        change what they read)."""
        if isinstance(e, (ast.Member, ast.Slice)):
            e.expr = self.location(e.expr, scope, pre, after, later)
        elif isinstance(e, ast.Index):
            e.expr = self.location(e.expr, scope, pre, after or self.effects(e.index, scope),
                                   later | self.writes(e.index, scope))
            if not isinstance(e.index, ast.IntLiteral):
                e.index = self.value(e.index, scope, pre, after, later)
        return e

    def call_value(self, c: ast.Call, scope: Scope, pre: list[Any], after: bool,
                   later: set[str]) -> ast.Expr:
        info = self.classify(c, scope)
        if not info.effect:
            if info.obj is not None and info.kind == "pure":
                # h.isValid(): a read of h's validity
                b = lvalue_base(info.obj)
                info_obj = self.location(info.obj, scope, pre, after, later)
                assert isinstance(c.target, ast.Member)
                c.target.expr = info_obj
                if b is not None and self.is_read(info.obj, scope) and (
                        EVERYTHING in later or b.name in later) and info.ret is not None:
                    return self.fresh(info.ret, c, pre, c)
                return c
            vals = self.sequence([a.value for a in c.args], scope, pre, after, later)
            for a, v in zip(c.args, vals, strict=True):
                a.value = v
            return c
        post: list[Any] = []
        self.call_parts(c, info, scope, pre, post)
        if not after and not post:
            return c  # the last side effect: it stays where it is
        tmp = self.fresh(self.need_type(info.ret_type(), c), c, pre, c)
        pre.extend(post)
        return tmp

    def call_parts(self, c: ast.Call, info: CallInfo, scope: Scope, pre: list[Any],
                   post: list[Any]) -> None:
        """Evaluate the target's object and the arguments of a call with side effects, in
        order; an ``inout``/``out`` argument that a later argument may change goes through a
        temporary copied back into it after the call (appended to ``post``)."""
        pairs = self.bind(c, info)
        args = [a for _, a in pairs]
        if isinstance(c.target, ast.Member) and info.kind == "builtin":
            c.target.expr = self.location(c.target.expr, scope, pre,
                                          self.effects_any(args, scope),
                                          self.writes_list(args, scope))
        for i, (a, (p, v)) in enumerate(zip(c.args, pairs, strict=True)):
            rest = args[i + 1:]
            after = self.effects_any(rest, scope)
            later = self.writes_list(rest, scope)
            if isinstance(v, ast.DontCare):
                continue
            direction = p.direction if p is not None else (
                "inout" if lvalue_base(v) is not None and info.params is None else None)
            if direction in ("out", "inout") and lvalue_base(v) is not None:
                loc = self.location(v, scope, pre, after, later)
                b = lvalue_base(loc)
                assert b is not None
                if after and b.name not in self.temps and (
                        EVERYTHING in later or b.name in later):
                    ptype = p.type if p is not None else None
                    if ptype is not None and info.type_map:
                        ptype = subst_types(copy.deepcopy(ptype), info.type_map)
                    if ptype is None or mentions(ptype, info.tvars - set(info.type_map)):
                        ptype = self.lvalue_type(loc, scope)
                    init = copy.deepcopy(loc) if direction == "inout" else None
                    tmp = self.fresh(self.need_type(ptype, loc), init, pre, loc)
                    post.append(ast.AssignStmt(copy.deepcopy(loc),
                                               ast.PathExpr(tmp.name, loc=loc.loc), loc=loc.loc))
                    a.value = tmp
                else:
                    a.value = loc
            else:
                a.value = self.value(v, scope, pre, after, later,
                                     hint=p.type if p is not None else None)

    def short_circuit(self, e: ast.Binary, scope: Scope, pre: list[Any]) -> ast.Expr:
        """``a && b`` -> ``bool tmp; if (a) { tmp = b; } else { tmp = false; }`` (and ``||``
        with the branches swapped): ``b`` is evaluated only when the spec says so."""
        cond = self.value(e.left, scope, pre, False, set())
        tmp = self.fresh(ast.BoolType(loc=e.loc), None, pre, e)
        branch: list[Any] = []
        right = self.value(e.right, scope, branch, False, set())
        branch.append(ast.AssignStmt(ast.PathExpr(tmp.name, loc=e.loc), right, loc=e.loc))
        const = ast.BlockStmt([ast.AssignStmt(ast.PathExpr(tmp.name, loc=e.loc),
                                              ast.BoolLiteral(e.op == "||", loc=e.loc),
                                              loc=e.loc)], loc=e.loc)
        body = ast.BlockStmt(branch, loc=e.right.loc)
        then, other = (body, const) if e.op == "&&" else (const, body)
        pre.append(ast.IfStmt(cond, then, other, loc=e.loc))
        return tmp

    def mux(self, e: ast.Ternary, scope: Scope, pre: list[Any], hint: ast.Type | None
            ) -> ast.Expr:
        """``c ? x : y`` -> ``T tmp; if (c) { tmp = x; } else { tmp = y; }``."""
        typ = self.type_of(e.then, scope) or self.type_of(e.other, scope) or hint
        typ = self.need_type(typ, e)
        cond = self.value(e.cond, scope, pre, False, set())
        tmp = self.fresh(typ, None, pre, e)
        blocks = []
        for x in (e.then, e.other):
            branch: list[Any] = []
            v = self.value(x, scope, branch, False, set(), hint=typ)
            branch.append(ast.AssignStmt(ast.PathExpr(tmp.name, loc=x.loc), v, loc=x.loc))
            blocks.append(ast.BlockStmt(branch, loc=x.loc))
        pre.append(ast.IfStmt(cond, blocks[0], blocks[1], loc=e.loc))
        return tmp

    # ------------------------------------------------------------------ declared types

    def type_decl(self, t: ast.Type | None) -> tuple[Any, list[ast.Type]]:
        """The declaration a type names (typedefs followed) and its type arguments."""
        seen = 0
        while isinstance(t, ast.TypeName) and seen < 50:
            seen += 1
            ent = self.top.lookup(t.name)
            if ent is None or ent.kind != "type":
                return None, []
            d = ent.decl
            if isinstance(d, ast.TypedefDecl):
                t = d.type
                continue
            return d, list(t.args)
        return t, []

    def lvalue_type(self, e: ast.Expr, scope: Scope) -> ast.Type | None:
        """The declared type of a left-value (None when it cannot be told)."""
        if isinstance(e, ast.PathExpr):
            if e.name in self.temps:
                return self.temps[e.name]
            ent = scope.lookup(e.name)
            return ent.type if ent is not None and ent.kind in ("var", "const") else None
        if isinstance(e, ast.Index):
            st, _ = self.type_decl(self.lvalue_type(e.expr, scope))
            return st.elem if isinstance(st, ast.StackType) else None
        if isinstance(e, ast.Slice):
            hi, lo = e.hi, e.lo
            if isinstance(hi, ast.IntLiteral) and isinstance(lo, ast.IntLiteral):
                return ast.BitType(ast.IntLiteral(hi.value - lo.value + 1, loc=e.loc), loc=e.loc)
            return None
        if isinstance(e, ast.Member):
            bt = self.lvalue_type(e.expr, scope)
            d, targs = self.type_decl(bt)
            if isinstance(d, ast.StackType):
                if e.name in ("next", "last"):
                    return d.elem
                if e.name == "lastIndex":
                    return ast.BitType(ast.IntLiteral(32, loc=e.loc), loc=e.loc)
                return None
            if isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl)):
                for f in d.fields:
                    if f.name == e.name:
                        tps = getattr(d, "type_params", [])
                        if tps and targs:
                            bind = dict(zip(tps, targs, strict=False))
                            return subst_types(copy.deepcopy(f.type), bind)
                        return f.type
        return None

    def type_of(self, e: ast.Expr, scope: Scope) -> ast.Type | None:
        """The type of an expression, as far as declarations tell it."""
        if isinstance(e, ast.IntLiteral):
            if e.width is None:
                return None
            return ast.BitType(ast.IntLiteral(e.width, loc=e.loc), e.signed, loc=e.loc)
        if isinstance(e, ast.BoolLiteral):
            return ast.BoolType(loc=e.loc)
        if isinstance(e, ast.Cast):
            return e.type
        if isinstance(e, (ast.PathExpr, ast.Index, ast.Slice)):
            return self.lvalue_type(e, scope)
        if isinstance(e, ast.Member):
            if isinstance(e.expr, ast.PathExpr):
                ent = scope.lookup(e.expr.name)
                if ent is not None and ent.kind == "type":
                    if isinstance(ent.decl, ast.ErrorDecl):
                        return ast.ErrorType(loc=e.loc)
                    if isinstance(ent.decl, ast.EnumDecl):
                        return ast.TypeName(ent.decl.name, loc=e.loc)
            if self.hit_miss(e, scope) is not None:
                return ast.BoolType(loc=e.loc)
            if isinstance(e.expr, ast.Call):
                d, _ = self.type_decl(self.type_of(e.expr, scope))
                if isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl)):
                    return next((f.type for f in d.fields if f.name == e.name), None)
                return None
            return self.lvalue_type(e, scope)
        if isinstance(e, ast.Call):
            return self.classify(e, scope).ret_type()
        if isinstance(e, ast.Unary):
            return ast.BoolType(loc=e.loc) if e.op == "!" else self.type_of(e.expr, scope)
        if isinstance(e, ast.Binary):
            if e.op in CMP_OPS:
                return ast.BoolType(loc=e.loc)
            lt = self.type_of(e.left, scope)
            if e.op in ("<<", ">>"):
                return lt
            if e.op == "++":
                rt = self.type_of(e.right, scope)
                if isinstance(lt, ast.BitType) and isinstance(rt, ast.BitType):
                    return ast.BitType(ast.Binary("+", lt.width, rt.width, loc=e.loc),
                                       lt.signed, loc=e.loc)
                return None
            return lt or self.type_of(e.right, scope)
        if isinstance(e, ast.Ternary):
            return self.type_of(e.then, scope) or self.type_of(e.other, scope)
        return None


def side_effect_ordering(prog: ast.Program) -> ast.Program:
    return SideEffectOrdering(prog).run()
