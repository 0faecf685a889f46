"""Tuples are checked in the front end, as p4c's TypeInference checks them (Type_Tuple,
Type_List, ArrayIndex on a tuple): a program with tuple types takes the same route as every
other one (front-end passes -> check -> P4Info -> mid-end passes -> check -> lower), so a
front-end error in it is reported before any mid-end pass runs, and a tuple index that is not a
compile-time constant is refused with p4c's message at the index.

Expected values come from the P4_16 spec: ``t[i]`` with a constant ``i`` is the tuple's i-th
element; an index must be a compile-time constant (spec 8.12, tuple operations).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import softnic.compiler.compile as compile_mod
from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.p4progs import compile_text, program, run_b


def test_front_end_error_in_a_tuple_program_stops_before_the_mid_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    real = compile_mod.mid_end_passes

    def spy() -> Any:
        ran.append("mid end")
        return real()

    monkeypatch.setattr(compile_mod, "mid_end_passes", spy)
    body = """
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {hdr.h.a, 8w3};
        hdr.h.b = t[0] == t[1];
    }"""
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, program(body))
    assert ei.value.loc is not None
    assert ran == []


@pytest.mark.parametrize(("index", "msg"), [
    ("hdr.h.a", "Tuple index hdr.h.a must be constant"),
    ("3", "Tuple index 3 larger than tuple size 2"),
])
def test_bad_tuple_index_is_refused_with_p4c_message_at_the_index(
        tmp_path: Path, index: str, msg: str) -> None:
    body = f"""
    apply {{
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {{hdr.h.a, 8w3}};
        hdr.h.b = t[{index}];
    }}"""
    src = program(body)
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, src)
    assert msg in str(ei.value)
    loc = ei.value.loc
    assert loc is not None
    line = src.splitlines()[loc.line - 1]
    assert line[loc.col - 1:].startswith(f"{index}]")


def test_tuple_index_folded_from_a_constant_expression(tmp_path: Path) -> None:
    body = """
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {hdr.h.a, 8w3};
        hdr.h.b = t[2 - 1] + t[0];
    }"""
    j, _ = compile_text(tmp_path, program(body))
    # t[1] is 3, t[0] the input byte
    assert run_b(j, 20) == 23


def test_tuple_element_width_from_a_control_local_constant(tmp_path: Path) -> None:
    # EliminateTuples declares the tuple's struct at top level, where the control's W is not
    # in scope; the tuple type is the checker's resolved one (bit<8>), as p4c's canonical type
    src = program("""
    const bit<32> W = 8;
    apply {
        sm.egress_spec = 1;
        tuple<bit<(W)>, bit<8>> t = {hdr.h.a, 8w3};
        hdr.h.b = t[0] + t[1];
    }""")
    j, _ = compile_text(tmp_path, src)
    assert run_b(j, 20) == 23
