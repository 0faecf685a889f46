"""InlineParsers: sub-parsers instantiated in a parser and applied from one of its states.

Mirrors the parser half of p4c's ``Inline`` pass (``GeneralInliner``, frontends/p4/inlining.cpp):
BMv2 has one parser per pipeline, so a ``SubP(...) sp;`` local of a parser and each
``sp.apply(args);`` statement in its states are replaced by the callee's states, as p4c does:

- the callee's locals are copied into the caller under fresh names (``sp_x``), with
  ``@name("sp.x")`` on the instances among them; its constructor parameters become the
  instantiation's arguments;
- every directional apply parameter becomes a local of the caller, one per instance
  (copy-in/copy-out):
  ``in``/``inout`` arguments are copied into it where the call was, the headers inside an
  ``out`` one are made invalid there, and ``out``/``inout`` results are copied back once the
  sub-parser accepts (a sub-parser that rejects ends the whole parse, with no copy-out);
  a directionless argument (``packet_in``) is used in place;
- the state containing the call is split: the statements before the call and the copy-in end
  with ``transition <Callee>_start``; the callee's states follow, renamed ``<Callee>_<state>``;
  their ``accept`` becomes a new state (``<state>_0``) holding the copy-out, the statements after
  the call and the original transition; ``reject`` stays ``reject``.

It runs after :mod:`~.desugar`, whose name resolution makes every reference in the
callee mean the same thing in the caller and which has already removed ``if`` from parser
states, so a call always sits at the top level of a state. Parsers are processed in source
order, so a callee has had its own sub-parsers inlined before it is copied.
"""

from __future__ import annotations

import copy
from typing import Any

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.frontend.desugar import (
    bind_args,
    declared_names,
    flatten_blocks,
    instance_locals,
    lift_decls,
    substitute,
)
from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import Names, header_resets, type_decls, walk


