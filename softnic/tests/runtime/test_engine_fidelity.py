"""Engine behaviour that must match BMv2 simple_switch exactly (docs/fidelity-review.md F1-F4).

Each expectation below is what BMv2's ``simple_switch.cpp`` / ``primitives.cpp`` do:
egress_spec reset before egress, the packet length register moved by add_header /
remove_header (not by push / pop), clones parsed with ingress_port and then reset, E2E clones
copying the header state. The probe program appends a ``report`` header in egress that records
what egress code reads.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.runtime.switch import Switch
from softnic.tests.runtime.engine_helpers import fixture_json

PROBE = r"""
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> v; }
header word_t { bit<16> w; }
header report_t { bit<32> plen; bit<16> iport; bit<16> espec; bit<32> itype; bit<8> pmeta; }

struct headers_t { eth_t eth; tag_t tag; word_t[4] words; report_t report; }
struct meta_t { bit<8> from_parser; }

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        m.from_parser = 7;
        transition select(sm.ingress_port) {
            3: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(h.tag);
        transition accept;
    }
}

control VC(inout headers_t h, inout meta_t m) { apply { } }

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (h.eth.etype == 1) {
            mark_to_drop(sm);
            sm.mcast_grp = 5;
        } else if (h.eth.etype == 2) {
            h.tag.setValid();
            h.tag.v = 0xAA;
        } else if (h.eth.etype == 3) {
            clone(CloneType.I2E, 7);
        } else if (h.eth.etype == 4) {
            h.tag.setInvalid();
        } else if (h.eth.etype == 5) {
            h.words.push_front(2);
            h.words[0].setValid();
            h.words[1].setValid();
            h.words[0].w = 0x1111;
            h.words[1].w = 0x2222;
        } else if (h.eth.etype == 7) {
            h.tag.setValid();
            h.tag.setValid();
            h.tag.v = 0xBB;
        }
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.report.setValid();
        h.report.plen = sm.packet_length;
        h.report.iport = (bit<16>)sm.ingress_port;
        h.report.espec = (bit<16>)sm.egress_spec;
        h.report.itype = sm.instance_type;
        h.report.pmeta = m.from_parser;
        if (h.eth.etype == 6 && sm.instance_type == 0) {
            clone(CloneType.E2E, 8);
            h.eth.src = 0x0000000000EE;
            mark_to_drop(sm);
        }
    }
}

control C(inout headers_t h, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t h) {
    apply {
        pkt.emit(h.eth);
        pkt.emit(h.tag);
        pkt.emit(h.words);
        pkt.emit(h.report);
    }
}

V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""

REPORT_LEN = 13


@pytest.fixture(scope="module")
def probe_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    src = Path(tmp_path_factory.mktemp("probe")) / "probe.p4"
    src.write_text(PROBE)
    bmv2_json, _ = compile_file(src)
    return bmv2_json


@pytest.fixture
def sw(probe_json: dict) -> Switch:
    s = Switch()
    s.load_json(probe_json)
    return s


def frame(etype: int, payload: bytes = b"") -> bytes:
    """Ethernet only; ``payload`` is parsed as the tag header on port 3, so no payload is
    left and the report header is the last bytes out."""
    return bytes.fromhex("000000000001" "000000000002") + etype.to_bytes(2, "big") + payload


def report(out: bytes) -> dict[str, int]:
    r = out[-REPORT_LEN:]
    return {"plen": int.from_bytes(r[0:4], "big"), "iport": int.from_bytes(r[4:6], "big"),
            "espec": int.from_bytes(r[6:8], "big"), "itype": int.from_bytes(r[8:12], "big"),
            "pmeta": r[12]}


# -- F1: legacy default transition ---------------------------------------------------------

def test_legacy_typeless_default_transition_loads_and_acts_as_default():
    j = copy.deepcopy(fixture_json("basic_l3"))
    legacy = 0
    for st in j["parsers"][0]["parse_states"]:
        for tr in st["transitions"]:
            if tr.get("type") == "default":
                del tr["type"]  # p4c <= 2.18: {"value": "default", "mask": null, ...}
                tr["value"] = "default"
                tr["mask"] = None
                legacy += 1
    assert legacy, "fixture has no default transition to rewrite"
    sw = Switch()
    sw.load_json(j)
    # an ARP frame takes the default branch of the ethertype select and leaves unchanged
    pkt = frame(0x0806, b"\x00" * 28)
    assert sw.process_packet(1, pkt) == [(0, pkt)]


def test_legacy_default_transition_is_taken(probe_json: dict):
    j = copy.deepcopy(probe_json)
    start = next(st for st in j["parsers"][0]["parse_states"] if st["name"] == "start")
    for tr in start["transitions"]:
        if tr.get("type") == "default":
            del tr["type"]
            tr["value"] = "default"
            tr["next_state"] = "parse_tag"  # so taking it is visible
    sw = Switch()
    sw.load_json(j)
    # from port 1 the default now extracts the tag, which etype 4 removes again; had the
    # parser failed with NoMatch instead, the tag byte would go out as payload
    out = sw.process_packet(1, frame(4, b"\x42"))
    assert len(out) == 1 and len(out[0][1]) == 14 + REPORT_LEN
    assert report(out[0][1])["plen"] == 14


