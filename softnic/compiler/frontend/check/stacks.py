"""Where header-stack operations may appear, as p4c's TypeInference rules them.

The P4_16 spec (section "Operations on header stacks") and p4c agree:

- ``hs.next``, ``hs.last`` and ``hs.lastIndex`` may only be used in a parser (p4c:
  "'last', and 'next' for stacks can only be used in a parser", "'lastIndex' for stacks can
  only be used in a parser"; p4c 1.2.4 rejects them in controls, actions and functions alike);
- ``hs.push_front(n)`` / ``hs.pop_front(n)`` may not be used in a parser;
- ``hs.nextIndex`` is the spec's name for the stack's internal counter, not a member p4c
  knows: p4c answers "Cannot extract field nextIndex from hs which has type T[n]".

The expression checker types these members wherever they occur; this pass runs once the whole
program is typed and refuses the ones in the wrong place, with p4c's wording, so they never
reach the lowering (which would otherwise give BMv2 JSON p4c never emits).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.state import CheckerState
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr
from softnic.compiler.ir.types import StackT

PARSER_ONLY = {
    "next": "'last', and 'next' for stacks can only be used in a parser",
    "last": "'last', and 'next' for stacks can only be used in a parser",
    "lastIndex": "'lastIndex' for stacks can only be used in a parser",
}
NOT_IN_PARSER = ("push_front", "pop_front")


class StacksMixin(CheckerState):
    """Context rules of header-stack members (see the module docstring)."""

    def check_stack_contexts(self) -> None:
        for d in self.prog.decls:
            self._stack_walk(d, isinstance(d, ast.ParserDecl))

    def _stack_walk(self, node: Any, in_parser: bool) -> None:
        if isinstance(node, list):
            for x in node:
                self._stack_walk(x, in_parser)
            return
        if not isinstance(node, ast.Node) or isinstance(node, ast.Type):
            return
        if isinstance(node, ast.ParserDecl):
            in_parser = True
        elif isinstance(node, (ast.ControlDecl, ast.ActionDecl, ast.FunctionDecl)):
            in_parser = False
        if isinstance(node, ast.Member):
            self._stack_member(node, in_parser)
        for f in dataclasses.fields(node):
            if f.name != "loc":
                self._stack_walk(getattr(node, f.name), in_parser)

    def _stack_member(self, e: ast.Member, in_parser: bool) -> None:
        bt = self.types.get(id(e.expr))
        if not isinstance(bt, StackT):
            return
        if e.name == "nextIndex":
            raise error(e, f"Cannot extract field nextIndex from {show_expr(e.expr)} which has "
                        f"type {bt.show()}")
        if not in_parser and e.name in PARSER_ONLY:
            raise error(e, f"{show_expr(e)}: {PARSER_ONLY[e.name]}")
        if in_parser and e.name in NOT_IN_PARSER:
            raise error(e, f"{show_expr(e)}: 'push_front' and 'pop_front' for stacks cannot be "
                        "used in a parser")
