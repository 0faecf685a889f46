"""Compile corpus programs and check the BMv2 JSON structure p4c-bm2-ss would produce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def compile_corpus(name: str):
    return compile_file(str(CORPUS / name))


def by_name(items, name):
    return next(i for i in items if i["name"] == name)


def test_basic_l3_tables_actions_and_resources():
    j, r = compile_corpus("basic_l3.p4")
    json.dumps(j)  # must be serialisable as is
    assert j["__meta__"]["version"] == [2, 23]
    assert [h["name"] for h in j["headers"]][:2] == ["scalars", "standard_metadata"]
    ing = by_name(j["pipelines"], "ingress")
    t = by_name(ing["tables"], "MyIngress.ipv4_lpm")
    assert t["key"] == [{"match_type": "lpm", "name": "hdr.ipv4.dstAddr",
                         "target": ["ipv4", "dstAddr"], "mask": None}]
    assert t["match_type"] == "lpm"
    assert set(t["actions"]) == {"MyIngress.ipv4_forward", "MyIngress.drop", "NoAction"}
    drop_id = by_name(j["actions"], "MyIngress.drop")["id"]
    assert t["default_entry"]["action_id"] == drop_id
    fwd = by_name(j["actions"], "MyIngress.ipv4_forward")
    assert fwd["runtime_data"] == [{"name": "dstAddr", "bitwidth": 48},
                                   {"name": "port", "bitwidth": 9}]
    ops = [p["op"] for p in fwd["primitives"]]
    assert ops == ["assign"] * 4
    ttl = fwd["primitives"][3]["parameters"][1]["value"]["value"]
    assert ttl["op"] == "&" and ttl["right"] == {"type": "hexstr", "value": "0xff"}
    assert by_name(j["actions"], "MyIngress.drop")["primitives"][0]["op"] == "mark_to_drop"
    # apply { if (hdr.ipv4.isValid()) ipv4_lpm.apply(); }
    cond = by_name(ing["conditionals"], ing["init_table"])
    assert cond["expression"]["value"]["op"] == "d2b"
    assert cond["expression"]["value"]["right"]["value"] == ["ipv4", "$valid$"]
    assert cond["true_next"] == "MyIngress.ipv4_lpm" and cond["false_next"] is None
    tinfo = r.tables[0]
    assert tinfo.name == "MyIngress.ipv4_lpm"
    assert (tinfo.match_fields[0].name, tinfo.match_fields[0].bitwidth,
            tinfo.match_fields[0].match_type) == ("hdr.ipv4.dstAddr", 32, "LPM")
    assert {a.name for a in r.actions} == {"MyIngress.ipv4_forward", "MyIngress.drop",
                                           "NoAction"}


def test_basic_l3_parser_deparser_checksum():
    j, _ = compile_corpus("basic_l3.p4")
    states = {s["name"]: s for s in j["parsers"][0]["parse_states"]}
    eth = states["parse_ethernet"]
    assert eth["parser_ops"] == [{"op": "extract",
                                  "parameters": [{"type": "regular", "value": "ethernet"}]}]
    assert eth["transition_key"] == [{"type": "field", "value": ["ethernet", "etherType"]}]
    assert eth["transitions"][0] == {"type": "hexstr", "value": "0x0800", "mask": None,
                                     "next_state": "parse_ipv4"}
    assert eth["transitions"][-1]["type"] == "default"
    assert j["deparsers"][0]["order"] == ["ethernet", "ipv4"]
    (ck,) = j["checksums"]
    assert ck["target"] == ["ipv4", "hdrChecksum"] and ck["update"] and not ck["verify"]
    calc = by_name(j["calculations"], ck["calculation"])
    assert calc["algo"] == "csum16"
    assert calc["input"][0] == {"type": "field", "value": ["ipv4", "version"]}
    sm = by_name(j["header_types"], "standard_metadata")
    assert sum(f[1] for f in sm["fields"]) % 8 == 0


def test_header_stacks_and_lookahead():
    j, _ = compile_corpus("headers_stacks.p4")
    stacks = {s["name"]: s for s in j["header_stacks"]}
    assert stacks["mpls"]["size"] == 4 and len(stacks["mpls"]["header_ids"]) == 4
    names = {h["id"]: h["name"] for h in j["headers"]}
    assert [names[i] for i in stacks["vlan"]["header_ids"]] == ["vlan[0]", "vlan[1]"]
    states = {s["name"]: s for s in j["parsers"][0]["parse_states"]}
    assert states["parse_vlan"]["transition_key"] == [
        {"type": "stack_field", "value": ["vlan", "etherType"]}]
    assert {"op": "extract", "parameters": [{"type": "stack", "value": "vlan"}]} in states[
        "parse_vlan"]["parser_ops"]
    keys = [k for s in states.values() for k in s["transition_key"]]
    assert {"type": "lookahead", "value": [0, 4]} in keys


def test_externs_registers_counters_meters_hash():
    j, r = compile_corpus("externs.p4")
    regs = {x["name"]: x for x in j["register_arrays"]}
    assert regs["XIngress.hit_count"]["bitwidth"] == 32
    assert regs["XIngress.wide_reg"] == {**regs["XIngress.wide_reg"], "size": 16,
                                         "bitwidth": 64}
    assert {c["name"] for c in j["counter_arrays"]} == {"XIngress.port_packets",
                                                        "XIngress.port_bytes"}
    assert j["meter_arrays"][0]["type"] == "packets"
    ops = {p["op"] for a in j["actions"] for p in a["primitives"]}
    assert {"register_read", "register_write", "count", "execute_meter",
            "modify_field_with_hash_based_offset"} <= ops
    assert {c["algo"] for c in j["calculations"]} >= {"crc16", "crc32"}
    assert {x.name: x.unit for x in r.counters}["XIngress.port_bytes"] == "BYTES"
    assert {x.name: x.bitwidth for x in r.registers}["XIngress.wide_reg"] == 64


def test_digest_and_controller_headers():
    j, r = compile_corpus("digest_packetio.p4")
    ll = j["learn_lists"][0]
    assert ll["name"] == "mac_learn_digest_t"
    assert ll["elements"][0] == {"type": "field", "value": ["ethernet", "srcAddr"]}
    gd = [p for a in j["actions"] for p in a["primitives"] if p["op"] == "generate_digest"]
    assert gd and gd[0]["parameters"][1] == {"type": "hexstr", "value": "0x01"}
    assert [d.name for d in r.digests] == ["mac_learn_digest_t"]
    assert {h.name for h in r.controller_headers} == {"packet_in", "packet_out"}


@pytest.mark.parametrize("name", ["annotations.p4", "checksums.p4", "clone_resubmit.p4"])
def test_other_corpus_programs_compile(name):
    j, _ = compile_corpus(name)
    json.dumps(j)
    ids = [t["id"] for p in j["pipelines"] for t in p["tables"]]
    assert len(ids) == len(set(ids))
    for p in j["pipelines"]:
        nodes = {t["name"] for t in p["tables"]} | {c["name"] for c in p["conditionals"]}
        for t in p["tables"]:
            for nxt in list(t["next_tables"].values()) + [t["base_default_next"]]:
                assert nxt is None or nxt in nodes
