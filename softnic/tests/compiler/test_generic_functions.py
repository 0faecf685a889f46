"""Generic functions (P4_16 spec 10.1: functions with type parameters), which p4c-bm2-ss
compiles by specialising them per type-argument list (SpecializeGenericFunctions). Expected
values follow from the functions' text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.p4progs import compile_text, program, run_b

MAX = "T max<T>(in T a, in T b) { return a > b ? a : b; }"


def out_b(tmp_path: Path, body: str, a: int, b: int, pre: str) -> int | None:
    src = program(body).replace("control I(", pre + "\ncontrol I(", 1)
    j, _ = compile_text(tmp_path, src)
    return run_b(j, a, b)


def test_explicit_type_argument(tmp_path: Path) -> None:
    body = "apply { sm.egress_spec = 1; hdr.h.b = max<bit<8>>(hdr.h.a, 8w30); }"
    assert out_b(tmp_path, body, 7, 0, MAX) == 30
    assert out_b(tmp_path, body, 70, 0, MAX) == 70


def test_type_argument_inferred_from_the_arguments(tmp_path: Path) -> None:
    body = "apply { sm.egress_spec = 1; hdr.h.b = max(hdr.h.a, hdr.h.b); }"
    assert out_b(tmp_path, body, 7, 9, MAX) == 9
    assert out_b(tmp_path, body, 200, 9, MAX) == 200


def test_two_specialisations_and_a_generic_call_inside_a_generic_function(
        tmp_path: Path) -> None:
    pre = MAX + """
T max3<T>(in T a, in T b, in T c) { return max(max(a, b), c); }"""
    body = """
    apply {
        sm.egress_spec = 1;
        bit<16> w = max(16w0x0100, (bit<16>)hdr.h.a);
        hdr.h.b = max3(hdr.h.a, hdr.h.b, 8w5) + w[15:8];
    }"""
    # w = 0x100 (a < 256), so w[15:8] = 1
    assert out_b(tmp_path, body, 3, 4, pre) == 6
    assert out_b(tmp_path, body, 3, 40, pre) == 41


def test_generic_function_with_inout_parameters(tmp_path: Path) -> None:
    pre = "void swap<T>(inout T x, inout T y) { T t = x; x = y; y = t; }"
    body = "apply { sm.egress_spec = 1; swap(hdr.h.a, hdr.h.b); hdr.h.b = hdr.h.b + 1; }"
    assert out_b(tmp_path, body, 10, 20, pre) == 11


def test_uncalled_generic_function_is_ignored(tmp_path: Path) -> None:
    body = "apply { sm.egress_spec = 1; hdr.h.b = hdr.h.a; }"
    assert out_b(tmp_path, body, 5, 0, MAX) == 5


def test_type_argument_that_cannot_be_inferred(tmp_path: Path) -> None:
    src = program("apply { sm.egress_spec = 1; hdr.h.b = (bit<8>)max(1, 2); }").replace(
        "control I(", MAX + "\ncontrol I(", 1)
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, src)
    assert ei.value.loc is not None
    assert "max: cannot infer the type argument T" in str(ei.value)
