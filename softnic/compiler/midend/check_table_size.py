"""CheckTableSize: a ``size`` a target cannot honour is reported and dropped.

Mirrors p4c's mid-end pass of that name (midend/checkSize.h), the first pass of p4c-bm2-ss's
mid end. For each table with a ``size`` property:

- no ``key`` property and a size other than 1: ``[--Wwarn=mismatch] <table>: size <n> specified
  for table without keys`` (a keyless table holds only its default action);
- ``const entries``: ``<table>: size <n> specified for table with constant entries`` (the
  entries fix the contents; hardware sizes such a table from them).

Either way the property is removed, so the BMv2 JSON's ``max_size`` becomes the back end's
default (1024), as p4c's JSON has it. The P4Info, written from the front end's program before
this pass, keeps the declared size.

It runs on the checked program, after the mid end's rewrites: it needs the size as folded and
the table's control-plane name (``CacheIngress.key_parse.classify_command``), which the
checker computes. Tables are visited in source order of the V1Switch's controls, as p4c's
visitor meets them.
"""

from __future__ import annotations

from softnic.compiler.diagnostics import TOKEN, CompileWarning, Mark
from softnic.compiler.frontend.check import Checker
from softnic.compiler.frontend.v1model import v1switch_blocks
from softnic.compiler.ir import ast

KIND = "mismatch"  # p4c's ErrorType::WARN_MISMATCH


def check_table_size(chk: Checker) -> list[CompileWarning]:
    """Warn about, and remove, the ``size`` of every table p4c's CheckTableSize would."""
    blocks = {id(b) for b in v1switch_blocks(chk)}
    warnings: list[CompileWarning] = []
    for d in chk.prog.decls:
        if not (isinstance(d, ast.ControlDecl) and id(d) in blocks):
            continue
        scope = chk.scopes[id(d)]
        for t in d.locals:
            if isinstance(t, ast.TableDecl):
                sym = scope.lookup(t.name)
                name = sym.qualified if sym is not None else t.name
                warnings.extend(_check(chk, t, name))
    return warnings


def _check(chk: Checker, t: ast.TableDecl, name: str) -> list[CompileWarning]:
    props = {p.name: p for p in t.properties}
    size = props.get("size")
    if size is None:
        return []
    value = chk.consts[id(size)]
    shown = _shown(size.value, value)
    where = (Mark(size.value.loc, TOKEN),) if size.value is not None else ()
    found: list[str] = []
    if "key" not in props and value != 1:
        found.append(f"{name}: size {shown} specified for table without keys")
    entries = props.get("entries")
    if entries is not None and entries.is_const:
        found.append(f"{name}: size {shown} specified for table with constant entries")
    if found:
        t.properties = [p for p in t.properties if p is not size]
    return [CompileWarning(t.loc, msg, KIND, TOKEN, where) for msg in found]


def _shown(e: ast.Expr | None, value: int) -> str:
    """The size as p4c prints the constant: the literal as written, else its value."""
    if isinstance(e, ast.IntLiteral) and e.text:
        return e.text
    return str(value)
