"""Constructs p4c removes before its BMv2 back end (desugar.py) and how they lower and run.

Each program is compiled to BMv2 JSON; the structure is checked against what p4c-bm2-ss emits
and the JSON is run on the engine (softnic.runtime.switch.Switch) to show the rewrite keeps the
program's meaning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from softnic.compiler.bmv2.lower_parser import range_to_masks
from softnic.compiler.compile import compile_file
from softnic.compiler.diagnostics import CompileError
from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.runtime.switch import Switch

HEADERS = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
  bit<16> identification; bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol;
  bit<16> hdrChecksum; bit<32> srcAddr; bit<32> dstAddr; }
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; }
struct meta_t { bit<8> a; bit<8> b; }
"""

PARSER = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}
"""

TAIL = """
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

CONTROL_PROGRAM = HEADERS + PARSER + """
bit<8> classify(in bit<8> ttl) {
    if (ttl < 10) {
        return 1;
    } else if (ttl < 100) {
        return 2;
    }
    bit<8> big = 3;
    return big;
}

void bump(inout bit<16> v, in bit<16> by) {
    v = v + by;
}

control Sub(inout ipv4_t ip, out bit<8> seen)(bit<8> mark) {
    bit<8> hits = 8w5;
    action set_tos(bit<8> tos) { ip.diffserv = tos; }
    table tos_t {
        key = { ip.protocol: exact; }
        actions = { set_tos; NoAction; }
        default_action = NoAction();
    }
    apply {
        seen = mark;
        if (ip.ttl == 8) {
            return;
        }
        tos_t.apply();
        seen = seen + hits;
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<16> base = 16w100;
    const bit<8> K = 8w7;
    Sub(8w42) sub;
    apply {
        sm.egress_spec = 1;
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.ttl = classify(hdr.ipv4.ttl) + K;
            bump(hdr.ipv4.identification, base);
            switch (hdr.ipv4.protocol) {
                6: { hdr.ipv4.hdrChecksum = 16w1; }
                17:
                1: { hdr.ipv4.hdrChecksum = 16w2; }
                default: { hdr.ipv4.hdrChecksum = 16w3; }
            }
            sub.apply(hdr.ipv4, meta.a);
            hdr.ethernet.srcAddr[7:0] = meta.a;
        }
    }
}
""" + TAIL

PARSER_PROGRAM = HEADERS + """
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> seed = 8w40;
    state start {
        pkt.extract(hdr.ethernet);
        if (hdr.ethernet.etherType == 0x0800) {
            pkt.extract(hdr.ipv4);
            meta.a = 1;
        } else {
            meta.a = 2;
        }
        meta.b = seed;
        transition select(hdr.ipv4.ttl) {
            0 .. 9: low;
            10 .. 99: mid;
            default: accept;
        }
    }
    state low { meta.b = meta.b + 1; transition accept; }
    state mid { meta.b = meta.b + 2; transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.ethernet.srcAddr[15:0] = meta.a ++ meta.b;
    }
}
""" + TAIL


def compile_src(tmp_path: Path, src: str, name: str = "prog") -> tuple[dict[str, Any], Any]:
    path = tmp_path / f"{name}.p4"
    path.write_text(src)
    return compile_file(path)


def by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(i for i in items if i["name"] == name)


def run(j: dict[str, Any], pkt: Any, setup: Any = None) -> Ether:
    sw = Switch()
    sw.load_json(j)
    if setup is not None:
        setup(sw)
    out = sw.process_packet(0, bytes(pkt))
    assert len(out) == 1, out
    port, data = out[0]
    assert port == 1
    return Ether(data)


def ip_pkt(ttl: int, proto: int = 17, ident: int = 1000) -> Ether:
    l4 = UDP(sport=1, dport=2) if proto == 17 else TCP() if proto == 6 else Raw(b"x")
    return (Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02")
            / IP(src="10.0.0.1", dst="10.0.0.2", ttl=ttl, proto=proto, id=ident) / l4)


# ---------------------------------------------------------------------- select ranges