# -- F2: egress_spec reset before egress ---------------------------------------------------

def test_mark_to_drop_then_multicast_replicas_come_out(sw: Switch):
    sw.mc_group_set(5, [(2, 1), (4, 2)])
    out = sw.process_packet(1, frame(1))
    assert sorted(p for p, _ in out) == [2, 4]
    for _, data in out:
        r = report(data)
        assert r["itype"] == 5  # replication
        assert r["espec"] == 0  # what BMv2 egress code reads: 512 truncated to 9 bits


def test_egress_reads_reset_egress_spec_on_unicast(sw: Switch):
    out = sw.process_packet(1, frame(0x10))
    assert [p for p, _ in out] == [2]
    assert report(out[0][1])["espec"] == 0  # not the ingress value 2


def test_egress_spec_reset_follows_a_custom_drop_port(probe_json: dict):
    s = Switch(drop_port=100)
    s.load_json(probe_json)
    out = s.process_packet(1, frame(0x10))
    assert report(out[0][1])["espec"] == 101


# -- F3: packet length register ------------------------------------------------------------

def test_plain_packet_length_in_egress(sw: Switch):
    out = sw.process_packet(1, frame(0x10))
    assert report(out[0][1])["plen"] == 14


def test_setvalid_in_ingress_adds_header_size(sw: Switch):
    out = sw.process_packet(1, frame(2))
    data = out[0][1]
    assert data[14] == 0xAA  # the tag header is emitted
    assert report(data)["plen"] == 15


def test_setvalid_twice_counts_once(sw: Switch):
    out = sw.process_packet(1, frame(7))
    assert report(out[0][1])["plen"] == 15


def test_setinvalid_in_ingress_removes_header_size(sw: Switch):
    pkt = frame(4, b"\x55")  # from port 3 the parser extracts the 1-byte tag
    out = sw.process_packet(3, pkt)
    data = out[0][1]
    assert data[:14] == pkt[:14] and len(data) == 14 + REPORT_LEN  # tag gone
    assert report(data)["plen"] == 14  # 15 received - 1


def test_setinvalid_of_invalid_header_changes_nothing(sw: Switch):
    out = sw.process_packet(1, frame(4))  # port 1: tag not parsed, so not valid
    assert report(out[0][1])["plen"] == 14


def test_push_front_does_not_touch_length_but_setvalid_does(sw: Switch):
    # BMv2's push primitive shifts the stack only; the two setValid calls add 2 bytes each
    out = sw.process_packet(1, frame(5))
    data = out[0][1]
    assert data[14:18] == bytes.fromhex("11112222")
    assert report(data)["plen"] == 14 + 4


def test_i2e_clone_gets_ingress_packet_size_and_is_parsed_with_ingress_port(sw: Switch):
    sw.clone_session_set(7, [(9, 0)])
    pkt = frame(3, b"\x42")
    out = dict(sw.process_packet(3, pkt))
    assert set(out) == {2, 9}
    clone = out[9]
    r = report(clone)
    assert r["itype"] == 1
    assert r["plen"] == len(pkt)
    # parsed with ingress_port 3, so the tag was extracted and re-emitted before the report
    assert clone[:len(pkt)] == pkt and len(clone) == len(pkt) + REPORT_LEN
    # ... then metadata was reset, as BMv2's copy_field_list_and_set_type does: ingress_port
    # and what the parser wrote into user metadata read 0 in the clone's egress
    assert r["iport"] == 0 and r["pmeta"] == 0
    assert report(out[2])["pmeta"] == 7 and report(out[2])["iport"] == 3


# -- F4: E2E clones copy the header state --------------------------------------------------

def test_e2e_clone_copies_headers_resets_metadata_and_keeps_length(sw: Switch):
    sw.clone_session_set(8, [(6, 3)])
    pkt = frame(6)
    out = sw.process_packet(1, pkt)
    # the original is dropped in egress after cloning; the clone still comes out
    assert [p for p, _ in out] == [6]
    data = out[0][1]
    # header state copied before deparsing: the egress change to eth.src is in the clone
    assert data[6:12] == bytes.fromhex("0000000000ee")
    r = report(data)
    assert r["itype"] == 2
    # the original's register at the end of its egress: received + the report header
    assert r["plen"] == len(pkt) + REPORT_LEN
    assert r["iport"] == 0 and r["pmeta"] == 0  # metadata reset
    assert len(data) == len(pkt) + REPORT_LEN  # report valid once, payload once


def test_e2e_clone_does_not_reparse(sw: Switch):
    # etype 6 from port 3: the tag is parsed; a re-parse of the deparsed bytes (ingress_port
    # 0) would leave tag + report as payload and the clone's egress would add a second report
    sw.clone_session_set(8, [(6, 0)])
    pkt = frame(6, b"\x99")
    out = sw.process_packet(3, pkt)
    assert [p for p, _ in out] == [6]
    data = out[0][1]
    assert data[:15] == bytes.fromhex("000000000001" "0000000000ee" "0006" "99")
    assert len(data) == len(pkt) + REPORT_LEN
    assert report(data)["plen"] == len(pkt) + REPORT_LEN