class InlineParsers:
    def __init__(self, prog: ast.Program) -> None:
        self.prog = prog
        self.names = Names(prog)
        self.types = type_decls(prog)
        self.parsers: dict[str, ast.ParserDecl] = {}
        self.param_vars: dict[tuple[str, str, str], str] = {}

    def run(self) -> ast.Program:
        for d in self.prog.decls:
            if isinstance(d, ast.ParserDecl):
                self.parser(d)
                self.parsers[d.name] = d
        return self.prog

    def callee(self, x: Any) -> ast.ParserDecl | None:
        if not (isinstance(x, ast.InstantiationDecl) and isinstance(x.type, ast.TypeName)):
            return None
        return self.parsers.get(x.type.name.lstrip("."))

    def parser(self, d: ast.ParserDecl) -> None:
        instances = {x.name: (x, p) for x in d.locals if (p := self.callee(x)) is not None}
        if not instances:
            return
        names = [x.name for x in d.locals]
        for n, (x, _) in instances.items():
            if names.count(n) > 1:
                raise CompileError(x.loc, f"{n}: Duplicates declaration {n}")
        locals_: list[Any] = []
        copies: dict[str, tuple[ast.ParserDecl, dict[str, ast.Expr | str]]] = {}
        for x in d.locals:
            if x.name not in instances:
                locals_.append(x)
                continue
            inst, callee = instances[x.name]
            mapping, copied = instance_locals(self.names, inst, callee)
            locals_.extend(copied)
            copies[x.name] = (callee, mapping)
        d.locals = locals_
        states: list[ast.ParserState] = []
        for st in d.states:
            states.extend(self.state(d, st, copies))
        d.states = states
        for n in walk(d):
            if isinstance(n, ast.PathExpr) and n.name in copies:
                raise CompileError(n.loc, f"{n.name}: a parser instance can only be applied, as "
                                   f"a statement of a parser state: {n.name}.apply(...);")

    @staticmethod
    def apply_target(s: Any, copies: dict[str, Any]) -> str | None:
        if isinstance(s, ast.CallStmt):
            t = s.call.target
            if isinstance(t, ast.Member) and t.name == "apply" and isinstance(
                    t.expr, ast.PathExpr) and t.expr.name in copies:
                return t.expr.name
        return None

    def state(self, d: ast.ParserDecl, st: ast.ParserState,
              copies: dict[str, tuple[ast.ParserDecl, dict[str, ast.Expr | str]]]
              ) -> list[ast.ParserState]:
        stmts = flatten_blocks(st.stmts)
        if not any(self.apply_target(s, copies) is not None for s in stmts):
            for s in stmts:
                for n in walk(s):
                    if self.apply_target(n, copies) is not None:
                        raise CompileError(n.loc, "a sub-parser can only be applied as a "
                                           "statement of a parser state")
            return [st]
        stmts, transition = self.lift_state_locals(d, st, stmts)
        out: list[ast.ParserState] = []
        cur = ast.ParserState(st.name, [], None, loc=st.loc, annotations=st.annotations)
        for s in stmts:
            inst = self.apply_target(s, copies)
            if inst is None:
                cur.stmts.append(s)
                continue
            callee, mapping = copies[inst]
            nxt = self.names.fresh(st.name)
            before, after, pmap = self.bind(d, s, inst, callee)
            cur.stmts.extend(before)
            renamed, start = self.callee_states(callee, {**mapping, **pmap}, nxt, s.loc)
            cur.transition = ast.Transition(start, loc=s.loc)
            out.append(cur)
            out.extend(renamed)
            cur = ast.ParserState(nxt, list(after), None, loc=s.loc)
        cur.transition = transition
        out.append(cur)
        return out

    def lift_state_locals(self, d: ast.ParserDecl, st: ast.ParserState, stmts: list[Any]
                          ) -> tuple[list[Any], ast.Transition | None]:
        """The state is about to be split: its variables and constants must outlive the split,
        so they become parser locals, under fresh names (another state may declare the same
        name); an initializer stays where it was, as an assignment."""
        mapping: dict[str, ast.Expr | str] = {
            x.name: self.names.fresh(x.name) for x in stmts
            if isinstance(x, (ast.VarDecl, ast.ConstDecl))}
        if not mapping:
            return stmts, st.transition
        stmts = [substitute(x, mapping) for x in stmts]
        tr = substitute(st.transition, mapping) if st.transition is not None else None
        return lift_decls(d, stmts, keep_annotations=True), tr

    def bind(self, d: ast.ParserDecl, s: ast.CallStmt, inst: str, callee: ast.ParserDecl
             ) -> tuple[list[Any], list[Any], dict[str, ast.Expr | str]]:
        """(copy-in statements, copy-out statements, parameter mapping) for one call."""
        what = f"{inst}.apply"
        args = bind_args(s.call, callee.params, s.call.args, what)
        before: list[Any] = []
        after: list[Any] = []
        pmap: dict[str, ast.Expr | str] = {}
        for p, a in zip(callee.params, args, strict=True):
            if a is None and p.default is None:
                raise CompileError(s.loc, f"{what}: Expected {len(callee.params)} arguments, "
                                   f"got {len(s.call.args)}")
            if p.direction is None:
                if a is None:
                    raise CompileError(s.loc, f"{what}: no argument for parameter {p.name}")
                pmap[p.name] = a
                continue
            # one variable per instance and parameter, shared by all its calls (p4c declares
            # them with the instance): an out value the callee leaves unwritten is the last one
            tmp = self.param_vars.get((d.name, inst, p.name))
            if tmp is None:
                tmp = self.names.fresh(p.name)
                self.param_vars[(d.name, inst, p.name)] = tmp
                d.locals.append(ast.VarDecl(tmp, copy.deepcopy(p.type), None, loc=s.loc))
            pmap[p.name] = tmp
            if a is None or isinstance(a, ast.DontCare):
                continue
            ref = ast.PathExpr(tmp, loc=a.loc)
            if p.direction in ("in", "inout"):
                before.append(ast.AssignStmt(ref, copy.deepcopy(a), loc=a.loc))
            else:
                before.extend(header_resets(ref, p.type, self.types))
            if p.direction in ("out", "inout"):
                after.append(ast.AssignStmt(copy.deepcopy(a), copy.deepcopy(ref), loc=a.loc))
        return before, after, pmap

    def callee_states(self, callee: ast.ParserDecl, mapping: dict[str, ast.Expr | str],
                      accept: str, loc: ast.Loc) -> tuple[list[ast.ParserState], str]:
        """The callee's states, renamed and with names bound; and the name of its start."""
        states = copy.deepcopy(callee.states)
        mapping = dict(mapping)
        for n in declared_names(ast.BlockStmt([s for st in states for s in st.stmts])):
            if n not in mapping:
                mapping[n] = self.names.fresh(n)
        smap = {"accept": accept, "reject": "reject"}
        for st in states:
            smap[st.name] = self.names.fresh(f"{callee.name}_{st.name}")
        for st in states:
            st.name = smap[st.name]
            st.stmts = [substitute(s, mapping) for s in st.stmts]
            tr = st.transition
            if tr is None:
                continue
            tr = substitute(tr, mapping)
            if tr.next_state is not None:
                tr.next_state = smap.get(tr.next_state, tr.next_state)
            for c in tr.cases:
                c.state = smap.get(c.state, c.state)
            st.transition = tr
        if "start" not in smap:
            raise CompileError(loc, f"{callee.name}: parser has no start state")
        return states, smap["start"]


def inline_parsers(prog: ast.Program) -> ast.Program:
    return InlineParsers(prog).run()
