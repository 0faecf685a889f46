"""Table matching end to end: masked keys (``key = { f & 0xF0 : exact; }``), every match kind,
multi-field exact / lpm / ternary keys, entry identity, deletion, size limits and read-back.

The program is compiled by softnic's front end; entries go in through the control-plane API and
the tests look only at the packets that come out and at what the API reads back.
"""

from __future__ import annotations

import copy

import pytest

from softnic.runtime.api import ActionCall, AlreadyExists, InvalidArgument, MatchKey, TableEntry
from softnic.tests.runtime.mut_programs import compile_src, one_out, program, switch_for

DECLS = """
    action set1(bit<8> v) { hdr.h.o1 = v; }
    action set2(bit<8> v) { hdr.h.o2 = v; }
    action set3(bit<8> v) { hdr.h.o3 = v; }
    action set4(bit<8> v) { hdr.h.o4 = v; }
    action set5(bit<8> v) { hdr.h.o5 = v; }
    action set6(bit<8> v) { hdr.h.o6 = v; }
    table t_mask { key = { hdr.h.a & 0xF0 : exact; } actions = { set1; NoAction; }
                   default_action = NoAction(); size = 2; }
    table t_mask2 { key = { hdr.h.a & 0x0F : exact; hdr.h.c & 0xFF00 : exact; }
                    actions = { set2; NoAction; } default_action = NoAction(); }
    table t_lpm { key = { hdr.h.b : exact; hdr.h.c : lpm; hdr.h.a : exact; }
                  actions = { set3; NoAction; } default_action = NoAction(); }
    table t_lpm1 { key = { hdr.h.c & 0xFFF0 : lpm; } actions = { set4; NoAction; }
                   default_action = NoAction(); }
    table t_tern { key = { hdr.h.a & 0x3C : ternary; hdr.h.b : range; hdr.h.c : optional; }
                   actions = { set5; NoAction; } default_action = NoAction(); }
    table t_one { key = { hdr.h.b : exact; } actions = { set6; NoAction; }
                  default_action = NoAction(); size = 1; }
    action set7(bit<8> v) { hdr.h.o7 = v; }
    table t_lt { key = { hdr.h.c : lpm; hdr.h.b : ternary; } actions = { set7; NoAction; }
                 default_action = NoAction(); }
    action set8(bit<8> v) { hdr.h.o8 = v; }
    table t_const { key = { hdr.h.b : exact; } actions = { set8; NoAction; }
                    const entries = { 0x01 : set8(0x11); 0x02 : set8(0x22); } }
    direct_counter(CounterType.packets_and_bytes) dc;
    direct_meter<bit<8>>(MeterType.packets) dm;
    action set9(bit<8> v) { hdr.h.o9 = v; dm.read(meta.color); }
    table t_res { key = { hdr.h.a : exact; } actions = { set9; NoAction; }
                  default_action = NoAction(); counters = dc; meters = dm; }
"""

SRC = program(
    types="header h_t { bit<8> a; bit<8> b; bit<16> c; bit<8> o1; bit<8> o2; bit<8> o3; "
          "bit<8> o4; bit<8> o5; bit<8> o6; bit<8> o7; bit<8> o8; bit<8> o9; }",
    meta="bit<8> color;",
    headers={"h": "h_t"},
    ingress_decls=DECLS,
    ingress="t_mask.apply(); t_mask2.apply(); t_lpm.apply(); t_lpm1.apply(); t_tern.apply(); "
            "t_one.apply(); t_lt.apply(); t_const.apply(); t_res.apply();")


@pytest.fixture(scope="module")
def bmv2_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return compile_src(tmp_path_factory.mktemp("tables"), SRC)


@pytest.fixture
def sw(bmv2_json: dict):
    return switch_for(bmv2_json)


