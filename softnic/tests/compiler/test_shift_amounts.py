"""Shift amounts p4c-bm2-ss accepts and refuses, and what the accepted ones compute.

p4c's BMv2 back end (backends/bmv2/common/lower.cpp, LowerExpressions::shift) refuses a shift
whose amount has type ``bit<W>`` with W > 8 -- by type, so a typed constant such as ``16w2``
or a ``const bit<16>`` too -- and an untyped constant amount above 256. A shift that p4c folds
before its back end (both operands constant, amount 0) never gets there. A constant amount at
least the width of the value is accepted with TypeInference's warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.diagnostics import CompileError, CompileWarning
from softnic.tests.compiler.engine_run import program, run_once

SHIFTS = """
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> amount = h.d.b;
        h.d.c = h.d.a << amount;
        h.d.d = h.d.a >> h.d.b;
    }
}
"""


def compile_body(tmp_path: Path, body: str, warnings: list[CompileWarning] | None = None
                 ) -> dict:
    path = tmp_path / "prog.p4"
    path.write_text(program(body))
    bmv2_json, _ = compile_file(path, warnings=warnings)
    return bmv2_json


@pytest.mark.parametrize(("a", "b", "shl", "shr"), [
    (0xB5, 0, 0xB5, 0xB5),
    (0xB5, 3, 0xA8, 0x16),
    (0xB5, 7, 0x80, 0x01),
    (0xB5, 8, 0x00, 0x00),   # every bit shifted out, in both directions
    (0xB5, 200, 0x00, 0x00),
    (0xFF, 255, 0x00, 0x00),
])
def test_runtime_shift_by_an_8_bit_amount_compiles_and_runs(tmp_path: Path, a: int, b: int,
                                                             shl: int, shr: int) -> None:
    out = run_once(compile_body(tmp_path, SHIFTS), bytes([a, b, 0, 0]))
    assert list(out) == [a, b, shl, shr]


def refusal(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as exc:
        compile_body(tmp_path, body)
    return str(exc.value)


def shift_control(decls: str, stmt: str) -> str:
    return f"""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {{
    {decls}
    apply {{
        sm.egress_spec = 1;
        {stmt}
    }}
}}
"""


@pytest.mark.parametrize(("decls", "stmt", "shown"), [
    # one bit too wide, a run-time value
    ("", "bit<9> n = (bit<9>)h.d.b; h.d.a = h.d.a << n;", "h.d.a << n"),
    ("", "h.d.a = h.d.a >> (bit<16>)h.d.b;", "h.d.a >> (bit<16>)h.d.b"),
    # an action parameter
    ("action s(bit<16> n) { h.d.a = h.d.a << n; } "
     "table t { actions = { s; } default_action = s(1); }", "t.apply();", "h.d.a << n"),
    # typed constants wider than 8 bits: p4c checks the amount's type, not its value
    ("", "h.d.a = h.d.a << 16w2;", "h.d.a << 16w2"),
    # (p4c shows this one after constant folding, as h.d.a >> 16w2; the text is not pinned)
    ("const bit<16> S = 2;", "h.d.a = h.d.a >> S;", None),
])
def test_amount_wider_than_8_bits_is_refused(tmp_path: Path, decls: str, stmt: str,
                                             shown: str | None) -> None:
    msg = refusal(tmp_path, shift_control(decls, stmt))
    assert msg.endswith(": shift amount limited to 8 bits on this target"), msg
    if shown is not None:
        assert msg.endswith(f"error: {shown}: shift amount limited to 8 bits on this target")


def test_untyped_constant_amount_above_256_is_refused(tmp_path: Path) -> None:
    msg = refusal(tmp_path, shift_control("", "h.d.a = h.d.a << 257;"))
    assert msg.endswith("error: h.d.a << 257: shift amount limited to 256 on this target"), msg


@pytest.mark.parametrize(("stmt", "want"), [
    # folded away by p4c before its back end: amount 0, or both operands constant
    ("h.d.c = h.d.a << 16w0;", 0xB5),
    ("h.d.c = (bit<8>)(16w1 << 16w3);", 8),
    # narrowed to 8 bits by the program
    ("h.d.c = h.d.a >> (bit<8>)(16w4 + (bit<16>)h.d.b);", 0x0B),
    # untyped constants up to 256 are accepted (with a warning when >= the width)
    ("h.d.c = h.d.a << 256;", 0),
])
def test_accepted_shifts_compute_p4_values(tmp_path: Path, stmt: str, want: int) -> None:
    out = run_once(compile_body(tmp_path, shift_control("", stmt)), bytes([0xB5, 0, 0, 0]))
    assert out[2] == want


def test_constant_shift_past_the_width_warns_like_p4c_and_gives_zero(tmp_path: Path) -> None:
    warnings: list[CompileWarning] = []
    body = shift_control("", "h.d.c = h.d.a << 9; h.d.d = h.d.a >> 8;")
    out = run_once(compile_body(tmp_path, body, warnings), bytes([0xB5, 0, 0xEE, 0xEE]))
    assert list(out) == [0xB5, 0, 0, 0]
    assert [w.message for w in warnings] == [
        "h.d.a << 9: shifting value with 8 bits by 9",
        "h.d.a >> 8: shifting value with 8 bits by 8",
    ]
