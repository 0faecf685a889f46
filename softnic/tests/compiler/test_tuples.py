"""Tuple types and list expressions, as p4c-bm2-ss accepts them (its EliminateTuples pass turns
each tuple type into a struct): tuple variables, parameters and indices, tuples as hash data and
digest types, and a tuple used as a table key (refused, with p4c's message).

Expected values are worked out from the P4_16 spec (a tuple is an ordered list of values;
``t[i]`` with a constant ``i`` is its i-th element) and BMv2's ``identity`` hash (the data's
bits, concatenated in order, taken modulo ``max``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.p4progs import compile_text, program, run_b


def out_b(tmp_path: Path, body: str, a: int, pre: str = "") -> int | None:
    src = program(body)
    if pre:
        src = src.replace("control I(", pre + "\ncontrol I(", 1)
    j, _ = compile_text(tmp_path, src)
    return run_b(j, a)


def test_tuple_variable_as_hash_data(tmp_path: Path) -> None:
    body = """
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {hdr.h.a, 8w3};
        bit<16> r;
        hash(r, HashAlgorithm.identity, 16w0, t, 16w0xffff);
        hdr.h.b = r[15:8] + r[7:0];
    }"""
    # identity over a ++ 3 = 0x0703 (below max): 7 + 3
    assert out_b(tmp_path, body, 7) == 10


def test_tuple_index_read_and_write(tmp_path: Path) -> None:
    body = """
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bool> t;
        t = {hdr.h.a, true};
        t[0] = t[0] + 1;
        if (t[1]) { hdr.h.b = t[0] + 1; } else { hdr.h.b = 0; }
    }"""
    assert out_b(tmp_path, body, 40) == 42


def test_nested_tuple(tmp_path: Path) -> None:
    body = """
    apply {
        sm.egress_spec = 1;
        tuple<tuple<bit<8>, bit<8>>, bit<8>> t = {{hdr.h.a, 8w1}, 8w2};
        hdr.h.b = t[0][0] + t[0][1] + t[1];
    }"""
    assert out_b(tmp_path, body, 10) == 13


def test_tuple_parameter_of_a_function(tmp_path: Path) -> None:
    pre = "bit<8> sum(in tuple<bit<8>, bit<8>> t) { return t[0] + t[1]; }"
    body = """
    apply { sm.egress_spec = 1; hdr.h.b = sum({hdr.h.a, 8w2}); }"""
    assert out_b(tmp_path, body, 5, pre) == 7


def test_digest_of_a_tuple_type(tmp_path: Path) -> None:
    body = """
    apply {
        sm.egress_spec = 1;
        digest<tuple<bit<8>, bit<8>>>(1, {hdr.h.a, hdr.h.b});
        hdr.h.b = hdr.h.a + 1;
    }"""
    assert out_b(tmp_path, body, 4) == 5


def test_tuple_table_key_is_refused_with_p4c_message(tmp_path: Path) -> None:
    body = """
    table t { key = { {hdr.h.a, hdr.h.b} : exact; } actions = { NoAction; } }
    apply { sm.egress_spec = 1; t.apply(); }"""
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, program(body))
    assert ei.value.loc is not None
    assert "Key {hdr.h.a, hdr.h.b} field type must be a scalar type" in str(ei.value)


def test_tuple_index_by_a_named_constant(tmp_path: Path) -> None:
    pre = "const bit<32> SECOND = 1;"
    body = """
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {hdr.h.a, 8w7};
        hdr.h.b = t[SECOND];
    }"""
    assert out_b(tmp_path, body, 1, pre) == 7


@pytest.mark.parametrize(("index", "msg"), [
    # p4c's TypeInference wording (ArrayIndex on a tuple)
    ("2", "Tuple index 2 larger than tuple size 2"),
    ("hdr.h.a", "Tuple index hdr.h.a must be constant"),
])
def test_bad_tuple_index(tmp_path: Path, index: str, msg: str) -> None:
    body = f"""
    apply {{
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {{1, 2}};
        hdr.h.b = t[{index}];
    }}"""
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, program(body))
    assert ei.value.loc is not None
    assert msg in str(ei.value)
