"""The engine reads BMv2 JSON as BMv2 1.15's loader does, where p4c-bm2-ss 1.2.4 and softnic write
it differently (issue 16, found by running both on p4c's STF samples).

- ``next_tables``: each action of a table goes on to the node named for it, and to none (the
  control ends) when the table's ``next_tables`` leaves it out; ``__HIT__``/``__MISS__``
  override that for hits/misses; ``base_default_next`` is only where a miss goes when no default
  action is set (P4Objects::init_pipelines, MatchTableAbstract::get_next_node(_default)).
  softnic's engine used to send an action left out to ``base_default_next``, so softnic's JSON,
  which left out uncased actions, ran differently on BMv2.
- Header-type fields: the signedness flag (and the later saturating one) is read with jsoncpp's
  ``asBool``, so p4c's ``["is_bool", 1, 0]`` loads as an unsigned 1-bit field.

The JSON is softnic's own output, compared with its p4c form or edited into a form p4c writes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.switch import Switch
from softnic.tests.compiler.p4progs import compile_text, program, run_b

SWITCH = """
  action first() { hdr.h.b = 1; }
  action second() { hdr.h.b = 2; }
  table t { key = { hdr.h.a : exact; } actions = { first; second; } default_action = second(); }
  apply {
    sm.egress_spec = 1;
    switch (t.apply().action_run) {
      first: { hdr.h.b = hdr.h.b + 10; }
    }
    hdr.h.b = hdr.h.b + 100;
  }"""

HIT_MISS = """
  action set(bit<8> v) { hdr.h.b = v; }
  table t { key = { hdr.h.a : exact; } actions = { set; NoAction; } default_action = NoAction(); }
  apply {
    sm.egress_spec = 1;
    if (t.apply().hit) { hdr.h.b = hdr.h.b + 10; } else { hdr.h.b = 50; }
    hdr.h.b = hdr.h.b + 1;
  }"""


def table(bmv2: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for p in bmv2["pipelines"] for t in p["tables"] if t["name"] == name)


def test_a_switch_table_names_every_action_in_next_tables(tmp_path: Path) -> None:
    bmv2, _ = compile_text(tmp_path, program(SWITCH))
    t = table(bmv2, "I.t")
    assert set(t["next_tables"]) == set(t["actions"]) == {"I.first", "I.second"}
    after = t["base_default_next"]
    assert after is not None  # the statement after the switch
    assert t["next_tables"]["I.second"] == after
    assert run_b(bmv2, a=9) == 102  # a miss runs second, then the statement after the switch


def test_the_implicit_no_action_is_in_next_tables_too(tmp_path: Path) -> None:
    # p4c's gauntlet_exit_combination_2: no default_action, so a miss runs NoAction, which the
    # action list does not name; p4c writes its next_tables entry, and so must softnic
    bmv2, _ = compile_text(tmp_path, program(SWITCH.replace(" default_action = second();", "")))
    t = table(bmv2, "I.t")
    assert set(t["next_tables"]) == set(t["actions"]) == {"I.first", "I.second", "NoAction"}
    assert t["next_tables"]["NoAction"] == t["base_default_next"]
    assert run_b(bmv2, a=9, b=5) == 105


def test_an_action_next_tables_leaves_out_ends_the_control(tmp_path: Path) -> None:
    bmv2, _ = compile_text(tmp_path, program(SWITCH))
    del table(bmv2, "I.t")["next_tables"]["I.second"]
    # BMv2: the default action second has no next node, the control ends; base_default_next
    # (set: the table has a default action) is not used
    assert run_b(bmv2, a=9) == 2


def test_a_hit_miss_table_as_p4c_writes_it(tmp_path: Path) -> None:
    bmv2, _ = compile_text(tmp_path, program(HIT_MISS))
    t = table(bmv2, "I.t")
    assert set(t["next_tables"]) == {"__HIT__", "__MISS__"}
    assert t["base_default_next"] is None  # not the statement after the if
    assert run_b(bmv2, a=9) == 51


def test_without_miss_a_miss_goes_where_its_default_action_says(tmp_path: Path) -> None:
    bmv2, _ = compile_text(tmp_path, program(HIT_MISS))
    t = table(bmv2, "I.t")
    else_node = t["next_tables"].pop("__MISS__")
    t["base_default_next"] = else_node  # not read: the table has a default action (NoAction)
    assert run_b(bmv2, a=9, b=7) == 7  # NoAction names no next node: the control ends
    t["next_tables"]["NoAction"] = else_node
    assert run_b(bmv2, a=9, b=7) == 51


def test_a_miss_without_default_action_goes_to_base_default_next(tmp_path: Path) -> None:
    bmv2, _ = compile_text(tmp_path, program(HIT_MISS))
    t = table(bmv2, "I.t")
    else_node = t["next_tables"].pop("__MISS__")
    del t["default_entry"]
    t["base_default_next"] = else_node
    assert run_b(bmv2, a=9, b=7) == 51
    t["next_tables"]["__MISS__"] = None  # __MISS__, when there, wins over base_default_next
    assert run_b(bmv2, a=9, b=7) == 7


BOOL_FIELD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<7> pad; bool flag; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; if (hdr.h.flag) { hdr.h.b = 1; } else { hdr.h.b = 2; } }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def outputs(bmv2: dict[str, Any]) -> list[bytes]:
    sw = Switch()
    sw.load_json(bmv2)
    return [bytes(sw.process_packet(0, bytes([first, 0]))[0][1]) for first in (0x01, 0x00)]


def flag_field(bmv2: dict[str, Any]) -> list[Any]:
    ht = next(h for h in bmv2["header_types"] if h["name"] == "h_t")
    return next(f for f in ht["fields"] if f[0] == "flag")


def test_a_bool_field_written_with_an_integer_flag_loads(tmp_path: Path) -> None:
    bmv2, _ = compile_text(tmp_path, BOOL_FIELD)
    assert flag_field(bmv2) == ["flag", 1, False]
    expected = outputs(bmv2)
    assert expected == [bytes([0x01, 1]), bytes([0x00, 2])]
    p4c_form = copy.deepcopy(bmv2)
    flag_field(p4c_form)[2] = 0  # ["flag", 1, 0], as p4c-bm2-ss 1.2.4 writes a bool field
    assert outputs(p4c_form) == expected


def test_header_field_flags_as_bmv2_reads_them(tmp_path: Path) -> None:
    bmv2, _ = compile_text(tmp_path, BOOL_FIELD)
    saturating = copy.deepcopy(bmv2)
    flag_field(saturating).extend([0])  # [name, 1, false, 0]: not saturating, loads
    assert outputs(saturating) == outputs(bmv2)
    flag_field(saturating)[3] = True
    with pytest.raises(PipelineLoadError, match="saturating"):
        Switch().load_json(saturating)
    flag_field(bmv2)[2] = "no"  # jsoncpp's asBool refuses a string
    with pytest.raises(PipelineLoadError, match="malformed field"):
        Switch().load_json(bmv2)
