"""Verify generated pipeline source before it runs: only what the generators write may appear.

The generators never paste JSON text into source (identifiers come from
``GenContext.fresh``, data enters as ``int`` literals or through ``repr``). This module checks
that promise on the finished source, so that a bug in a generator cannot turn a hostile
pipeline into code either: the source is parsed with :mod:`ast` and every node is held to an
allow-list of the shapes the generators produce.

- Statements: ``def`` (module level only), assignments, ``if``, ``while``, ``return``,
  ``raise``, ``continue``, ``pass`` and expression statements. No imports, classes, lambdas,
  comprehensions, ``with``, ``try``, ``global``, ``del`` or ``yield``.
- Names: a function's own parameters and the locals the generators use (:data:`LOCALS`,
  ``_t<n>`` temporaries); module level, only names the generators created or put in the
  namespace, plus a few builtins (:data:`BUILTINS`). Never a dunder name.
- Attributes: only the ones generated code uses (:data:`ATTRIBUTES`); never a dunder.
- Constants: ints, strings, bytes, booleans and None.

Anything else raises :class:`PipelineLoadError` and the source is never executed.
"""

from __future__ import annotations

import ast
import re

from softnic.runtime.api import PipelineLoadError

# Locals and parameters of generated functions (see gen_parser, gen_actions, gen_deparse).
LOCALS = frozenset({
    "F", "D", "S", "B", "n", "pos", "PL", "T",  # parameters (T: the traced parser's callback)
    "e", "v", "k", "i", "L", "r", "s", "nb", "pad", "b", "parts", "pc", "nx",
})
_TEMP = re.compile(r"_t\d+|u\d+")  # primitive temporaries, struct.unpack results
BUILTINS = frozenset({"int", "format", "len"})
ATTRIBUTES = frozenset({
    "from_bytes", "to_bytes", "join", "append", "cells", "count", "execute",  # ints, bytes, externs
    "exited", "clone", "resubmit", "recirculate", "digests", "truncate", "logs", "steps",  # S
})

_STATEMENTS = (ast.FunctionDef, ast.Assign, ast.AugAssign, ast.If, ast.While, ast.Return,
               ast.Raise, ast.Continue, ast.Pass, ast.Expr)
_EXPRESSIONS = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
                ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Name, ast.Constant,
                ast.Attribute)
_OTHER = (ast.Module, ast.arguments, ast.arg, ast.expr_context, ast.operator, ast.unaryop,
          ast.boolop, ast.cmpop)
_CONSTANTS = (int, str, bytes, bool, type(None))


def _fail(label: str, node: ast.AST, what: str) -> PipelineLoadError:
    line = getattr(node, "lineno", "?")
    return PipelineLoadError(f"internal code generation error: {label} line {line}: {what}; "
                             "refusing to run it")


def check_source(source: str, module_names: set[str], label: str) -> ast.Module:
    """Parse ``source`` and check it against the allow-list; returns the tree to compile.

    ``module_names`` are the module-level names the source may define or read: the namespace's
    keys and the identifiers the generators created.
    """
    try:
        tree = ast.parse(source, label)
    except (SyntaxError, RecursionError, MemoryError, ValueError) as e:
        raise PipelineLoadError(f"internal code generation error: {label}: "
                                f"{type(e).__name__}: {e}") from e
    allowed = {n for n in module_names if not n.startswith("__")} | BUILTINS
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            if stmt.name not in module_names or stmt.name.startswith("__"):
                raise _fail(label, stmt, f"function name {stmt.name!r} was not generated")
            _check_function(stmt, allowed, label)
        elif isinstance(stmt, ast.Assign):  # tables of generated functions
            for t in stmt.targets:
                if not (isinstance(t, ast.Name) and t.id in module_names
                        and not t.id.startswith("__")):
                    raise _fail(label, stmt, "module-level assignment to a name not generated")
            _check_nodes(stmt.value, allowed, frozenset(), label)
        else:
            raise _fail(label, stmt, f"{type(stmt).__name__} at module level")
    return tree


def _check_function(fn: ast.FunctionDef, allowed: set[str], label: str) -> None:
    a = fn.args
    if fn.decorator_list or fn.returns or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs \
            or a.defaults or a.kw_defaults:
        raise _fail(label, fn, "unexpected function signature")
    params = frozenset(x.arg for x in a.args)
    if not params <= LOCALS:
        raise _fail(label, fn, f"unexpected parameter names {sorted(params - LOCALS)}")
    for stmt in fn.body:
        _check_nodes(stmt, allowed, params, label)


def _check_nodes(root: ast.AST, allowed: set[str], params: frozenset[str], label: str) -> None:
    for node in ast.walk(root):
        if isinstance(node, ast.FunctionDef) and node is not root:
            raise _fail(label, node, "nested function")
        if isinstance(node, ast.Name):
            name = node.id
            local = name in LOCALS or _TEMP.fullmatch(name) is not None
            if isinstance(node.ctx, ast.Store):
                if not local:
                    raise _fail(label, node, f"assignment to {name!r}")
            elif not (local or name in params or name in allowed):
                raise _fail(label, node, f"unknown name {name!r}")
        elif isinstance(node, ast.Attribute):
            if node.attr not in ATTRIBUTES:
                raise _fail(label, node, f"attribute {node.attr!r}")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, _CONSTANTS):
                raise _fail(label, node, f"constant of type {type(node.value).__name__}")
        elif isinstance(node, ast.Call):
            if node.keywords:
                raise _fail(label, node, "keyword arguments")
        elif not isinstance(node, _STATEMENTS + _EXPRESSIONS + _OTHER):
            raise _fail(label, node, f"{type(node).__name__} is not allowed")
