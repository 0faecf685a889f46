"""Inputs that used to end in a Python traceback or an unpositioned error (an internal compiler
error, in p4c's terms) and now get a positioned CompileError saying what is wrong, or that
p4c refuses and softnic accepted silently.

Where p4c-bm2-ss has a message for the case (its type checker, its BMv2 back end's
convertTableEntries), the wording follows it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.p4progs import compile_text, program


def refused(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, program(body))
    assert ei.value.loc is not None, str(ei.value)
    return str(ei.value)


@pytest.mark.parametrize("stmt", ["bit<8> = 3;", "bool (x);", "bit<8>(3) r;"])
def test_statement_starting_with_a_base_type_that_is_no_declaration(
        tmp_path: Path, stmt: str) -> None:
    assert "syntax error" in refused(tmp_path, "apply { " + stmt + " }")


@pytest.mark.parametrize(("kind", "keyset"), [
    ("exact", "1 .. 3"), ("exact", "1 &&& 3"), ("exact", "_"),
    ("lpm", "1 .. 3"), ("ternary", "1 .. 3"), ("range", "1 &&& 3"), ("optional", "1 .. 3"),
])
def test_entry_key_of_the_wrong_form_for_its_match_kind(
        tmp_path: Path, kind: str, keyset: str) -> None:
    body = f"""
    table t {{
        key = {{ hdr.h.a : {kind}; }}
        actions = {{ NoAction; }}
        const entries = {{ {keyset} : NoAction(); }}
    }}
    apply {{ sm.egress_spec = 1; t.apply(); }}"""
    assert f"unsupported {kind} key expression" in refused(tmp_path, body)


def test_direct_counter_on_two_tables(tmp_path: Path) -> None:
    body = """
    direct_counter(CounterType.packets) c;
    table t { key = { hdr.h.a : exact; } actions = { NoAction; } counters = c; }
    table u { key = { hdr.h.b : exact; } actions = { NoAction; } counters = c; }
    apply { sm.egress_spec = 1; t.apply(); u.apply(); }"""
    assert "c: direct_counter is already attached to table t" in refused(tmp_path, body)


@pytest.mark.parametrize("prop", ["size = true;", "support_timeout = 1;"])
def test_table_property_of_the_wrong_type(tmp_path: Path, prop: str) -> None:
    body = """
    table t { key = { hdr.h.a : exact; } actions = { NoAction; } """ + prop + """ }
    apply { sm.egress_spec = 1; t.apply(); }"""
    msg = refused(tmp_path, body)
    assert "must be a positive integer constant" in msg or "must be a boolean constant" in msg


@pytest.mark.parametrize("name", ["accept", "reject"])
def test_parser_parameter_named_like_a_built_in_state(tmp_path: Path, name: str) -> None:
    src = program("apply { sm.egress_spec = 1; }").replace(
        "parser P(packet_in pkt,", f"parser P(packet_in {name},").replace(
        "pkt.extract(hdr.h);", f"{name}.extract(hdr.h);")
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, src)
    assert ei.value.loc is not None
    assert f"{name}: Duplicates declaration {name}" in str(ei.value)
