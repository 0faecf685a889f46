"""The permanent differential guard of issue 9: every corpus program, run on softnic, must
produce the packets its STF file expects.

Each ``corpus/<name>.p4`` comes with ``corpus/<name>.stf``; the expected packets in the STF were
worked out by hand from the P4_16 spec and BMv2's documented v1model behaviour (each file says
how), never from softnic's output. So any change to the front end or the engine that alters a
packet fails here.

``KNOWN_DIFFERENCES`` lists the programs softnic refuses or gets wrong today, with the reason;
they run as strict xfails, so a fix that makes one pass fails the suite until its entry is
removed here (the list stays exact).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.tests.stf.stf import (
    Expectation,
    StfError,
    StfRunner,
    match_packet,
    parse_stf,
    run_stf,
)

CORPUS = Path(__file__).parent / "corpus"

# name -> why softnic differs from p4c + BMv2 today (issue 9 items); strict xfails.
KNOWN_DIFFERENCES: dict[str, str] = {}


def _programs() -> list[str]:
    return sorted(p.stem for p in CORPUS.glob("*.p4"))


def _param(name: str) -> object:
    reason = KNOWN_DIFFERENCES.get(name)
    marks = [pytest.mark.xfail(strict=True, reason="KNOWN_DIFFERENCES (an XPASS means it is "
                               f"fixed: remove the entry): {reason}")] if reason else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_param(n) for n in _programs()])
def test_corpus_program(name: str) -> None:
    bmv2_json, _ = compile_file(CORPUS / f"{name}.p4")
    res = run_stf(bmv2_json, (CORPUS / f"{name}.stf").read_text())
    assert res.passed, f"{name}.stf:\n" + "\n".join(res.failures())


def test_corpus_is_complete() -> None:
    """Every program has its STF and the other way round; KNOWN_DIFFERENCES names only
    corpus programs; every STF has at least one expectation."""
    p4 = {p.stem for p in CORPUS.glob("*.p4")}
    stf = {p.stem for p in CORPUS.glob("*.stf")}
    assert p4 == stf
    assert len(p4) >= 14
    assert set(KNOWN_DIFFERENCES) <= p4
    for name in stf:
        cmds = parse_stf((CORPUS / f"{name}.stf").read_text())
        assert any(c.verb == "expect" for c in cmds), name


# ---------------------------------------------------------------- the reader itself

def test_match_packet_wildcards_and_end_marker() -> None:
    exp = Expectation(1, 0, "0A*B", exact_length=False)
    assert match_packet(exp, bytes([0x0A, 0x5B])) is None
    assert match_packet(exp, bytes([0x0A, 0x5B, 0x00])) is None  # longer is fine without '$'
    assert match_packet(exp, bytes([0x0A, 0x5C])) is not None
    assert match_packet(exp, bytes([0x0A])) is not None
    strict = Expectation(1, 0, "0A*B", exact_length=True)
    assert match_packet(strict, bytes([0x0A, 0x5B, 0x00])) is not None


def test_parse_comments_and_blank_lines() -> None:
    cmds = parse_stf("# c\n\npacket 0 01 02  # tail\n expect 1 01 02 $\n")
    assert [(c.lineno, c.verb, c.rest) for c in cmds] == [(3, "packet", "0 01 02"),
                                                         (4, "expect", "1 01 02 $")]


_TINY = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<8> v) { sm.egress_spec = port; hdr.h.b = v; }
    action drop() { mark_to_drop(sm); }
    table t { key = { hdr.h.a : ternary; } actions = { fwd; drop; } default_action = drop(); }
    apply { t.apply(); }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def tiny_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = tmp_path_factory.mktemp("stf") / "tiny.p4"
    path.write_text(_TINY)
    return compile_file(path)[0]


def test_runner_priorities_ports_and_extras(tiny_json: dict) -> None:
    stf = """
add t 1 a:0x**  fwd(port:2, v:1)
add I.t 9 hdr.h.a:0x1* fwd(port:3, v:9)
packet 0 15 00
packet 0 25 00
expect 3 15 09 $
expect 2 25 01 $
"""
    assert run_stf(tiny_json, stf).passed
    # a packet on a port that a line names but no expectation covers is a failure ...
    res = run_stf(tiny_json, stf.replace("expect 2 25 01 $", "packet 2 00 00"))
    assert not res.passed and "unexpected packet" in res.failures()[0]
    # (a port no line names has no interface in p4c's runner: what goes there is lost)
    assert run_stf(tiny_json, stf.replace("expect 2 25 01 $", "")).passed
    # ... and so is a wrong byte, or an expectation of a packet that never comes
    assert not run_stf(tiny_json, stf.replace("25 01 $", "25 02 $")).passed
    assert not run_stf(tiny_json, stf + "expect 2 25 01\n").passed
    # 'expect <port>' alone accepts whatever that port emits
    assert run_stf(tiny_json, stf.replace("expect 2 25 01 $", "expect 2")).passed


def test_runner_setdefault_and_errors(tiny_json: dict) -> None:
    assert run_stf(tiny_json, "setdefault t fwd(port:4, v:7)\npacket 0 00 00\n"
                              "expect 4 00 07$\n").passed
    assert run_stf(tiny_json, "packet 0 00 00\n").passed  # default drop: nothing out
    for bad in ("add nosuch fwd(port:1, v:1)", "add t a:1 nosuch()", "add t a:1 fwd(port:1)",
                "frobnicate 1", "packet 0 123"):
        with pytest.raises(StfError):
            run_stf(tiny_json, bad + "\n")
    assert isinstance(StfRunner(tiny_json).sw.stats.engine_errors, int)
