"""P4_16 operator precedence, pinned at the parser and through compiled programs.

p4c's grammar (p4parser.ypp), lowest first: ``?:`` < ``||`` < ``&&`` < ``== !=`` <
``< > <= >=`` < ``|`` < ``^`` < ``&`` < ``<< >>`` < ``++ + - |+| |-|`` < ``* / %`` < prefix
operators and casts; every binary level is left-associative, ``?:`` right-associative. Unlike C,
the bitwise operators bind tighter than the comparisons.

Each parse test is written so that swapping any two adjacent levels (or making a level
right-associative) changes the tree; each run-time expression so that it changes the value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from softnic.compiler.frontend.parser import parse_expression
from softnic.compiler.ir import ast
from softnic.tests.compiler.engine_run import compile_src, program, run_once

LEVELS = [
    ["||"],
    ["&&"],
    ["==", "!="],
    ["<", ">", "<=", ">="],
    ["|"],
    ["^"],
    ["&"],
    ["<<", ">>"],
    ["++", "+", "-", "|+|", "|-|"],
    ["*", "/", "%"],
]


def sexpr(e: Any) -> str:
    """A parse tree as a fully parenthesised string: ``a + b * c`` -> ``(+ a (* b c))``."""
    if isinstance(e, ast.PathExpr):
        return e.name
    if isinstance(e, ast.IntLiteral):
        return str(e.value)
    if isinstance(e, ast.Binary):
        return f"({e.op} {sexpr(e.left)} {sexpr(e.right)})"
    if isinstance(e, ast.Unary):
        return f"({e.op} {sexpr(e.expr)})"
    if isinstance(e, ast.Cast):
        return f"(cast {sexpr(e.expr)})"
    if isinstance(e, ast.Ternary):
        return f"(? {sexpr(e.cond)} {sexpr(e.then)} {sexpr(e.other)})"
    if isinstance(e, ast.Slice):
        return f"(slice {sexpr(e.expr)} {sexpr(e.hi)} {sexpr(e.lo)})"
    raise AssertionError(f"unexpected node {e!r}")


def parsed(text: str) -> str:
    return sexpr(parse_expression(text))


PAIRS = [(lo, hi) for i, los in enumerate(LEVELS) for lo in los
         for his in LEVELS[i + 1:] for hi in his]


@pytest.mark.parametrize(("lo", "hi"), PAIRS, ids=[f"{lo} below {hi}" for lo, hi in PAIRS])
def test_tighter_operator_groups_first(lo: str, hi: str) -> None:
    assert parsed(f"a {lo} b {hi} c") == f"({lo} a ({hi} b c))"
    assert parsed(f"a {hi} b {lo} c") == f"({lo} ({hi} a b) c)"


SAME = [(x, y) for ops in LEVELS for x in ops for y in ops]


@pytest.mark.parametrize(("first", "second"), SAME, ids=[f"{x} then {y}" for x, y in SAME])
def test_one_level_is_left_associative(first: str, second: str) -> None:
    assert parsed(f"a {first} b {second} c") == f"({second} ({first} a b) c)"


def test_the_whole_ladder_in_one_expression() -> None:
    text = "a || b && c == d < e | f ^ g & h << i + j * k"
    assert parsed(text) == ("(|| a (&& b (== c (< d (| e (^ f (& g (<< h (+ i (* j k))))))))))")
    text = "a * b + c << d & e ^ f | g < h == i && j || k"
    assert parsed(text) == ("(|| (&& (== (< (| (^ (& (<< (+ (* a b) c) d) e) f) g) h) i) j) k)")


@pytest.mark.parametrize(("text", "tree"), [
    # prefix operators and casts bind tighter than any binary operator
    ("~a & b", "(& (~ a) b)"),
    ("-a * b", "(* (- a) b)"),
    ("!a && b", "(&& (! a) b)"),
    ("(bit<16>) a << 8", "(<< (cast a) 8)"),
    # ?: is below || and right-associative
    ("a || b ? c : d", "(? (|| a b) c d)"),
    ("a ? b : c ? d : e", "(? a b (? c d e))"),
    ("a ? b ? c : d : e", "(? a (? b c d) e)"),
    # parentheses override everything
    ("(a | b) & c", "(& (| a b) c)"),
])
def test_prefix_operators_and_ternary(text: str, tree: str) -> None:
    assert parsed(text) == tree


# ---------------------------------------------------------------------- through the engine

# Each output is an expression over the run-time inputs x=6, y=3, z=5 (and the booleans
# p = false, q = false, t = true derived from them), with the value P4 gives it; the comment
# is the value the expression would have if the two levels named were swapped.
OUTPUTS: list[tuple[str, str, int]] = [
    ("bit<8>", "x + y * z", 21),            # * / +: (6+3)*5 = 45
    ("bit<8>", "x |+| y * z", 21),          # * / |+|: 45
    ("bit<8>", "x << y - 2", 12),           # + / <<: (6<<3)-2 = 46
    ("bit<16>", "x ++ y - 5", 0x05FE),      # ++ and - are one level: 6 ++ (3-5) = 0x06FE
    ("bit<8>", "x & y << 1", 6),            # << / &: (6&3)<<1 = 4
    ("bit<8>", "x ^ y & z", 7),             # & / ^: (6^3)&5 = 5
    ("bit<8>", "x & y ^ z", 7),             # & / ^: 6&(3^5) = 6
    ("bit<8>", "x | y ^ z", 6),             # ^ / |: (6|3)^5 = 2
    ("bit<8>", "x ^ y | z", 5),             # ^ / |: 6^(3|5) = 1
    ("bit<8>", "x | y & z", 7),             # & / |: (6|3)&5 = 5
    ("bit<8>", "x - y - 1", 2),             # left-assoc: 6-(3-1) = 4
    ("bit<8>", "x << 1 >> 2", 3),           # left-assoc: 6<<(1>>2) = 6
    ("bit<8>", "~x & y", 1),                # prefix ~: ~(6&3) = 253
    ("bit<16>", "(bit<16>)x << 8", 0x0600),  # cast first: (bit<16>)(6<<8 in 8 bits) = 0
    # comparisons and logic, as 1/0
    ("bit<8>", "(x | y < z) ? 8w1 : 8w0", 0),       # | before <: 7 < 5
    ("bit<8>", "(x ^ y > z) ? 8w1 : 8w0", 0),       # ^ before >: 5 > 5
    ("bit<8>", "(x & y == 2) ? 8w1 : 8w0", 1),      # & before ==: 2 == 2
    ("bit<8>", "(y < z == x < z) ? 8w1 : 8w0", 0),  # < before ==: true == false
    ("bit<8>", "(p == q && p) ? 8w1 : 8w0", 0),     # == / &&: p == (q && p) is true
    ("bit<8>", "(t || p && p) ? 8w1 : 8w0", 1),     # && / ||: (t || p) && p is false
    ("bit<8>", "p || t ? x : y", 6),                # || before ?:
    ("bit<8>", "p ? x : t ? y : z", 3),             # ?: right-associative
]


def engine_program() -> str:
    fields = "bit<8> x; bit<8> y; bit<8> z; " + " ".join(
        f"{t} r{i};" for i, (t, _, _) in enumerate(OUTPUTS))
    assigns = "\n        ".join(f"h.d.r{i} = {expr};" for i, (_, expr, _) in enumerate(OUTPUTS))
    body = f"""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {{
    apply {{
        sm.egress_spec = 1;
        bit<8> x = h.d.x;
        bit<8> y = h.d.y;
        bit<8> z = h.d.z;
        bool p = x == 0;
        bool q = y == 0;
        bool t = z == 5;
        {assigns}
    }}
}}
"""
    return program(body, fields=fields)


def decode(out: bytes) -> list[int]:
    values = []
    pos = 3
    for t, _, _ in OUTPUTS:
        n = 2 if t == "bit<16>" else 1
        values.append(int.from_bytes(out[pos:pos + n], "big"))
        pos += n
    assert pos == len(out)
    return values


def test_precedence_decides_run_time_values(tmp_path: Path) -> None:
    src = engine_program()
    width = sum(2 if t == "bit<16>" else 1 for t, _, _ in OUTPUTS)
    out = run_once(compile_src(tmp_path, src), bytes([6, 3, 5]) + bytes(width))
    got = decode(out)
    wrong = [(expr, g, w) for (_, expr, w), g in zip(OUTPUTS, got, strict=True) if g != w]
    assert not wrong, wrong  # (expression, got, want)


@pytest.mark.parametrize(("expr", "want"), [
    ("6 + 3 * 5", 21),
    ("6 ^ 3 & 5", 7),
    ("6 | 3 ^ 5", 6),
    ("6 & 3 << 1", 6),
    ("6 << 3 - 2", 12),
    ("6 - 3 - 1", 2),
])
def test_precedence_decides_folded_constants(tmp_path: Path, expr: str, want: int) -> None:
    """The same through the constant folder: the value is computed at compile time."""
    body = f"""
const bit<8> C = {expr};
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {{
    apply {{ sm.egress_spec = 1; h.d.a = C; }}
}}
"""
    assert run_once(compile_src(tmp_path, program(body)), bytes(4))[0] == want


# ---------------------------------------------------------------------- printing back

@pytest.mark.parametrize("text", [
    "a != b && !(z >= 3) || x < 5 && y <= 9",
    "~(a & b)", "-(x - 1)", "-x - 1", "(bit<8>)(a + b)", "(bit<8>)a + b",
    "(a ++ b)[7:0]", "((bit<16>)x)[3:0]", "(a ? b : c) ? d : e", "a ? (b ? c : d) : e",
    "(a | b) & c", "a - (b - c)", "(a << b) >> c", "a << (b >> c)",
])
def test_printed_expression_keeps_its_grouping(text: str) -> None:
    """Messages and BMv2 ``source_fragment`` strings print expressions back: the text must
    parse to the same tree (``!(z >= 3)`` once printed as ``!z >= 3``)."""
    from softnic.compiler.ir.pretty import show_expr

    printed = show_expr(parse_expression(text))
    assert parsed(printed) == parsed(text), printed