def send(sw, a: int, b: int = 0, c: int = 0) -> bytes:
    """The action outputs o1..o9 for a packet with header fields a, b, c."""
    out = one_out(sw, bytes([a, b]) + c.to_bytes(2, "big") + bytes(9))
    return out[4:13]


def add(sw, table: str, key: list, action: str, v: int, priority: int = 0) -> None:
    sw.table_add(f"I.{table}", TableEntry(key, ActionCall(f"I.{action}", [v]), priority))


def test_the_key_masks_are_in_the_json(bmv2_json: dict) -> None:
    [pl] = [p for p in bmv2_json["pipelines"] if p["name"] == "ingress"]
    keys = {t["name"]: t["key"] for t in pl["tables"]}
    assert [k["mask"] for k in keys["I.t_mask"]] == ["0xf0"]
    assert [k["mask"] for k in keys["I.t_mask2"]] == ["0x0f", "0xff00"]


# -- masked keys --------------------------------------------------------------------------------

def test_exact_key_mask_is_applied_before_matching(sw) -> None:
    add(sw, "t_mask", [MatchKey(0x30)], "set1", 7)
    assert send(sw, 0x30)[0] == 7
    assert send(sw, 0x35)[0] == 7  # 0x35 & 0xF0 == 0x30
    assert send(sw, 0x3F)[0] == 7
    assert send(sw, 0x45)[0] == 0
    assert send(sw, 0x20)[0] == 0


def test_masked_multi_field_exact_key(sw) -> None:
    add(sw, "t_mask2", [MatchKey(0x05), MatchKey(0x1200)], "set2", 9)
    assert send(sw, 0xA5, c=0x12FF)[1] == 9
    assert send(sw, 0x05, c=0x1200)[1] == 9
    assert send(sw, 0xA6, c=0x12FF)[1] == 0
    assert send(sw, 0xA5, c=0x13FF)[1] == 0


def test_masked_single_field_lpm_key(sw) -> None:
    add(sw, "t_lpm1", [MatchKey(0x1230, prefix_len=16)], "set4", 4)
    add(sw, "t_lpm1", [MatchKey(0x1200, prefix_len=8)], "set4", 8)
    assert send(sw, 0, c=0x1234)[3] == 4  # 0x1234 & 0xFFF0 == 0x1230, the /16 wins
    assert send(sw, 0, c=0x123F)[3] == 4
    assert send(sw, 0, c=0x1240)[3] == 8
    assert send(sw, 0, c=0x1300)[3] == 0


def test_masked_ternary_key(sw) -> None:
    # the entry's mask is wider than the key mask: only the key mask makes 0x17 match 0x14
    add(sw, "t_tern", [MatchKey(0x14, mask=0xFF), None, None], "set5", 5, priority=1)
    assert send(sw, 0x17)[4] == 5
    assert send(sw, 0x94)[4] == 5
    assert send(sw, 0x18)[4] == 0


# -- exact tables -------------------------------------------------------------------------------

def test_exact_single_field_add_delete_and_size(sw) -> None:
    add(sw, "t_one", [MatchKey(0xFF)], "set6", 1)  # the largest value that fits
    assert send(sw, 0, b=0xFF)[5] == 1
    assert send(sw, 0, b=0xFE)[5] == 0
    with pytest.raises(InvalidArgument):  # size = 1
        add(sw, "t_one", [MatchKey(0x01)], "set6", 2)
    with pytest.raises(AlreadyExists):
        add(sw, "t_one", [MatchKey(0xFF)], "set6", 2)
    sw.table_delete("I.t_one", [MatchKey(0xFF)], 0)
    assert send(sw, 0, b=0xFF)[5] == 0
    add(sw, "t_one", [MatchKey(0x01)], "set6", 3)
    assert send(sw, 0, b=0x01)[5] == 3


