"""Compile a control's node graph into one Python function (the untraced fast path).

The loader builds a control as a graph of nodes (tables, conditions, action calls), and the
traced path walks it node by node. Walking costs two calls per node, which dominates programs
whose ``apply`` blocks are mostly ``if`` statements around small actions (p4c and softnic's
front end turn each such statement into a keyless table). Here the graph is turned back into
structured code: an ``if``/``else`` per condition whose branches end where they join again
(the condition's immediate post-dominator), a direct call per fixed action, and a call plus a
dispatch on the returned node per table. Each node is emitted once in a structured graph; a
graph whose regions overlap (possible only in hand-made JSON) could duplicate code, so the
source is capped and such a graph keeps the node walk.

Like the rest of the generated code, the source holds only identifiers made here and is checked
by :mod:`softnic.runtime.gen_check` before it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softnic.runtime.gen_check import check_source
from softnic.runtime.pipeline import ActionCallNode, CondNode, FixedActionNode, TableNode

MAX_LINES = 20000  # beyond this (overlapping regions duplicated), keep walking the graph
MAX_DEPTH = 60  # nested ``if`` levels; deeper graphs keep walking the graph too


class _TooBig(Exception):
    pass


def successors(n: Any) -> list[Any]:
    """Every node that can run after ``n`` (``None``: the end of the control)."""
    if isinstance(n, CondNode):
        out = [n.true_next, n.false_next]
    elif isinstance(n, FixedActionNode):
        out = [n.default.next]
    elif isinstance(n, ActionCallNode):
        out = [n.next]
    else:  # a table: see build._link_table
        out = [n.base_next]
        out += [n.hit_next] if n.has_hit else []
        out += [n.miss_next] if n.has_miss else []
        if not (n.has_hit and n.has_miss):  # some outcome goes where its action says
            out += n.next_by_action.values()
    seen: list[Any] = []
    for x in out:
        if not any(x is y for y in seen):
            seen.append(x)
    return seen


def _post_dominators(init: Any) -> dict[int, Any]:
    """Immediate post-dominator of every node reachable from ``init`` (the graph is acyclic;
    ``None``, the end, post-dominates everything)."""
    order: list[Any] = []  # post-order: successors before their predecessors
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(init, 0)]
    seen.add(id(init))
    while stack:
        node, i = stack.pop()
        succ = [s for s in successors(node) if s is not None]
        if i < len(succ):
            stack.append((node, i + 1))
            nxt = succ[i]
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append((nxt, 0))
        else:
            order.append(node)
    pdom: dict[int, frozenset[int]] = {}
    nodes: dict[int, Any] = {}
    for node in order:
        nodes[id(node)] = node
        sets = [pdom[id(s)] if s is not None else frozenset() for s in successors(node)]
        common = frozenset.intersection(*sets) if sets else frozenset()
        pdom[id(node)] = common | {id(node)}
    ipdom: dict[int, Any] = {}
    for node in order:
        others = pdom[id(node)] - {id(node)}
        # post-dominators form a chain: the nearest one has the most post-dominators itself
        best = max(others, key=lambda k: len(pdom[k]), default=None)
        ipdom[id(node)] = nodes[best] if best is not None else None
    return ipdom


class _Emitter:
    def __init__(self, init: Any, cond_exprs: dict[Any, str], taken: set[str],
                 actions: dict[Any, Any]) -> None:
        self.ipdom = _post_dominators(init)
        self.cond_exprs = cond_exprs
        self.actions = actions  # action function -> ActionInfo (its body, whether it can exit)
        self.taken: set[str] = set(taken)
        self.env: dict[str, Any] = {}
        self.names: dict[tuple[str, int], str] = {}
        self.lines = 0

    def name(self, kind: str, obj: Any) -> str:
        key = (kind, id(obj))
        nm = self.names.get(key)
        if nm is None:
            n = len(self.names)
            while f"_{kind}{n}" in self.taken:
                n += 1
            nm = self.names[key] = f"_{kind}{n}"
            self.taken.add(nm)
            self.env[nm] = obj
        return nm

    def block(self, node: Any, stop: Any, depth: int) -> list[str]:
        if depth > MAX_DEPTH:
            raise _TooBig
        out: list[str] = []
        while node is not None and node is not stop:
            join = self.ipdom[id(node)]
            self.lines += 2  # this node's own lines (nested blocks count their own)
            if isinstance(node, CondNode):
                expr = self.cond_exprs.get(node.fn)
                if expr is None:  # not a compiled condition (a test's): call it
                    expr = f"{self.name('cf', node.fn)}(F)"
                out.append(f"if {expr}:")
                out += self._indent(self.block(node.true_next, join, depth + 1))
                out.append("else:")
                out += self._indent(self.block(node.false_next, join, depth + 1))
            elif isinstance(node, FixedActionNode):
                body = self.action(node.default.fn, node.default.data)
                self.lines += len(body)
                out += body
            elif isinstance(node, ActionCallNode):
                body = self.action(node.fn, ())
                self.lines += len(body)
                out += body
            elif isinstance(node, TableNode):
                out.append(f"nx = {self.name('tb', node.apply)}(F, S)")
                if any(self.may_exit(a.fn) for a in node.table.actions.values()):
                    out.append("if S.exited: return")
                first = True
                for nxt in successors(node):
                    if nxt is join:
                        continue
                    out.append(f"{'if' if first else 'elif'} nx is {self.name('nd', nxt)}:")
                    out += self._indent(self.block(nxt, join, depth + 1))
                    first = False
            else:  # pragma: no cover - the builder makes only these node kinds
                raise TypeError(f"unknown control node {node!r}")
            if self.lines > MAX_LINES:
                raise _TooBig
            node = join
        return out

    def may_exit(self, fn: Any) -> bool:
        info = self.actions.get(fn)
        return info is None or info.can_exit

    def action(self, fn: Any, data: Any) -> list[str]:
        """A fixed action: its body written inline, or a call when its source is not known.
        An action that can ``exit`` runs to its end (BMv2 only marks the packet) and the
        control returns after it."""
        info = self.actions.get(fn)
        if info is None or not info.body:
            return [f"{self.name('af', fn)}(F, {self.name('ad', data)}, S)", "if S.exited: return"]
        pre = [f"D = {self.name('ad', data)}"] if any("D[" in ln for ln in info.body) else []
        post = ["if S.exited: return"] if info.can_exit else []
        return pre + info.body + post

    @staticmethod
    def _indent(lines: list[str]) -> list[str]:
        return ["    " + ln for ln in lines] if lines else ["    pass"]


def compile_graph(init: Any, label: str, comp: Any = None
                  ) -> Callable[[list[int], Any], None] | None:
    """One function running the control that starts at ``init``; ``None`` if the graph is
    empty or too irregular to structure (then the caller walks the nodes).

    With ``comp`` (the program's :class:`~softnic.runtime.codegen.Compiled`), conditions are
    written inline from their expressions and run in the program's namespace."""
    if init is None:
        return None
    base = comp.env if comp is not None else {}
    actions = {a.fn: a for a in comp.actions.values()} if comp is not None else {}
    em = _Emitter(init, comp.cond_exprs if comp is not None else {}, set(base), actions)
    try:
        body = em.block(init, None, 0)
    except _TooBig:
        return None
    src = "\n".join(["def _control(F, S):", *em._indent(body)]) + "\n"
    tree = check_source(src, set(base) | set(em.env) | {"_control"}, label)
    env = dict(base)
    env.update(em.env)
    exec(compile(tree, label, "exec"), env)  # noqa: S102
    return env["_control"]
