"""InlineActions: action calls inside action bodies, and direct action calls in a control's
``apply`` block that one BMv2 table invocation cannot express.

Mirrors p4c's InlineActions (frontends/p4/actionsInlining.cpp), which replaces every call of an
action inside another action by the callee's body, and, for the direct calls in ``apply``, the
copy-in/copy-out that p4c's RemoveActionParameters (frontends/p4/removeParameters.cpp) gives a
directly called action by turning its parameters into variables assigned before the body and
copied back after it. Both follow the P4_16 spec's calling convention, built by
:func:`softnic.frontend.desugar.bind_params`:

- the arguments are evaluated once, left to right; ``in``, ``inout`` and directionless ones are
  copied into fresh variables at the call, the body runs on those, and ``inout``/``out`` ones are
  copied back at its end, left to right (also before an ``exit`` in the body), so a copy-out
  wins over a direct write of the same location by the body; ``out`` ones start uninitialised,
  their headers invalid;
- where a copy provably changes nothing (a literal, a location the body neither writes nor, for
  ``inout``/``out``, touches, and that no other ``out``/``inout`` argument shares) the argument
  is used in place, so the JSON of programs that never needed the copies stays as it was.

A direct call in ``apply`` whose parameters are all directionless and whose arguments are all
compile-time constants stays a call: the lowering gives it a hidden ``tbl_<action>`` whose
const default action is the action with that action data, as p4c-bm2-ss does. Any other
direct call (run-time action data, ``in``/``out``/``inout`` parameters) is replaced by the
bound body, which the lowering then places in a synthesized action like the statements around
it. The action declaration itself stays, for the tables that list it.

Runs after :mod:`softnic.frontend.desugar`: functions, sub-controls and ``return`` in actions
are gone by then, and name resolution has made every reference mean the same thing wherever
the body lands. Actions are processed in source order, so a callee's own calls are already
inlined when it is copied.
"""

from __future__ import annotations

import copy
from typing import Any

from softnic.frontend import ast
from softnic.frontend.desugar import (
    InlinedApply,
    Names,
    bind_args,
    bind_params,
    copy_out_before_exits,
    declared_names,
    substitute,
    type_decl,
    type_decls,
    unsized_literal,
    walk,
)
from softnic.frontend.errors import CompileError