def test_exact_table_size_two(sw) -> None:
    add(sw, "t_mask", [MatchKey(0x10)], "set1", 1)
    add(sw, "t_mask", [MatchKey(0x20)], "set1", 2)
    with pytest.raises(InvalidArgument):
        add(sw, "t_mask", [MatchKey(0x30)], "set1", 3)
    assert [send(sw, x)[0] for x in (0x1F, 0x2F, 0x3F)] == [1, 2, 0]


def test_exact_value_must_fit_the_field(sw) -> None:
    with pytest.raises(InvalidArgument):
        add(sw, "t_one", [MatchKey(0x100)], "set6", 1)
    with pytest.raises(InvalidArgument):
        add(sw, "t_one", [MatchKey(-1)], "set6", 1)
    with pytest.raises(InvalidArgument):
        add(sw, "t_one", [None], "set6", 1)
    with pytest.raises(InvalidArgument):  # wrong number of key fields
        add(sw, "t_one", [MatchKey(1), MatchKey(2)], "set6", 1)


def test_exact_entries_ignore_priority(sw) -> None:
    add(sw, "t_mask2", [MatchKey(1), MatchKey(0x100)], "set2", 1, priority=5)
    with pytest.raises(AlreadyExists):  # same key, another priority: still the same entry
        add(sw, "t_mask2", [MatchKey(1), MatchKey(0x100)], "set2", 2, priority=9)
    [e] = sw.table_entries("I.t_mask2")
    assert e.priority == 0
    sw.table_delete("I.t_mask2", [MatchKey(1), MatchKey(0x100)], 0)
    assert sw.table_entries("I.t_mask2") == []
    assert send(sw, 1, c=0x100)[1] == 0


def test_entry_read_back(sw) -> None:
    add(sw, "t_one", [MatchKey(0x42)], "set6", 0x99)
    send(sw, 0, b=0x42)
    [e] = sw.table_entries("I.t_one")
    assert e.key == [MatchKey(0x42)]
    assert e.action == ActionCall("I.set6", [0x99])
    assert e.priority == 0
    assert (e.counter_packets, e.counter_bytes) == (0, 0)  # no direct counter on this table
    assert e.meter_config is None
    assert e.is_const is False
    add(sw, "t_tern", [MatchKey(0x04, mask=0x0C), MatchKey(1, high=2), None], "set5", 3,
        priority=7)
    [t] = sw.table_entries("I.t_tern")
    assert t.priority == 7
    assert t.key == [MatchKey(0x04, mask=0x0C), MatchKey(1, high=2), None]
    assert t.action == ActionCall("I.set5", [3])


# -- lpm tables ---------------------------------------------------------------------------------

def test_lpm_between_exact_fields(sw) -> None:
    """key = { b : exact; c : lpm; a : exact }: the lpm field is neither first nor last."""
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1200, prefix_len=8), MatchKey(2)], "set3", 8)
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1230, prefix_len=12), MatchKey(2)], "set3", 12)
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1231, prefix_len=16), MatchKey(2)], "set3", 16)
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1232, prefix_len=16), MatchKey(2)], "set3", 17)
    add(sw, "t_lpm", [MatchKey(1), None, MatchKey(3)], "set3", 99)
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x5555, prefix_len=0), MatchKey(4)], "set3", 98)
    assert send(sw, 2, b=1, c=0x1231)[2] == 16
    assert send(sw, 2, b=1, c=0x1232)[2] == 17
    assert send(sw, 2, b=1, c=0x1233)[2] == 12
    assert send(sw, 2, b=1, c=0x12FF)[2] == 8
    assert send(sw, 2, b=1, c=0x1300)[2] == 0
    assert send(sw, 2, b=2, c=0x1231)[2] == 0  # first exact field differs
    assert send(sw, 5, b=1, c=0x1231)[2] == 0  # last exact field differs
    assert send(sw, 3, b=1, c=0xFFFF)[2] == 99  # prefix length 0 (wildcard)
    assert send(sw, 3, b=1, c=0x0001)[2] == 99
    assert send(sw, 4, b=1, c=0x8001)[2] == 98
    with pytest.raises(AlreadyExists):
        add(sw, "t_lpm", [MatchKey(1), MatchKey(0x12FF, prefix_len=8), MatchKey(2)], "set3", 0)
    # delete one of two /16 entries: the other stays
    sw.table_delete("I.t_lpm", [MatchKey(1), MatchKey(0x1231, prefix_len=16), MatchKey(2)], 0)
    assert send(sw, 2, b=1, c=0x1231)[2] == 12
    assert send(sw, 2, b=1, c=0x1232)[2] == 17
    sw.table_delete("I.t_lpm", [MatchKey(1), MatchKey(0x1232, prefix_len=16), MatchKey(2)], 0)
    assert send(sw, 2, b=1, c=0x1232)[2] == 12
    sw.table_delete("I.t_lpm", [MatchKey(1), MatchKey(0x1230, prefix_len=12), MatchKey(2)], 0)
    assert send(sw, 2, b=1, c=0x1232)[2] == 8
    assert len(sw.table_entries("I.t_lpm")) == 3