def test_range_to_masks_matches_p4c_expansion() -> None:
    # p4c's ReplaceSelectRange turns 5w10 .. 5w20 into these four masked cases
    assert range_to_masks(10, 20, 5) == [(10, 30), (12, 28), (16, 28), (20, 31)]
    assert range_to_masks(0, 1023, 16) == [(0, 0xFC00)]
    assert range_to_masks(7, 7, 8) == [(7, 0xFF)]
    assert range_to_masks(5, 4, 8) == []
    # every value in the range is covered exactly once, nothing outside it
    pairs = range_to_masks(3, 200, 8)
    for v in range(256):
        hits = sum(1 for val, m in pairs if v & m == val)
        assert hits == (1 if 3 <= v <= 200 else 0), v


def test_signed_range_crossing_zero_is_split() -> None:
    pairs = range_to_masks(-2, 1, 4, signed=True)
    covered = sorted(v for v in range(16) if any(v & m == val for val, m in pairs))
    assert covered == [0, 1, 14, 15]


def test_parser_select_range_transitions() -> None:
    j, _ = compile_file(Path(__file__).parents[1] / "corpus" / "parser_select.p4")
    states = {s["name"]: s for s in j["parsers"][0]["parse_states"]}
    udp = states["parse_udp"]["transitions"]
    assert udp[0] == {"type": "hexstr", "value": "0x0000", "mask": "0xfc00",
                      "next_state": "well_known"}
    assert udp[1]["value"] == "0x2bcb" and udp[1]["mask"] is None
    ipv4 = states["parse_ipv4"]["transitions"]
    # (13w1 .. 13w0x1FFF, _): the range expands to 13 masked cases, key order kept
    ranged = [t for t in ipv4 if t["mask"] is not None and t["mask"].endswith("00")]
    assert len(ranged) == 13
    assert ranged[0] == {"type": "hexstr", "value": "0x000100", "mask": "0x1fff00",
                         "next_state": None}
    assert ranged[-1]["value"] == "0x100000" and ranged[-1]["mask"] == "0x100000"
    assert ipv4[-1]["type"] == "default" and ipv4[-1]["next_state"] == "unknown"


def test_errors_are_numbered_from_zero_like_p4c() -> None:
    j, _ = compile_file(Path(__file__).parents[1] / "corpus" / "parser_select.p4")
    assert j["errors"][:3] == [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2]]
    names = [e[0] for e in j["errors"]]
    assert [e[1] for e in j["errors"]] == list(range(len(names)))
    assert names[-2:] == ["BadIhl", "UnknownProto"]


# ---------------------------------------------------------------------- parser rewrites