class InlineActions:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.names = Names(prog)
        self.types = type_decls(prog)
        self.top: dict[str, ast.ActionDecl] = {}
        # names that always denote a compile-time constant (declared as one and never as
        # anything else) and the types whose members are constants
        consts: set[str] = set()
        other: set[str] = set()
        for n in walk(prog):
            if isinstance(n, ast.ConstDecl):
                consts.add(n.name)
            elif isinstance(n, (ast.VarDecl, ast.Param, ast.InstantiationDecl)):
                other.add(n.name)
        self.consts = consts - other
        self.enums = {d.name for d in prog.decls
                      if isinstance(d, (ast.EnumDecl, ast.ErrorDecl))} | {"error"}

        # actions whose directional parameters a table's actions list binds -> that table
        self.bound: dict[int, ast.TableDecl] = {}
        # the declared type of each name in scope where the walk is (top-level constants,
        # then the control's parameters and locals, the action's parameters, block locals)
        self.top_env: dict[str, ast.Type] = {
            d.name: d.type for d in prog.decls if isinstance(d, ast.ConstDecl)}
        self.int_consts = {d.name: d.value.value for d in prog.decls
                           if isinstance(d, ast.ConstDecl) and isinstance(d.value, ast.IntLiteral)
                           and d.name in self.consts}
        self.env: dict[str, ast.Type] = dict(self.top_env)
        # copy-outs of the inlined control applies around the statement being walked,
        # innermost last: an ``exit`` in an action inlined there performs them too
        self.enclosing: list[list[Any]] = []

    def run(self) -> ast.Program:
        for d in self.prog.decls:
            if isinstance(d, ast.ActionDecl):
                self.action(d, {})
                self.top[d.name] = d
            elif isinstance(d, ast.ControlDecl):
                self.control(d)
        return self.prog

    # ------------------------------------------------------------------ declarations

    def control(self, d: ast.ControlDecl) -> None:
        local: dict[str, ast.ActionDecl | None] = {p.name: None for p in d.params}
        self.env = {**self.top_env, **{p.name: p.type for p in d.params + d.ctor_params},
                    **{x.name: x.type for x in d.locals
                       if isinstance(x, (ast.VarDecl, ast.ConstDecl))}}
        for x in d.locals:
            if isinstance(x, ast.ActionDecl):
                self.action(x, local)
                local[x.name] = x
            else:
                local[x.name] = None  # a local of another kind hides a top-level action
        d.apply.stmts = self.stmts(d.apply.stmts, local, None)
        for x in list(d.locals):
            if isinstance(x, ast.TableDecl):
                self.table_bindings(d, x, local)

    def action(self, d: ast.ActionDecl, local: dict[str, ast.ActionDecl | None]) -> None:
        outer = self.env
        self.env = {**outer, **{p.name: p.type for p in d.params}}
        try:
            d.body.stmts = self.stmts(d.body.stmts, local, d)
        finally:
            self.env = outer

    def lookup(self, target: Any, local: dict[str, ast.ActionDecl | None]
               ) -> ast.ActionDecl | None:
        """The action a call target names, or None."""
        if not isinstance(target, ast.PathExpr):
            return None
        n = target.name
        if n.startswith("."):
            return self.top.get(n[1:])
        if n in local:
            return local[n]
        return self.top.get(n)

    # ------------------------------------------------------------------ tables

    def table_bindings(self, d: ast.ControlDecl, t: ast.TableDecl,
                       local: dict[str, ast.ActionDecl | None]) -> None:
        """``actions = { a(hdr.x); }`` binds ``a``'s directional parameters: like p4c's
        RemoveActionParameters, the action keeps only its directionless parameters (the
        action data), and its body copies the bound arguments in at its start and the
        ``inout``/``out`` ones back at its end (and before an ``exit``). A top-level action is
        first copied into the control, keeping its control-plane name. The references to it in
        the table's ``default_action`` and ``entries`` drop the bound arguments."""
        props = {p.name: p for p in t.properties}
        refs = props["actions"].actions if "actions" in props else []
        for r in refs:
            a = self.lookup(ast.PathExpr(r.name, loc=r.loc), local)
            if a is None:
                continue
            if id(a) in self.bound and self.bound[id(a)] is not t:
                # p4c gives each table its own copy of the action; the JSON would then hold
                # two actions of one name, which the lowering cannot tell apart
                raise CompileError(r.loc, f"{r.name}: an action whose directional parameters "
                                   "are bound in more than one table is unsupported on this "
                                   "target")
            directional = [p for p in a.params if p.direction is not None]
            if not directional or len(r.args) != len(directional):
                continue  # no binding here, or a count the checker reports
            self.bound[id(a)] = t
            unproven = self.unproven(directional, bind_args(r, directional, r.args, r.name))
            if a.name not in local:  # top-level: a copy of it in this control
                a = self.localize(d, t, a)
                old_name, r.name = r.name, a.name
                self.rename_refs(t, old_name, a.name)
                local[a.name] = a
            self.bound[id(a)] = t
            args = bind_args(r, directional, r.args, r.name)
            pmap, before, after = bind_params(self.names, r, directional, args, r.name,
                                              body=a.body, types=self.types,
                                              unproven=unproven, written=r.args)
            body = substitute(a.body, pmap)
            stmts = copy_out_before_exits(list(body.stmts), after) if after else body.stmts
            a.body = ast.BlockStmt(before + stmts + after, loc=a.body.loc)
            a.params = [p for p in a.params if p.direction is None]
            r.args = []
            self.drop_bound_args(t, r.name, directional)

    def localize(self, d: ast.ControlDecl, t: ast.TableDecl, a: ast.ActionDecl
                 ) -> ast.ActionDecl:
        """A copy of top-level action ``a`` declared in ``d`` right before ``t``, with the
        same control-plane name (p4c's LocalizeActions)."""
        c = copy.deepcopy(a)
        c.name = self.names.fresh(a.name)
        old = next((x for x in a.annotations if x.name == "name"), None)
        full = a.name
        if old is not None:
            raw = old.raw.strip()
            full = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
        full = "." + full.lstrip(".")
        c.annotations = [x for x in a.annotations if x.name != "name"] + [ast.Annotation(
            "name", f'"{full}"', [ast.StringLiteral(full, loc=a.loc)], loc=a.loc)]
        d.locals.insert(d.locals.index(t), c)
        return c

    @staticmethod
    def rename_refs(t: ast.TableDecl, old: str, new: str) -> None:
        """Point ``default_action`` and ``entries`` of ``t`` that name ``old`` at ``new``."""
        for call in table_calls(t):
            if isinstance(call.target, ast.PathExpr) and call.target.name == old:
                call.target.name = new
        for p in t.properties:
            if p.name == "default_action" and isinstance(p.value, ast.PathExpr) and (
                    p.value.name == old):
                p.value.name = new

    @staticmethod
    def drop_bound_args(t: ast.TableDecl, name: str, directional: list[ast.Param]) -> None:
        """The calls of ``name`` in ``t``'s ``default_action`` and ``entries`` without the
        arguments of the parameters the actions list binds (p4c's bindDefaultAction)."""
        bound = {p.name for p in directional}
        for call in table_calls(t):
            if not (isinstance(call.target, ast.PathExpr) and call.target.name == name):
                continue
            if any(a.name is not None for a in call.args):
                call.args = [a for a in call.args if a.name not in bound]
            else:
                call.args = call.args[len(directional):]

    # ------------------------------------------------------------------ statements

    def stmts(self, ss: list[Any], local: dict[str, ast.ActionDecl | None],
              caller: ast.ActionDecl | None) -> list[Any]:
        out: list[Any] = []
        outer = self.env
        self.env = dict(outer)
        try:
            for s in ss:
                out.extend(self.stmt(s, local, caller))
                if isinstance(s, (ast.VarDecl, ast.ConstDecl)):
                    self.env[s.name] = s.type
        finally:
            self.env = outer
        return out

    def stmt(self, s: Any, local: dict[str, ast.ActionDecl | None],
             caller: ast.ActionDecl | None) -> list[Any]:
        """``s`` with the action calls in it inlined; ``caller`` is the action whose body it is
        (None in ``apply``)."""
        if isinstance(s, ast.CallStmt):
            callee = self.lookup(s.call.target, local)
            if callee is not None:
                return self.call(s, callee, caller)
        elif isinstance(s, InlinedApply):  # keep the node: its kind matters to the lowering
            self.enclosing.append(s.copy_outs)
            try:
                s.stmts = self.stmts(s.stmts, local, caller)
            finally:
                self.enclosing.pop()
        elif isinstance(s, ast.BlockStmt):
            s.stmts = self.stmts(s.stmts, local, caller)
        elif isinstance(s, ast.IfStmt):
            s.then = self.one(self.stmt(s.then, local, caller), s.then)
            if s.other is not None:
                s.other = self.one(self.stmt(s.other, local, caller), s.other)
        elif isinstance(s, ast.SwitchStmt):
            for c in s.cases:
                if c.body is not None:
                    c.body.stmts = self.stmts(c.body.stmts, local, caller)
        return [s]

    @staticmethod
    def one(ss: list[Any], orig: Any) -> Any:
        if len(ss) == 1:
            return ss[0]
        return ast.BlockStmt(ss, loc=orig.loc)

    def call(self, s: ast.CallStmt, callee: ast.ActionDecl, caller: ast.ActionDecl | None
             ) -> list[Any]:
        args = bind_args(s.call, callee.params, s.call.args, callee.name)
        exits = any(isinstance(n, ast.ExitStmt) for n in walk(callee.body))
        if caller is None and all(p.direction is None for p in callee.params) and all(
                a is not None and self.constant(a) for a in args) and not (
                exits and any(self.enclosing)):
            # a hidden table runs it with this action data (unless it exits where copy-outs
            # of an inlined control must run first)
            return [s]
        if caller is not None:
            self.unshadow(caller, callee)
        pmap, before, after = bind_params(self.names, s.call, callee.params, args,
                                          callee.name, body=callee.body, types=self.types,
                                          unproven=self.unproven(callee.params, args),
                                          written=s.call.args)
        body = copy.deepcopy(callee.body)
        mapping: dict[str, ast.Expr | str] = dict(pmap)
        for n in declared_names(body):
            mapping[n] = self.names.fresh(n)
        body = substitute(body, mapping)
        stmts = list(body.stmts)
        for outs in [after] + (self.enclosing[::-1] if caller is None else []):
            if outs:
                stmts = copy_out_before_exits(stmts, outs)
        return before + stmts + after

    # ------------------------------------------------------------------ types

    def unproven(self, params: list[ast.Param], args: list[ast.Expr | None]) -> set[str]:
        """The parameters whose argument is not certainly of the parameter's type. The checker
        never sees an inlined call, so these get a copy that it checks (``T p = arg;``,
        ``arg = p;``), and a mistyped call is refused as p4c refuses it."""
        out = set()
        for p, a in zip(params, args, strict=True):
            if a is None or isinstance(a, ast.DontCare) or unsized_literal(a):
                continue
            if not same_type(self.type_of(a), p.type, self.types, self.int_consts):
                out.add(p.name)
        return out

    def type_of(self, e: Any) -> Any:
        """The declared type of a location or typed literal, None when not obvious."""
        if isinstance(e, ast.PathExpr):
            return self.env.get(e.name, self.top_env.get(e.name.lstrip(".")))
        if isinstance(e, ast.IntLiteral) and e.width is not None:
            return ast.BitType(ast.IntLiteral(e.width, loc=e.loc), e.signed, loc=e.loc)
        if isinstance(e, ast.BoolLiteral):
            return ast.BoolType(loc=e.loc)
        if isinstance(e, ast.Cast):
            return e.type
        if isinstance(e, ast.Slice):
            base = type_decl(self.type_of(e.expr), self.types)
            hi, lo = e.hi, e.lo
            if isinstance(base, ast.BitType) and isinstance(hi, ast.IntLiteral) and isinstance(
                    lo, ast.IntLiteral):
                return ast.BitType(ast.IntLiteral(hi.value - lo.value + 1, loc=e.loc),
                                   loc=e.loc)
            return None
        if isinstance(e, ast.Member):
            if isinstance(e.expr, ast.PathExpr) and e.expr.name not in self.env:
                n = e.expr.name.lstrip(".")
                if n == "error":
                    return ast.ErrorType(loc=e.loc)
                if n in self.enums:
                    return ast.TypeName(n, loc=e.loc)
            d = type_decl(self.type_of(e.expr), self.types)
            if isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl)):
                return next((f.type for f in d.fields if f.name == e.name), None)
            if isinstance(d, ast.StackType) and e.name in ("next", "last"):
                return d.elem
            return None
        if isinstance(e, ast.Index):
            d = type_decl(self.type_of(e.expr), self.types)
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
        if isinstance(e, (ast.Unary, ast.Binary, ast.Ternary)):
            return all(self.constant(c) for c in walk_exprs(e))
        return False

    def unshadow(self, caller: ast.ActionDecl, callee: ast.ActionDecl) -> None:
        """Rename the caller's parameters that would capture a name the callee's body uses
        from the enclosing control (the parameter keeps its control-plane name, as with p4c's
        UniqueParameters)."""
        own = {p.name for p in callee.params} | set(declared_names(callee.body))
        free = {n.name for n in walk(callee.body)
                if isinstance(n, ast.PathExpr) and n.name not in own}
        renames: dict[str, ast.Expr | str] = {}
        for p in caller.params:
            if p.name not in free:
                continue
            if not any(a.name == "name" for a in p.annotations):
                p.annotations.append(ast.Annotation(
                    "name", f'"{p.name}"', [ast.StringLiteral(p.name, loc=p.loc)], loc=p.loc))
            new = self.names.fresh(p.name)
            renames[p.name] = new
            p.name = new
        if renames:
            caller.body = substitute(caller.body, renames)
            for n in walk(self.prog):
                if isinstance(n, ast.Call) and isinstance(n.target, ast.PathExpr):
                    hit, args = n.target.name.lstrip(".") == caller.name, n.args
                elif isinstance(n, ast.ActionRef):
                    hit, args = n.name.lstrip(".") == caller.name, n.args
                else:
                    continue
                for a in args if hit else []:
                    if a.name in renames:
                        a.name = str(renames[a.name])


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


def table_calls(t: ast.TableDecl) -> list[ast.Call]:
    """The action calls in a table's ``default_action`` and ``entries``."""
    out: list[ast.Call] = []
    for p in t.properties:
        if p.name == "default_action" and isinstance(p.value, ast.Call):
            out.append(p.value)
        elif p.name == "entries":
            out.extend(e.action for e in p.entries)
    return out


def walk_exprs(e: Any) -> list[Any]:
    """The direct operands of an expression."""
    if isinstance(e, ast.Unary):
        return [e.expr]
    if isinstance(e, ast.Binary):
        return [e.left, e.right]
    if isinstance(e, ast.Ternary):
        return [e.cond, e.then, e.other]
    return []


def inline_actions(prog: ast.Program) -> ast.Program:
    return InlineActions(prog).run()