def test_lpm_prefix_length_bounds(sw) -> None:
    with pytest.raises(InvalidArgument):
        add(sw, "t_lpm1", [MatchKey(0x1230, prefix_len=17)], "set4", 1)
    with pytest.raises(InvalidArgument):
        add(sw, "t_lpm1", [MatchKey(0x1230, prefix_len=-1)], "set4", 1)
    add(sw, "t_lpm1", [MatchKey(0, prefix_len=0)], "set4", 1)
    assert send(sw, 0, c=0xFFFF)[3] == 1
    assert send(sw, 0, c=0x0000)[3] == 1
    add(sw, "t_lpm1", [MatchKey(0xABC0)], "set4", 2)  # no prefix length: the whole field
    assert send(sw, 0, c=0xABC7)[3] == 2
    assert send(sw, 0, c=0xABD0)[3] == 1
    sw.table_delete("I.t_lpm1", [MatchKey(0xABC0)], 0)
    assert send(sw, 0, c=0xABC7)[3] == 1
    sw.table_delete("I.t_lpm1", [MatchKey(0, prefix_len=0)], 0)
    assert send(sw, 0, c=0xABC7)[3] == 0


def test_single_lpm_same_prefix_length_entries_coexist(sw) -> None:
    add(sw, "t_lpm1", [MatchKey(0x1100, prefix_len=8)], "set4", 1)
    add(sw, "t_lpm1", [MatchKey(0x2200, prefix_len=8)], "set4", 2)
    assert send(sw, 0, c=0x11AA)[3] == 1
    assert send(sw, 0, c=0x22AA)[3] == 2
    sw.table_delete("I.t_lpm1", [MatchKey(0x1100, prefix_len=8)], 0)
    assert send(sw, 0, c=0x11AA)[3] == 0
    assert send(sw, 0, c=0x22AA)[3] == 2


# -- ternary / range / optional -----------------------------------------------------------------

def test_ternary_wildcards_match_everything(sw) -> None:
    add(sw, "t_tern", [None, None, None], "set5", 1, priority=1)
    for a, b, c in [(0, 0, 0), (0xFF, 0xFF, 0xFFFF), (0x01, 0x01, 0x0001), (0x3C, 0x80, 1)]:
        assert send(sw, a, b=b, c=c)[4] == 1


def test_ternary_value_without_mask_is_exact(sw) -> None:
    add(sw, "t_tern", [MatchKey(0x14), None, None], "set5", 1, priority=1)
    assert send(sw, 0x14)[4] == 1
    assert send(sw, 0x15)[4] == 1  # the key mask 0x3C drops bit 0
    assert send(sw, 0x1C)[4] == 0
    assert send(sw, 0x10)[4] == 0


