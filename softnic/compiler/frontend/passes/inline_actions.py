"""InlineActions: action calls inside action bodies (front end); and the machinery the mid-end
pass :mod:`softnic.compiler.midend.remove_action_parameters` shares with it.

:func:`inline_actions` mirrors p4c's front-end InlineActions (frontends/p4/actionsInlining.cpp,
run by frontends/p4/frontend.cpp before the P4Info is serialized), which replaces every call of
an action inside another action by the callee's body: it rewrites action bodies only. A callee
no longer called stays declared; the P4Info leaves it out unless a table or a direct call in
``apply`` references it (p4c's RemoveAllUnusedDeclarations drops it from the front end's
program).

The other half, run in the mid end by ``remove_action_parameters``, mirrors p4c's
RemoveActionParameters (frontends/p4/removeParameters.cpp, run by BMv2's
backends/bmv2/simple_switch/midend.cpp) for the direct calls in ``apply`` and the tables'
actions lists: it gives a directly called action the copy-in/copy-out of its parameters as
variables assigned before the body and copied back after it, the body inlined where the call
was. Both follow the P4_16 spec's calling convention, built by
:func:`softnic.compiler.frontend.desugar.bind_params`:

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
direct call (run-time action data, ``in``/``out``/``inout`` parameters, or an ``exit`` inside
an inlined control whose copy-outs must run first) is replaced by the bound body, which the
lowering then places in a synthesized action like the statements around it. The action
declaration itself stays, for the tables that list it.

A table's actions list that binds directional parameters (``actions = { a(hdr.x); }``) is
RemoveActionParameters proper: the action loses those parameters, keeping its action data,
and its body copies the bound arguments in and out (a top-level action is first copied into
the control under its control-plane name, p4c's LocalizeActions; a local action that several
tables bind gets one copy per further table, named alike, p4c's DuplicateActions). An
argument whose type is not certainly the parameter's always goes through a copy, whose
declaration the checker checks: the inlined call itself is gone by then.

Runs after :mod:`..desugar`: functions, sub-controls and ``return`` in actions
are gone by then, and name resolution has made every reference mean the same thing wherever
the body lands. Actions are processed in source order, so a callee's own calls are already
inlined when it is copied.
"""

from __future__ import annotations

import copy
from typing import Any

from softnic.compiler.frontend.desugar import (
    ArgTypes,
    InlinedApply,
    Names,
    bind_args,
    bind_params,
    copy_out_before_exits,
    declared_names,
    substitute,
    walk,
)
from softnic.compiler.ir import ast


