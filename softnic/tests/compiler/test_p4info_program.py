"""P4Info of whole compiled programs where it must equal what p4c-bm2-ss writes.

The fidelity review (docs/fidelity-review.md F5, F6) compared softnic's P4Info with p4c's for
the same program; these tests pin the fields it found different.
"""

from __future__ import annotations

from pathlib import Path

from p4.config.v1 import p4info_pb2

from softnic.compiler.compile import compile_file
from softnic.compiler.p4info.serialize import build_p4info
from softnic.tests.compiler.p4progs import compile_text, program

CORPUS = Path(__file__).parent.parent / "corpus"


def by_name(items, name: str):  # noqa: ANN001, ANN201 - any repeated P4Info message
    return next(i for i in items if i.preamble.name == name)


def p4info_of(tmp_path: Path, ingress_body: str) -> p4info_pb2.P4Info:
    _, res = compile_text(tmp_path, program(ingress_body))
    return build_p4info(res)


def test_controller_header_ids_come_from_the_header_type_name() -> None:
    _, res = compile_file(CORPUS / "digest_packetio.p4")
    info = build_p4info(res)
    # The ids p4c-bm2-ss gives headers of these type names (JinLabIIT basic.p4 P4Info): the
    # hash of "packet_out_header_t" / "packet_in_header_t", not of "packet_out" / "packet_in".
    assert by_name(info.controller_packet_metadata, "packet_out").preamble.id == 76689799
    assert by_name(info.controller_packet_metadata, "packet_in").preamble.id == 81826293
    assert {ch.type_name for ch in res.controller_headers} == {"packet_in_header_t",
                                                               "packet_out_header_t"}


TABLES = """
    action setb(bit<8> v, bit<16> w) { hdr.h.b = v; meta.x = (bit<8>)w; }
    action drop() { mark_to_drop(sm); }
    table with_args {
        key = { hdr.h.a: exact; }
        actions = { setb; drop; }
        default_action = setb(7, 0x102);
    }
    table implicit_noaction {
        key = { hdr.h.a: exact; }
        actions = { setb; }
    }
    table const_default {
        key = { hdr.h.a: exact; }
        actions = { setb; drop; }
        const default_action = drop();
    }
    table const_entries {
        key = { hdr.h.a: exact; }
        actions = { setb; drop; }
        const entries = { 1: drop(); }
    }
    table initial_entries {
        key = { hdr.h.a: exact; }
        actions = { setb; drop; }
        entries = { 1: drop(); }
    }
    apply {
        with_args.apply(); implicit_noaction.apply(); const_default.apply();
        const_entries.apply(); initial_entries.apply();
    }"""


def test_initial_default_action_with_arguments(tmp_path: Path) -> None:
    info = p4info_of(tmp_path, TABLES)
    setb = by_name(info.actions, "I.setb").preamble.id
    t = by_name(info.tables, "I.with_args")
    assert t.HasField("initial_default_action") and t.const_default_action_id == 0
    assert t.initial_default_action.action_id == setb
    assert [(a.param_id, a.value) for a in t.initial_default_action.arguments] == [
        (1, b"\x07"), (2, b"\x01\x02")]


def test_implicit_noaction_is_the_initial_default(tmp_path: Path) -> None:
    info = p4info_of(tmp_path, TABLES)
    t = by_name(info.tables, "I.implicit_noaction")
    noaction = by_name(info.actions, "NoAction")
    assert t.initial_default_action.action_id == noaction.preamble.id
    assert list(t.initial_default_action.arguments) == []
    assert list(noaction.preamble.annotations) == ['@noWarn("unused")']


def test_const_default_has_no_initial_default(tmp_path: Path) -> None:
    info = p4info_of(tmp_path, TABLES)
    t = by_name(info.tables, "I.const_default")
    assert not t.HasField("initial_default_action")
    assert t.const_default_action_id == by_name(info.actions, "I.drop").preamble.id


def test_const_table_flags_as_p4c_1_2_4_1_writes_them(tmp_path: Path) -> None:
    # is_const_table for 'const entries'; has_initial_entries is never written (p4c 1.2.4.1's
    # P4Info of p4cache.p4 has none on its const tables)
    info = p4info_of(tmp_path, TABLES)
    flags = {t.preamble.name: (t.is_const_table, t.has_initial_entries) for t in info.tables}
    assert flags["I.const_entries"] == (True, False)
    assert flags["I.initial_entries"] == (False, False)
    assert flags["I.with_args"] == (False, False)