def test_ternary_priorities(sw) -> None:
    add(sw, "t_tern", [MatchKey(0x04, mask=0x04), None, None], "set5", 1, priority=10)
    add(sw, "t_tern", [MatchKey(0x0C, mask=0x0C), None, None], "set5", 2, priority=20)
    add(sw, "t_tern", [MatchKey(0x0C, mask=0x0C), None, None], "set5", 3, priority=5)
    assert send(sw, 0x0C)[4] == 2
    assert send(sw, 0x04)[4] == 1
    sw.table_delete("I.t_tern", [MatchKey(0x0C, mask=0x0C), None, None], 20)
    assert send(sw, 0x0C)[4] == 1
    sw.table_delete("I.t_tern", [MatchKey(0x04, mask=0x04), None, None], 10)
    assert send(sw, 0x0C)[4] == 3


def test_range_field(sw) -> None:
    add(sw, "t_tern", [None, MatchKey(5, high=10), None], "set5", 1, priority=2)
    add(sw, "t_tern", [None, MatchKey(0, high=0xFF), None], "set5", 9, priority=1)
    assert [send(sw, 0, b=b)[4] for b in (0, 3, 4, 5, 7, 10, 11, 0xFF)] == [9, 9, 9, 1, 1, 1, 9, 9]
    with pytest.raises(InvalidArgument):
        add(sw, "t_tern", [None, MatchKey(6, high=5), None], "set5", 1, priority=3)


def test_range_bounds_must_fit_the_field(sw) -> None:
    """The range field is 8 bits: a high bound of 0x100 is refused like an exact value that does
    not fit, and nothing is installed."""
    with pytest.raises(InvalidArgument, match="does not fit"):
        add(sw, "t_tern", [None, MatchKey(5, high=0x100), None], "set5", 1, priority=2)
    assert send(sw, 0, b=0xFF)[4] == 0


def test_range_wildcard_includes_zero(sw) -> None:
    add(sw, "t_tern", [None, None, None], "set5", 4, priority=1)
    assert send(sw, 0, b=0)[4] == 4


def test_range_without_high_runs_to_the_top(sw) -> None:
    add(sw, "t_tern", [None, MatchKey(0xF0), None], "set5", 6, priority=1)
    assert [send(sw, 0, b=b)[4] for b in (0xEF, 0xF0, 0xFF)] == [0, 6, 6]


def test_optional_field(sw) -> None:
    add(sw, "t_tern", [None, None, MatchKey(0x0101)], "set5", 1, priority=5)
    add(sw, "t_tern", [None, None, MatchKey(0x0000)], "set5", 2, priority=5)
    add(sw, "t_tern", [None, None, None], "set5", 3, priority=1)  # wildcard: not the same as 0
    add(sw, "t_tern", [None, None, MatchKey(0x0202)], "set5", 4, priority=5)
    assert send(sw, 0, c=0x0101)[4] == 1
    assert send(sw, 0, c=0x0000)[4] == 2
    assert send(sw, 0, c=0x0001)[4] == 3
    assert send(sw, 0, c=0x0202)[4] == 4
    assert len(sw.table_entries("I.t_tern")) == 4


def test_optional_mask_zero_is_a_wildcard(sw) -> None:
    add(sw, "t_tern", [None, None, MatchKey(0x1234, mask=0)], "set5", 7, priority=5)
    assert send(sw, 0, c=0x0001)[4] == 7
    assert send(sw, 0, c=0xFFFF)[4] == 7
    with pytest.raises(AlreadyExists):  # the same entry as a left-out optional field
        add(sw, "t_tern", [None, None, None], "set5", 8, priority=5)


def test_optional_wildcard_and_zero_are_different_entries(sw) -> None:
    add(sw, "t_tern", [None, None, MatchKey(0)], "set5", 1, priority=5)
    add(sw, "t_tern", [None, None, None], "set5", 2, priority=5)
    assert len(sw.table_entries("I.t_tern")) == 2
    assert send(sw, 0, c=0)[4] == 1
    assert send(sw, 0, c=1)[4] == 2