def test_parser_if_splits_state_like_p4c(tmp_path: Path) -> None:
    j, _ = compile_src(tmp_path, PARSER_PROGRAM)
    states = {s["name"]: s for s in j["parsers"][0]["parse_states"]}
    assert list(states) == ["start", "start_true", "start_false", "start_join", "low", "mid"]
    start = states["start"]
    # parser-level initialiser first, then the extract, then the condition into a temporary
    assert start["parser_ops"][0]["op"] == "set"
    assert start["parser_ops"][0]["parameters"][1] == {"type": "hexstr", "value": "0x28"}
    assert start["parser_ops"][1]["op"] == "extract"
    key = start["transition_key"]
    assert len(key) == 1 and key[0]["type"] == "field" and key[0]["value"][0] == "scalars"
    assert [(t["value"], t["next_state"]) for t in start["transitions"]] == [
        ("0x01", "start_true"), ("0x00", "start_false")]
    assert states["start_true"]["parser_ops"][0] == {
        "op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]}
    assert states["start_true"]["transitions"][0]["next_state"] == "start_join"
    assert states["start_false"]["transitions"][0]["next_state"] == "start_join"
    join = states["start_join"]
    assert join["transition_key"] == [{"type": "field", "value": ["ipv4", "ttl"]}]
    assert join["transitions"][0] == {"type": "hexstr", "value": "0x00", "mask": "0xf8",
                                      "next_state": "low"}


@pytest.mark.parametrize(("pkt", "a", "b"), [
    (ip_pkt(ttl=5), 1, 41),
    (ip_pkt(ttl=50), 1, 42),
    (ip_pkt(ttl=200), 1, 40),
    (Ether(dst="00:00:00:00:00:01", type=0x86DD) / Raw(b"\x00" * 40), 2, 41),
])
def test_parser_if_and_ranges_run(tmp_path: Path, pkt: Ether, a: int, b: int) -> None:
    j, _ = compile_src(tmp_path, PARSER_PROGRAM)
    out = run(j, pkt)
    mac = int(out[Ether].src.replace(":", ""), 16)
    # non-IP: ipv4 stays invalid so its ttl reads 0 in the select -> "low"
    assert (mac >> 8) & 0xFF == a and mac & 0xFF == b
    assert (IP in out) == (a == 1)


# ---------------------------------------------------------------------- control rewrites


def test_subcontrol_inlined_with_instance_names(tmp_path: Path) -> None:
    j, res = compile_src(tmp_path, CONTROL_PROGRAM)
    ing = by_name(j["pipelines"], "ingress")
    t = by_name(ing["tables"], "I.sub.tos_t")
    assert t["actions"] == ["I.sub.set_tos", "NoAction"]
    assert t["key"][0]["target"] == ["ipv4", "protocol"]
    assert by_name(j["actions"], "I.sub.set_tos")["runtime_data"] == [
        {"name": "tos", "bitwidth": 8}]
    assert {x.name for x in res.tables} == {"I.sub.tos_t"}
    assert "I.sub.set_tos" in {a.name for a in res.actions}
    # the uninstantiated declaration Sub itself contributes nothing
    assert not any(a["name"].startswith("Sub.") for a in j["actions"])


def test_control_local_initialisers_move_to_apply(tmp_path: Path) -> None:
    j, _ = compile_src(tmp_path, CONTROL_PROGRAM)
    ing = by_name(j["pipelines"], "ingress")
    first = by_name(ing["tables"], ing["init_table"])
    act = by_name(j["actions"], first["actions"][0])
    assigns = [(p["parameters"][0]["value"], p["parameters"][1]) for p in act["primitives"]]
    scalars = {f[0] for f in j["header_types"][0]["fields"]}
    # locals are renamed x -> x_0 (p4c UniqueNames) before they become scalars
    assert (["scalars", "base_0"], {"type": "hexstr", "value": "0x0064"}) in assigns
    assert any(n.startswith("sub_hits") for n in scalars)


def test_scalar_names_and_padding_like_p4c(tmp_path: Path) -> None:
    j, _ = compile_src(tmp_path, CONTROL_PROGRAM)
    scalars = j["header_types"][0]["fields"]
    assert scalars[:2] == [["userMetadata.a", 8, False], ["userMetadata.b", 8, False]]
    sm = by_name(j["header_types"], "standard_metadata")["fields"]
    assert sm[-1][0] == "_padding"
    src = CONTROL_PROGRAM.replace("bit<16> base = 16w100;", "bit<16> base = 16w100; bit<3> odd;")
    j2, _ = compile_src(tmp_path, src, "odd")
    scalars2 = j2["header_types"][0]["fields"]
    assert ["odd_0", 3, False] in scalars2
    assert scalars2[-1] == ["_padding_0", 5, False]


def test_value_switch_becomes_hidden_table(tmp_path: Path) -> None:
    j, res = compile_src(tmp_path, CONTROL_PROGRAM)
    ing = by_name(j["pipelines"], "ingress")
    sw = next(t for t in ing["tables"] if t["name"].startswith("I.switch_0_table"))
    assert sw["key"][0]["match_type"] == "exact"
    assert sw["key"][0]["target"][0] == "scalars"
    assert len(sw["actions"]) == 3 and all(a.startswith("I.switch_0_case") for a in sw["actions"])
    keys = [(e["match_key"][0]["key"], e["action_entry"]["action_id"]) for e in sw["entries"]]
    ids = sw["action_ids"]
    assert keys == [("0x06", ids[0]), ("0x11", ids[1]), ("0x01", ids[1])]
    assert sw["default_entry"]["action_id"] == ids[2] and sw["default_entry"]["action_const"]
    assert set(sw["next_tables"]) == set(sw["actions"])
    # hidden: not part of the P4Info
    assert not any("switch" in x.name for x in res.tables)


@pytest.mark.parametrize(("ttl", "proto", "new_ttl", "cksum", "seen", "tos"), [
    (5, 17, 8, 2, 42, 0),         # classify -> 1; Sub returns early when ttl == 8
    (64, 6, 9, 1, 47, 0x20),      # classify -> 2; table hit sets tos; seen = 42 + 5
    (200, 1, 10, 2, 47, 0),       # classify -> 3 (after the if); ICMP shares 17's case
    (64, 47, 9, 3, 47, 0),        # default case
])
def test_control_program_runs(tmp_path: Path, ttl: int, proto: int, new_ttl: int, cksum: int,
                              seen: int, tos: int) -> None:
    j, _ = compile_src(tmp_path, CONTROL_PROGRAM)

    def setup(sw: Switch) -> None:
        sw.table_add("I.sub.tos_t", TableEntry([MatchKey(6)], ActionCall("I.sub.set_tos", [0x20])))

    out = run(j, ip_pkt(ttl=ttl, proto=proto, ident=1000), setup)
    ip = out[IP]
    assert ip.ttl == new_ttl
    assert ip.id == 1100
    assert ip.chksum == cksum
    assert ip.tos == tos
    assert int(out[Ether].src.replace(":", ""), 16) & 0xFF == seen


def test_switch_exit_corpus_runs_ttl_guard() -> None:
    """switch_exit.p4: ``TtlGuard(8w2) guard`` drops packets with ttl < 2, else decrements."""
    j, res = compile_file(Path(__file__).parents[1] / "corpus" / "switch_exit.p4")
    sw = Switch()
    sw.load_json(j)
    sw.table_add("SIngress.classify", TableEntry([MatchKey(0x000000000001)],
                                                 ActionCall("SIngress.to_port", [3])))
    good = ip_pkt(ttl=64)
    out = sw.process_packet(0, bytes(good))
    assert len(out) == 1 and out[0][0] == 3
    assert Ether(out[0][1])[IP].ttl == 63
    assert sw.process_packet(0, bytes(ip_pkt(ttl=1))) == []


# ---------------------------------------------------------------------- refusals


def compile_error(tmp_path: Path, src: str) -> str:
    with pytest.raises(CompileError) as ei:
        compile_src(tmp_path, src)
    return str(ei.value)


def test_subcontrol_with_bound_locals_applied_twice_is_refused(tmp_path: Path) -> None:
    src = CONTROL_PROGRAM.replace("hdr.ethernet.srcAddr[7:0] = meta.a;",
                                  "sub.apply(hdr.ipv4, meta.b);")
    msg = compile_error(tmp_path, src)
    # a sub-control applied twice is inlined twice (its parameters become control-level
    # variables); what BMv2 cannot run is its table applied twice, which p4c-bm2-ss refuses too
    assert "a table can only be applied once on this target" in msg


def test_function_missing_return_is_refused(tmp_path: Path) -> None:
    src = CONTROL_PROGRAM.replace("    bit<8> big = 3;\n    return big;\n", "")
    msg = compile_error(tmp_path, src)
    assert "classify: function does not return a value on every path" in msg


def test_nested_subcontrols_get_dotted_control_plane_names(tmp_path: Path) -> None:
    src = HEADERS + PARSER + """
control Inner(inout bit<8> v) {
    register<bit<8>>(4) r;
    action inc() { v = v + 1; }
    table t { key = { v: exact; } actions = { inc; } }
    apply { r.write(0, v); t.apply(); }
}
control Mid(inout bit<8> w)(bit<8> k) {
    Inner() inner;
    apply { w = w + k; inner.apply(w); }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Mid(8w3) mid;
    apply { sm.egress_spec = 1; mid.apply(meta.a); hdr.ethernet.srcAddr[7:0] = meta.a; }
}
""" + TAIL
    j, res = compile_src(tmp_path, src)
    assert [r["name"] for r in j["register_arrays"]] == ["I.mid.inner.r"]
    assert by_name(by_name(j["pipelines"], "ingress")["tables"], "I.mid.inner.t")["actions"] == [
        "I.mid.inner.inc", "NoAction"]
    assert {t.name for t in res.tables} == {"I.mid.inner.t"}
    assert {r.name for r in res.registers} == {"I.mid.inner.r"}

    def setup(sw: Switch) -> None:
        sw.table_add("I.mid.inner.t", TableEntry([MatchKey(3)], ActionCall("I.mid.inner.inc")))

    out = run(j, ip_pkt(ttl=64), setup)
    assert int(out[Ether].src.replace(":", ""), 16) & 0xFF == 4  # 0 + k, then inc on hit
