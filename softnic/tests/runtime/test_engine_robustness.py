"""Engine robustness against hostile programs and packets: parser loops end, control-flow loops
and absurd widths are refused at load time, engine errors are counted and logged, parser errors
are traced by name, resubmitted / recirculated packets get BMv2's reset metadata."""

from __future__ import annotations

import copy
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.compiler.compile import compile_file
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.switch import Switch
from softnic.tests.runtime.engine_helpers import fixture_json, load_switch


def run_bounded(sw: Switch, port: int, data: bytes, seconds: float = 10.0) -> list:
    """process_packet in a thread: a hang fails the test instead of hanging the suite."""
    result: list = []
    t = threading.Thread(target=lambda: result.append(sw.process_packet(port, data)),
                         daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "process_packet did not return"
    return result[0]


def looping_parser_json() -> dict[str, Any]:
    """basic_l3 with ``state start { transition start; }`` (no extract: consumes nothing)."""
    j = fixture_json("basic_l3")
    prs = j["parsers"][0]
    start = next(s for s in prs["parse_states"] if s["name"] == prs["init_state"])
    start["parser_ops"] = []
    start["transition_key"] = []
    start["transitions"] = [{"type": "default", "value": None, "mask": None,
                             "next_state": start["name"]}]
    return j


def test_parser_self_loop_ends_with_parser_timeout():
    lines: list[str] = []
    sw = Switch(trace=lines.append)
    sw.load_json(looping_parser_json())
    data = bytes(Ether() / IP() / UDP())
    out = run_bounded(sw, 1, data)
    # ingress still runs (parser errors do not drop on BMv2): nothing extracted, so the
    # non-IPv4 branch sends the bytes unchanged to port 0
    assert out == [(0, data)]
    assert any("Exception while parsing: ParserTimeout" in ln for ln in lines)
    assert sw.stats.engine_errors == 0
    # the lock was released: control-plane calls still work
    assert sw.table_entries("MyIngress.ipv4_lpm") == []


def test_parser_loop_bound_scales_with_packet_length():
    sw = Switch()
    sw.load_json(looping_parser_json())
    for n in (0, 1, 64, 9000):
        assert run_bounded(sw, 1, bytes(n)) == [(0, bytes(n))]
    assert sw.stats.engine_errors == 0


def test_control_flow_cycle_is_refused_at_load():
    j = fixture_json("basic_l3")
    ing = next(p for p in j["pipelines"] if p["name"] == "ingress")
    t = ing["tables"][0]
    t["base_default_next"] = t["name"]
    t["next_tables"] = {a: t["name"] for a in t["actions"]}
    with pytest.raises(PipelineLoadError, match="loops back"):
        Switch().load_json(j)


@pytest.mark.parametrize("where", ["field", "runtime_data", "register", "register_size"])
def test_absurd_widths_and_sizes_are_load_errors(where: str):
    j = fixture_json("basic_l3")
    if where == "field":
        j["header_types"][-1]["fields"][0][1] = 2 ** 70
    elif where == "runtime_data":
        a = next(a for a in j["actions"] if a["runtime_data"])
        a["runtime_data"][0]["bitwidth"] = 2 ** 70
    else:
        j["register_arrays"] = [{"name": "r", "id": 0, "size": 4, "bitwidth": 8}]
        j["register_arrays"][0]["size" if where == "register_size" else "bitwidth"] = 2 ** 70
    with pytest.raises(PipelineLoadError, match="not in 0..") as e:
        Switch().load_json(j)
    assert "2" in str(e.value)


def test_widest_allowed_field_loads():
    j = fixture_json("basic_l3")
    j["header_types"].append({"name": "wide_t", "id": 99, "fields": [["w", 4096, False]]})
    j["headers"].append({"name": "wide", "id": 99, "header_type": "wide_t", "metadata": True})
    Switch().load_json(j)


def test_unexpected_loader_failure_becomes_pipeline_load_error():
    """A condition nested deeper than Python's recursion limit used to escape as RecursionError."""
    j = fixture_json("basic_l3")
    cond = next(c for p in j["pipelines"] for c in p.get("conditionals") or [])
    expr: dict = {"type": "bool", "value": True}
    for _ in range(5000):
        expr = {"type": "expression", "value": {"op": "not", "left": None, "right": expr}}
    cond["expression"] = expr
    with pytest.raises(PipelineLoadError, match="RecursionError|nest|malformed"):
        Switch().load_json(j)


def test_engine_errors_are_counted_and_logged_rate_limited(caplog: pytest.LogCaptureFixture):
    sw = load_switch("basic_l3")
    p = sw._p
    assert p is not None

    def broken(f: list[int], s: Any) -> Any:  # fault injection: an engine bug
        raise RuntimeError("boom")

    assert p.ingress_fn is not None  # the compiled control (gen_control_block): untraced packets
    p.ingress_fn = broken
    data = bytes(Ether() / IP() / UDP())
    with caplog.at_level(logging.WARNING, logger="softnic.switch"):
        for _ in range(3):
            assert sw.process_packet(1, data) == []
    assert sw.stats.engine_errors == 3
    assert sw.stats.assert_failures == 0
    assert "RuntimeError: boom" in sw.stats.last_error
    warnings = [r for r in caplog.records if r.name == "softnic.switch"]
    assert len(warnings) == 1  # at most one per second
    assert "RuntimeError: boom" in warnings[0].getMessage()


def test_parser_error_is_traced_by_name():
    lines: list[str] = []
    sw = load_switch("basic_l3", trace=lines.append)
    sw.process_packet(1, bytes(Ether() / IP())[:20])
    assert any("Exception while parsing: PacketTooShort" in ln for ln in lines)
    assert not any("Parser error 1" in ln for ln in lines)


RESUBMIT_P4 = r"""
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { eth_t eth; }
struct meta_t {
    @field_list(1) bit<8> kept;
    bit<8> dropped;
}

parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0) {
            m.kept = 0x11;
            m.dropped = 0x22;
            if (h.eth.etype == 1) {
                resubmit_preserving_field_list(1);
            } else {
                sm.egress_spec = 2;
            }
        } else {
            sm.egress_spec = 3;
            h.eth.dst = (bit<48>)sm.ingress_port;
            h.eth.src = (bit<48>)(m.kept ++ m.dropped);
        }
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0 && h.eth.etype == 2) {
            recirculate_preserving_field_list(1);
        }
    }
}
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def resubmit_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    src = Path(tmp_path_factory.mktemp("resub")) / "resub.p4"
    src.write_text(RESUBMIT_P4)
    bmv2_json, _ = compile_file(src)
    return bmv2_json


@pytest.mark.parametrize("etype", [1, 2], ids=["resubmit", "recirculate"])
def test_resubmit_and_recirculate_reset_metadata_like_bmv2(resubmit_json: dict, etype: int):
    sw = Switch()
    sw.load_json(copy.deepcopy(resubmit_json))
    frame = bytes(12) + etype.to_bytes(2, "big") + b"payload"
    out = sw.process_packet(7, frame)
    assert len(out) == 1 and out[0][0] == 3
    eth = out[0][1]
    # ingress_port reset to 0 (it is not in the field list), the preserved field kept, the
    # other metadata reset
    assert int.from_bytes(eth[0:6], "big") == 0
    assert int.from_bytes(eth[6:12], "big") == 0x1100
    assert sw.stats.engine_errors == 0