def test_optional_with_a_mask_is_exact(sw) -> None:
    add(sw, "t_tern", [None, None, MatchKey(0x0100, mask=1)], "set5", 7, priority=5)
    assert send(sw, 0, c=0x0100)[4] == 7
    assert send(sw, 0, c=0x0000)[4] == 0
    assert send(sw, 0, c=0x0101)[4] == 0


def test_ternary_value_outside_its_field(sw) -> None:
    with pytest.raises(InvalidArgument):
        add(sw, "t_tern", [None, None, MatchKey(0x10000)], "set5", 1, priority=1)


def test_action_parameter_checks(sw) -> None:
    with pytest.raises(InvalidArgument):
        add(sw, "t_one", [MatchKey(1)], "set6", 0x100)
    with pytest.raises(InvalidArgument):
        add(sw, "t_one", [MatchKey(1)], "set5", 1)  # not an action of this table
    with pytest.raises(InvalidArgument):
        sw.table_add("I.t_one", TableEntry([MatchKey(1)], ActionCall("I.set6", [1, 2])))
    add(sw, "t_one", [MatchKey(1)], "set6", 0xFF)
    assert send(sw, 0, b=1)[5] == 0xFF


def test_ternary_field_without_key_mask(sw) -> None:
    add(sw, "t_lt", [None, None], "set7", 1, priority=1)  # both wildcards: everything
    assert [send(sw, 0, b=b, c=c)[6] for b, c in ((1, 1), (0xFF, 0xFFFF), (0, 0))] == [1, 1, 1]
    sw.table_delete("I.t_lt", [None, None], 1)
    add(sw, "t_lt", [MatchKey(0x1200, prefix_len=8), MatchKey(0x81, mask=0x81)], "set7", 2,
        priority=3)
    add(sw, "t_lt", [MatchKey(0x1200, prefix_len=8), MatchKey(0x01, mask=0x81)], "set7", 3,
        priority=3)  # same priority, another value: another entry
    add(sw, "t_lt", [MatchKey(0x1200, prefix_len=16), MatchKey(0x01, mask=0x81)], "set7", 4,
        priority=3)
    assert send(sw, 0, b=0x81, c=0x12AB)[6] == 2
    assert send(sw, 0, b=0xFF, c=0x12AB)[6] == 2
    assert send(sw, 0, b=0x01, c=0x12AB)[6] == 3
    assert send(sw, 0, b=0x01, c=0x1200)[6] in (3, 4)  # equal priorities: either
    assert send(sw, 0, b=0x80, c=0x12AB)[6] == 0
    assert send(sw, 0, b=0x81, c=0x13AB)[6] == 0
    assert len(sw.table_entries("I.t_lt")) == 3


def test_range_entries_with_equal_priority_are_distinct(sw) -> None:
    add(sw, "t_tern", [None, MatchKey(1, high=2), None], "set5", 1, priority=4)
    add(sw, "t_tern", [None, MatchKey(3, high=4), None], "set5", 2, priority=4)
    assert [send(sw, 0, b=b)[4] for b in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 0]


def test_const_entries(sw) -> None:
    assert send(sw, 0, b=1)[7] == 0x11
    assert send(sw, 0, b=2)[7] == 0x22
    assert send(sw, 0, b=3)[7] == 0
    es = sorted(sw.table_entries("I.t_const"), key=lambda e: e.key[0].value)
    assert [(e.key, e.action, e.priority, e.is_const, e.counter_packets, e.counter_bytes)
            for e in es] == [
        ([MatchKey(1)], ActionCall("I.set8", [0x11]), 0, True, 0, 0),
        ([MatchKey(2)], ActionCall("I.set8", [0x22]), 0, True, 0, 0)]