class InlineActions:
    """``bodies``: inline the action calls in action bodies (the front-end pass);
    ``applies``: the direct calls in ``apply`` blocks and the tables' parameter bindings (the
    mid-end RemoveActionParameters). The mid-end run finds no call left in an action body."""

    def __init__(self, prog: ast.Program, *, bodies: bool = True, applies: bool = True
                 ) -> None:
        self.prog = prog
        self.bodies = bodies
        self.applies = applies
        self.names = Names(prog)
        self.argtypes = ArgTypes(prog)
        self.types = self.argtypes.types
        self.top: dict[str, ast.ActionDecl] = {}
        # actions whose directional parameters a table's actions list binds -> that table
        self.bound: dict[int, ast.TableDecl] = {}
        # such an action as it was before the binding, for the copies other tables get
        self.pristine: dict[int, ast.ActionDecl] = {}
        # a local action -> it and its copies, in declaration order
        self.copies: dict[int, list[ast.ActionDecl]] = {}
        self.localized: set[int] = set()  # top-level actions copied into a control
        # the declared type of each name in scope where the walk is (top-level constants,
        # then the control's parameters and locals, the action's parameters, block locals)
        self.top_env = self.argtypes.top_env
        self.env: dict[str, ast.Type] = dict(self.top_env)
        # copy-outs of the inlined control applies around the statement being walked,
        # innermost last: an ``exit`` in an action inlined there performs them too
        self.enclosing: list[list[Any]] = []

    def run(self) -> ast.Program:
        for d in self.prog.decls:
            if isinstance(d, ast.ActionDecl):
                if self.bodies:
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
                if self.bodies:
                    self.action(x, local)
                local[x.name] = x
            else:
                local[x.name] = None  # a local of another kind hides a top-level action
        if not self.applies:
            return
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
            # an action another table bound has lost its directional parameters: its copy
            # for this table starts from the action as declared
            directional = [p for p in self.pristine.get(id(a), a).params
                           if p.direction is not None]
            if not directional or len(r.args) != len(directional):
                continue  # no binding here, or a count the checker reports
            unproven = self.unproven(directional, bind_args(r, directional, r.args, r.name))
            if a.name not in local or id(a) in self.bound:
                # a top-level action gets a copy in this control (p4c's LocalizeActions); a
                # local one that another table already binds gets a copy for this table
                # (p4c's DuplicateActions): both keep the action's control-plane name
                old_name = r.name
                if a.name not in local:
                    a = self.localize(d, t, a)
                else:
                    a = self.duplicate(d, a)
                r.name = a.name
                self.rename_refs(t, old_name, a.name)
                self.rename_labels(d, t, old_name, a.name)
                local[a.name] = a
            else:
                self.pristine[id(a)] = copy.deepcopy(a)
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

    def duplicate(self, d: ast.ControlDecl, a: ast.ActionDecl) -> ast.ActionDecl:
        """A copy of local action ``a`` as it was before a table bound its parameters,
        declared in ``d`` right after ``a`` (after its earlier copies), with ``a``'s
        control-plane name (p4c's FindRepeatedActionUses/DuplicateActions: each table gets
        its own copy, all named alike in the P4Info and the BMv2 JSON)."""
        c = self.fresh_locals(copy.deepcopy(self.pristine[id(a)]))
        c.name = self.names.fresh(a.name)
        if not any(x.name == "name" for x in c.annotations):
            c.annotations = c.annotations + [ast.Annotation(
                "name", f'"{a.name}"', [ast.StringLiteral(a.name, loc=a.loc)], loc=a.loc)]
        copies = self.copies.setdefault(id(a), [a])
        d.locals.insert(d.locals.index(copies[-1]) + 1, c)
        copies.append(c)
        return c

    def fresh_locals(self, a: ast.ActionDecl) -> ast.ActionDecl:
        """``a`` with the variables its body declares renamed, so that no two copies of one
        action declare the same name."""
        mapping: dict[str, ast.Expr | str] = {n: self.names.fresh(n)
                                              for n in declared_names(a.body)}
        a.body = substitute(a.body, mapping)
        return a

    @staticmethod
    def rename_labels(d: ast.ControlDecl, t: ast.TableDecl, old: str, new: str) -> None:
        """Point the labels ``old`` of ``switch (t.apply().action_run)`` in ``d`` at ``new``."""
        for n in walk(d.apply):
            if not isinstance(n, ast.SwitchStmt):
                continue
            e = n.expr
            if not (isinstance(e, ast.Member) and e.name == "action_run"
                    and isinstance(e.expr, ast.Call) and isinstance(e.expr.target, ast.Member)
                    and isinstance(e.expr.target.expr, ast.PathExpr)
                    and e.expr.target.expr.name == t.name):
                continue
            for c in n.cases:
                if isinstance(c.label, ast.PathExpr) and c.label.name == old:
                    c.label.name = new

    def localize(self, d: ast.ControlDecl, t: ast.TableDecl, a: ast.ActionDecl
                 ) -> ast.ActionDecl:
        """A copy of top-level action ``a`` declared in ``d`` right before ``t``, with the
        same control-plane name (p4c's LocalizeActions)."""
        c = copy.deepcopy(a)
        if id(a) in self.localized:  # a second copy declares its own variables
            self.fresh_locals(c)
        self.localized.add(id(a))
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
        """The parameters whose argument is not certainly of the parameter's type (see
        :class:`~softnic.compiler.frontend.desugar.ArgTypes`)."""
        return self.argtypes.unproven(params, args, self.env)

    def constant(self, e: Any) -> bool:
        return self.argtypes.constant(e)

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


def table_calls(t: ast.TableDecl) -> list[ast.Call]:
    """The action calls in a table's ``default_action`` and ``entries``."""
    out: list[ast.Call] = []
    for p in t.properties:
        if p.name == "default_action" and isinstance(p.value, ast.Call):
            out.append(p.value)
        elif p.name == "entries":
            out.extend(e.action for e in p.entries)
    return out


def inline_actions(prog: ast.Program) -> ast.Program:
    """p4c's front-end InlineActions: every action call in an action body inlined."""
    return InlineActions(prog, bodies=True, applies=False).run()
