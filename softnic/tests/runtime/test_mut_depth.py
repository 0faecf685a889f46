"""The expression nesting bound (``exprgen.MAX_EXPR_DEPTH``) at its exact edge.

``test_engine_bounds.py`` has the same two cases, but they run close to Python's recursion
limit, so they cannot run under mutation testing (mutmut adds stack frames to every mutated
call) and ``make mutate`` leaves them out. These give the interpreter room first, and pin the
exact depth: the deepest expression that loads, and one level more that is refused.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import MAX_EXPR_DEPTH
from softnic.runtime.switch import Switch
from softnic.tests.runtime.test_engine_bounds import _e, _f, _hex, _with_condition


@pytest.fixture(autouse=True)
def stack_room() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def nested(levels: int) -> dict:
    expr: dict = _f("ipv4", "ttl")
    for _ in range(levels):
        expr = _e("+", expr, _hex(1))
    return _with_condition(_e("==", expr, _hex(0)))


def deepest_loadable() -> int:
    # each "+" adds two levels (its "expression" wrapper and the op); the "==", its wrapper
    # and the innermost field take the rest
    return MAX_EXPR_DEPTH // 2 - 3


def test_deepest_expression_loads_and_one_more_level_is_refused() -> None:
    n = deepest_loadable()
    Switch().load_json(nested(n))
    with pytest.raises(PipelineLoadError, match=f"nested deeper than {MAX_EXPR_DEPTH}"):
        Switch().load_json(nested(n + 1))


def test_depth_is_counted_per_expression_not_per_program() -> None:
    """Many expressions just under the bound, one after another, all load."""
    j = nested(deepest_loadable())
    [pl] = [p for p in j["pipelines"] if p["name"] == "ingress"]
    cond = pl["conditionals"][0]
    for i in range(5):
        c = dict(cond, name=f"{cond['name']}_{i}", id=cond["id"] + 1000 + i)
        pl["conditionals"].append(c)
    Switch().load_json(j)
    Switch().load_json(j)