def test_direct_counter_and_meter_read_back(sw) -> None:
    sw.table_add("I.t_res", TableEntry([MatchKey(7)], ActionCall("I.set9", [9]),
                                       counter_packets=5, counter_bytes=100,
                                       meter_config=(1000, 10, 2000, 20)))
    assert send(sw, 7)[8] == 9
    assert send(sw, 7)[8] == 9
    [e] = sw.table_entries("I.t_res")
    assert (e.counter_packets, e.counter_bytes) == (7, 100 + 2 * 13)
    assert e.meter_config == (1000, 10, 2000, 20)
    assert e.is_const is False


# -- JSON the front end does not write but BMv2 accepts -----------------------------------------

def table_json(j: dict, name: str) -> dict:
    [pl] = [p for p in j["pipelines"] if p["name"] == "ingress"]
    return next(t for t in pl["tables"] if t["name"] == f"I.{name}")


@pytest.mark.parametrize("match_type", ["exact", "ternary", "lpm"])
def test_lpm_keys_match_longest_prefix_whatever_the_json_match_type(bmv2_json, match_type):
    j = copy.deepcopy(bmv2_json)
    table_json(j, "t_lpm1")["match_type"] = match_type
    table_json(j, "t_lpm")["match_type"] = match_type
    sw = switch_for(j)
    add(sw, "t_lpm1", [MatchKey(0x1200, prefix_len=8)], "set4", 8)
    add(sw, "t_lpm1", [MatchKey(0x1230, prefix_len=12)], "set4", 12)
    add(sw, "t_lpm1", [MatchKey(0x1000, prefix_len=4)], "set4", 4)
    assert [send(sw, 0, c=c)[3] for c in (0x1234, 0x12F0, 0x1FFF, 0x2000)] == [12, 8, 4, 0]
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1200, prefix_len=8), MatchKey(2)], "set3", 8)
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1231, prefix_len=16), MatchKey(2)], "set3", 16)
    assert send(sw, 2, b=1, c=0x1231)[2] == 16
    assert send(sw, 2, b=1, c=0x1232)[2] == 8


def test_valid_match_kind(bmv2_json) -> None:
    """A P4-14 style ``valid`` key: 1 when the header is valid."""
    j = copy.deepcopy(bmv2_json)
    t = table_json(j, "t_one")
    t["key"] = [{"match_type": "valid", "name": "h.valid", "target": "h", "mask": None}]
    t["max_size"] = 0  # no size: no limit
    sw = switch_for(j)
    add(sw, "t_one", [MatchKey(1)], "set6", 0x61)
    add(sw, "t_one", [MatchKey(0)], "set6", 0x60)  # a second entry: size 0 means no limit
    assert send(sw, 0, b=0x42)[5] == 0x61
    with pytest.raises(AlreadyExists):  # exact: the priority is not part of the entry
        add(sw, "t_one", [MatchKey(1)], "set6", 0x62, priority=3)
    with pytest.raises(InvalidArgument):
        add(sw, "t_one", [MatchKey(2)], "set6", 0x62)


def test_valid_key_before_an_lpm_key(bmv2_json) -> None:
    """{ h valid; c : lpm; a : exact }: still a longest-prefix table, even when the JSON's
    match_type does not say so."""
    j = copy.deepcopy(bmv2_json)
    t = table_json(j, "t_lpm")
    t["key"][0] = {"match_type": "valid", "name": "h.valid", "target": "h", "mask": None}
    t["match_type"] = "exact"
    sw = switch_for(j)
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1200, prefix_len=8), MatchKey(2)], "set3", 8)
    add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1230, prefix_len=12), MatchKey(2)], "set3", 12)
    assert send(sw, 2, b=9, c=0x1234)[2] == 12
    assert send(sw, 2, b=9, c=0x1244)[2] == 8
    with pytest.raises(AlreadyExists):
        add(sw, "t_lpm", [MatchKey(1), MatchKey(0x1200, prefix_len=8), MatchKey(2)], "set3", 1,
            priority=4)
