"""Tests that kill mutants of the small front-end passes (docs/mutation.md).

Each program is compiled by softnic and real packets go through the engine; the expected bytes
are worked out from the P4_16 spec. The packet is the 2-byte header (a, b) of p4progs, possibly
followed by more bytes (the payload is emitted after the deparsed headers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.tests.compiler.p4progs import TAIL, compile_text, program
from softnic.tests.compiler.p4progs import run_packet as run
from softnic.tests.compiler.test_table_key_names import json_keys, p4info_keys

LOOP_PARSER = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    bit<8> v = 7;
    state start {
        pkt.extract(hdr.h);
        v = v + 1;
        meta.x = v;
        transition select(hdr.h.a) { 1: start; default: accept; }
    }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.h.b = meta.x; }
}
""" + TAIL


def test_parser_local_initializer_runs_once_when_a_state_loops_back_to_start(
        tmp_path: Path) -> None:
    # P4_16 12.3: a parser's local variables are initialized once per parser run, before start.
    # A transition back to start runs start's statements again, not the initializer.
    j, _ = compile_text(tmp_path, LOOP_PARSER)
    # (1, 2) loops: v = 8; (3, 4) accepts: v = 9; h = (3, 9), the first two bytes are consumed
    assert run(j, bytes([1, 2, 3, 4])) == bytes([3, 9])
    # no loop: v = 8
    assert run(j, bytes([3, 4])) == bytes([3, 8])
    # two loops: 7 + 3
    assert run(j, bytes([1, 0, 1, 0, 5, 6])) == bytes([5, 10])


def test_parser_local_initializer_without_a_loop(tmp_path: Path) -> None:
    # and a control declared after the parser keeps its own local initializer (k = 5)
    src = LOOP_PARSER.replace("1: start;", "1: accept;").replace(
        "apply { sm.egress_spec = 1; hdr.h.b = meta.x; }",
        "bit<8> k = 5;\n    apply { sm.egress_spec = 1; hdr.h.b = meta.x + k; }")
    j, _ = compile_text(tmp_path, src)
    assert run(j, bytes([1, 2, 3])) == bytes([1, 13, 3])



@pytest.mark.parametrize(("key", "name"), [
    # p4c's ConstantFolding folds -8w1 into 8w255 before TableKeyNames (unary minus on bit<W>
    # is 2^W - x, P4_16 8.5); the name is the value in the literal's base, without width
    ("hdr.h.a & -8w1", "hdr.h.a & 255"),
    ("hdr.h.a & -8w0x10", "hdr.h.a & 0xf0"),
])
def test_key_named_after_a_folded_negated_literal(tmp_path: Path, key: str, name: str) -> None:
    body = f"""
    action set(bit<8> v) {{ hdr.h.b = v; }}
    table t {{ key = {{ {key}: ternary; }} actions = {{ set; NoAction; }} }}
    apply {{ sm.egress_spec = 1; t.apply(); }}"""
    j, res = compile_text(tmp_path, program(body))
    assert p4info_keys(res) == {"I.t": [name]}
    assert json_keys(j) == {"I.t": [name]}
    assert run(j, bytes([7, 9])) == bytes([7, 9])  # empty table: miss, packet unchanged
