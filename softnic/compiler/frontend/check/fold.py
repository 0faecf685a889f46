"""Compile-time arithmetic on constants: masking to a width, two's complement wrap, casts and
binary operators.

Pure functions with no checker state, because the lowering folds the same way when it emits
constants into the BMv2 JSON; keeping one copy means the checker and the JSON always agree.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.ir.types import (
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


RELATIONS = ("==", "!=", "<", "<=", ">", ">=", "&&", "||")


def fold_typed_binary(op: str, a: Any, b: Any, t: PType | None, rt: PType | None) -> Any:
    """``a op b`` for constants of the P4 type ``t`` (the result's type; ``rt`` the right
    operand's): arithmetic wraps to ``t``'s width (two's complement when signed), ``|+|`` and
    ``|-|`` clamp to its range, and ``++`` places ``a`` above ``b``'s ``rt`` bits."""
    if isinstance(a, bool) or isinstance(b, bool) or op in RELATIONS:
        return fold_binary(op, a, b)
    if op == "++":
        if not isinstance(t, BitT) or not isinstance(rt, BitT):
            return None
        return fit((a << rt.width) | (b & mask(rt.width)), t)
    if op in ("|+|", "|-|"):
        if not isinstance(t, BitT):
            return None
        raw = a + b if op == "|+|" else a - b
        lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (
            0, mask(t.width))
        return min(max(raw, lo), hi)
    v = fold_binary(op, a, b)
    if isinstance(v, int) and isinstance(t, BitT):
        v = fit(v, t)
    return v


def fold_unary(op: str, v: Any, t: PType | None) -> Any:
    """``op v`` for a constant of the P4 type ``t``."""
    if op == "!":
        return not v
    if op == "+":
        return v
    if op == "-":
        v = -v
    elif op == "~":
        v = ~v
    else:
        return None
    return fit(v, t) if isinstance(t, BitT) else v

