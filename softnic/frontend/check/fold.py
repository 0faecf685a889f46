"""Compile-time arithmetic on constants: masking to a width, two's complement wrap, casts and
binary operators.

Pure functions with no checker state, because the lowering folds the same way when it emits
constants into the BMv2 JSON; keeping one copy means the checker and the JSON always agree.
"""

from __future__ import annotations

from typing import Any

from softnic.frontend.types import (
    BitT,
    BoolT,
    PType,
)


def mask(width: int) -> int:
    return (1 << width) - 1


def wrap_signed(v: int, width: int) -> int:
    v &= mask(width)
    return v - (1 << width) if v >> (width - 1) else v


def fit(v: int, t: BitT) -> int:
    """``v`` as a value of ``t``: the low bits, read as two's complement when signed."""
    return wrap_signed(v, t.width) if t.signed else v & mask(t.width)


def fold_cast(v: Any, t: PType | None) -> Any:
    """The compile-time value of casting constant ``v`` to ``t``."""
    if isinstance(t, BitT):
        return fit(int(v), t)
    if isinstance(t, BoolT):
        return bool(v)
    return v


def fold_binary(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a // b if b else None
    if op == "%":
        return a % b if b else None
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<<":
        return a << b
    if op == ">>":
        return a >> b
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    if op == "&&":
        return a and b
    if op == "||":
        return a or b
    return None
