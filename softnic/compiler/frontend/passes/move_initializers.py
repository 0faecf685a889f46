"""MoveInitializers: the initializers of control- and parser-level variables run as statements.

Mirrors p4c's ``MoveInitializers`` (frontends/p4/moveDeclarations.cpp), which the front end runs
right before ``SideEffectOrdering``:

- a control's ``T x = e;`` declared outside ``apply`` becomes ``T x;`` and ``x = e;`` at the
  start of ``apply``, in declaration order;
- a parser's becomes ``x = e;`` in a new ``start`` state that goes on to the old one, renamed
  to a fresh ``start_N``. When no state goes back to ``start``, the two states are merged at
  once (what p4c's mid end SimplifyParsers does with a state that has one predecessor), so the
  assignments simply open ``start`` and the BMv2 parse states keep their names.

Running it before :mod:`~.side_effect_ordering` is what gives such an
initializer the P4_16 spec's left-to-right evaluation: in ``S tmp = { h.a, f(h.a) };`` the first
field reads ``h.a`` before ``f`` changes it, as in the same declaration inside ``apply``. A
function called by a parser-level initializer is then inlined like any call in a state.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import Names


def take_local_initializers(locals_: list[Any]) -> list[ast.AssignStmt]:
    """Strip the initializers off a block's local variables and return them as assignments,
    for the caller to run where the block starts (apply block, start state)."""
    inits = []
    for x in locals_:
        if isinstance(x, ast.VarDecl) and x.init is not None:
            inits.append(ast.AssignStmt(ast.PathExpr(x.name, loc=x.loc), x.init, loc=x.loc))
            x.init = None
    return inits


def move_initializers(prog: ast.Program) -> ast.Program:
    names: Names | None = None
    for d in prog.decls:
        if isinstance(d, ast.ControlDecl):
            inits = take_local_initializers(d.locals)
            if inits:
                d.apply = ast.BlockStmt(inits + list(d.apply.stmts), d.apply.annotations,
                                        loc=d.apply.loc)
        elif isinstance(d, ast.ParserDecl):
            start = next((s for s in d.states if s.name == "start"), None)
            if start is None or not any(isinstance(x, ast.VarDecl) and x.init is not None
                                        for x in d.locals):
                continue
            moved: list[Any] = list(take_local_initializers(d.locals))
            if not any(targets_start(s) for s in d.states):
                start.stmts = moved + list(start.stmts)
                continue
            names = names or Names(prog)
            old = names.fresh("start")
            for s in d.states:
                rename_start(s, old)
            start.name = old
            d.states.insert(d.states.index(start), ast.ParserState(
                "start", moved, ast.Transition(old, loc=start.loc), loc=start.loc))
    return prog


def targets_start(s: ast.ParserState) -> bool:
    t = s.transition
    if t is None:
        return False
    return t.next_state == "start" or any(c.state == "start" for c in t.cases)


def rename_start(s: ast.ParserState, new: str) -> None:
    t = s.transition
    if t is None:
        return
    if t.next_state == "start":
        t.next_state = new
    for c in t.cases:
        if c.state == "start":
            c.state = new
