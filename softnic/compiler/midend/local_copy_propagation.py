"""LocalCopyPropagation (p4c midend/local_copyprop.cpp), the one effect of it that changes what
BMv2 does: a copy that is written straight back is no copy at all.

p4c's BMv2 mid end turns a directional argument of an action into a local copied in at the
start and back at the end (RemoveActionParameters; softnic's InlineActions does the same). When
the action never touches the parameter, what is left is::

    T tmp = E;      // copy-in
    E = tmp;        // copy-out

LocalCopyPropagation replaces ``tmp`` by ``E`` in the copy-out, drops the resulting ``E = E``
(a no-op assignment) and then the dead ``tmp``, and with it any temporary that only ``E`` read
(e.g. a run-time stack index evaluated once). So BMv2 never evaluates ``E``: a run-time header
stack index out of range there does not abort it (p4c's gauntlet_index_5-bmv2: an unused
``inout`` parameter bound to ``h.h[h.eth_hdr.dst_addr].a``; the STF expects every packet back).

This pass removes exactly such pairs in control ``apply`` blocks and action bodies: the
declaration ``T tmp = E`` (``E`` a left-value without calls), then ``E = tmp`` with nothing in
between that reads ``tmp`` or writes a variable ``E`` reads, and ``tmp`` used nowhere else.
A temporary that only the removed copy read, declared with a call-free initializer and now
unused, is removed as well, and so is an unused local initialized from a run-time stack element
(the copy-in of an ``in`` argument the action never reads). Nothing else of p4c's copy
propagation is mirrored (its other rewrites do not change packets).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from typing import Any

from softnic.compiler.ir import ast
from softnic.compiler.ir.ast_util import lvalue_root, walk


def same_expr(a: Any, b: Any) -> bool:
    """Structural equality of two expressions, ignoring source locations."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b, strict=True))
    if not isinstance(a, ast.Node):
        return bool(a == b)
    return all(same_expr(getattr(a, f.name), getattr(b, f.name))
               for f in fields(a) if f.name != "loc")


def _is_lvalue(e: Any) -> bool:
    while isinstance(e, (ast.Member, ast.Index, ast.Slice)):
        if isinstance(e, ast.Index) and not _call_free(e.index):
            return False
        e = e.expr
    return isinstance(e, ast.PathExpr)


def _call_free(e: Any) -> bool:
    return not any(isinstance(n, ast.Call) for n in walk(e))


def _runtime_index(e: Any) -> bool:
    return any(isinstance(n, ast.Index) and not isinstance(n.index, ast.IntLiteral)
               for n in walk(e))


def _names(e: Any) -> set[str]:
    return {n.name for n in walk(e) if isinstance(n, ast.PathExpr)}


def _harmless(s: Any, tmp: str, read: set[str]) -> bool:
    """Does ``s`` (between the copy-in and the copy-out) leave the copy a no-op?"""
    if isinstance(s, ast.AssignStmt):
        return (_call_free(s) and tmp not in _names(s)
                and lvalue_root(s.lhs) not in read)
    if isinstance(s, ast.VarDecl):
        return (s.name not in read and s.name != tmp
                and (s.init is None or (_call_free(s.init) and tmp not in _names(s.init))))
    return isinstance(s, (ast.EmptyStmt, ast.ConstDecl))


class _Control:
    """One control. The uses and declarations of each name are counted in one walk and kept
    up to date as statements are removed (:meth:`forget`), not recounted per name."""

    def __init__(self, ctl: ast.ControlDecl) -> None:
        self.ctl = ctl
        self.use_count: Counter[str] = Counter()
        self.var_decls: dict[str, list[ast.VarDecl]] = {}
        self.block_list: list[ast.BlockStmt] = []
        for n in walk(ctl):
            if isinstance(n, ast.PathExpr):
                self.use_count[n.name] += 1
            elif isinstance(n, ast.VarDecl):
                self.var_decls.setdefault(n.name, []).append(n)
            elif isinstance(n, ast.BlockStmt):
                self.block_list.append(n)

    def uses(self, name: str) -> int:
        return self.use_count[name]

    def decls(self, name: str) -> list[ast.VarDecl]:
        return self.var_decls.get(name, [])

    def blocks(self) -> list[ast.BlockStmt]:
        return self.block_list

    def forget(self, stmt: Any) -> None:
        """Take a statement being removed (it holds no block) out of the counts."""
        for n in walk(stmt):
            if isinstance(n, ast.PathExpr):
                self.use_count[n.name] -= 1
            elif isinstance(n, ast.VarDecl):
                self.var_decls[n.name] = [d for d in self.var_decls[n.name] if d is not n]

    def run(self) -> None:
        freed: set[str] = set()
        for blk in self.blocks():
            freed |= self.remove_pairs(blk)
        # the copy-in of an ``in`` argument the action never reads: dead, and removed by p4c
        # like any dead local; mirrored only where it reads a run-time stack index (the one
        # case where removing it changes what BMv2 does)
        freed |= {n.name for n in walk(self.ctl) if isinstance(n, ast.VarDecl)
                  and n.init is not None and _is_lvalue(n.init) and _runtime_index(n.init)}
        while freed:
            name = freed.pop()
            if self.uses(name):
                continue
            ds = self.decls(name)
            if len(ds) != 1 or ds[0].init is None or not _call_free(ds[0].init):
                continue
            for blk in self.blocks():
                if any(s is ds[0] for s in blk.stmts):
                    blk.stmts = [s for s in blk.stmts if s is not ds[0]]
                    self.forget(ds[0])
                    freed |= _names(ds[0].init)
                    break

    def remove_pairs(self, blk: ast.BlockStmt) -> set[str]:
        freed: set[str] = set()
        i = 0
        while i < len(blk.stmts):
            d = blk.stmts[i]
            j = self.copy_back(blk.stmts, i) if isinstance(d, ast.VarDecl) else None
            if j is None:
                i += 1
                continue
            assert isinstance(d, ast.VarDecl) and d.init is not None
            freed |= _names(d.init)
            self.forget(blk.stmts[j])
            self.forget(d)
            del blk.stmts[j]
            del blk.stmts[i]
        return freed

    def copy_back(self, stmts: list[Any], i: int) -> int | None:
        """Index of the ``E = tmp`` that makes ``stmts[i]`` (``T tmp = E``) a no-op copy."""
        d = stmts[i]
        if d.init is None or not _is_lvalue(d.init):
            return None
        if self.uses(d.name) != 1 or len(self.decls(d.name)) != 1:
            return None
        read = _names(d.init)
        for j in range(i + 1, len(stmts)):
            s = stmts[j]
            if (isinstance(s, ast.AssignStmt) and isinstance(s.rhs, ast.PathExpr)
                    and s.rhs.name == d.name):
                return j if same_expr(s.lhs, d.init) else None
            if not _harmless(s, d.name, read):
                return None
        return None


def local_copy_propagation(prog: ast.Program) -> None:
    """Remove the no-op copy-in/copy-out pairs (see the module docstring) in every control."""
    for decl in prog.decls:
        if isinstance(decl, ast.ControlDecl):
            _Control(decl).run()
