"""The permanent differential guard of issue 9: every corpus program, run on softnic, must
produce the packets its STF file expects.

Each ``corpus/<name>.p4`` comes with ``corpus/<name>.stf``; the expected packets in the STF were
worked out by hand from the P4_16 spec and BMv2's documented v1model behaviour (each file says
how), never from softnic's output. So any change to the front end or the engine that alters a
packet fails here.

``KNOWN_DIFFERENCES`` lists the programs softnic refuses or gets wrong today, with the reason;
they run as strict xfails, so a fix that makes one pass fails the suite until its entry is
removed here (the list stays exact).

Every program runs on both engines with the same runner: the Python engine
(``softnic.runtime.switch.Switch``) and the xdp engine (``softnic.runtime.xdp.engine.XdpSwitch``,
skipped where ``softnic.runtime.xdp.libbpf.missing_requirements()`` says XDP cannot run).
``XDP_REFUSED`` lists the programs outside the xdp subset with the construct the generator
refuses (``XdpUnsupported``); docs/xdp_subset.md says the same. Every other program must pass
its STF on the xdp engine as it does on the Python engine, and a program that starts or stops
being refused fails until ``XDP_REFUSED`` (and the doc) are updated.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.xdp.errors import TARGET, XdpUnsupported
from softnic.runtime.xdp import libbpf
from softnic.tests.stf.stf import (
    Expectation,
    StfError,
    StfRunner,
    match_packet,
    parse_stf,
    run_stf,
)

CORPUS = Path(__file__).parent / "corpus"

DOCS = Path(__file__).resolve().parents[3] / "docs"

# name -> why softnic differs from p4c + BMv2 today (issue 9 items); strict xfails.
KNOWN_DIFFERENCES: dict[str, str] = {}

# name -> the construct the xdp generator refuses the program for (XdpUnsupported.construct,
# the message's "<construct> is not supported by the xdp target"). Exact: docs/xdp_subset.md
# lists the same programs.
XDP_REFUSED: dict[str, str] = {
    "clone_mirror": "clone (clone / clone_preserving_field_list)",
    "header_union_stacks": "header unions",
    "multicast": "multicast (a write to standard_metadata.mcast_grp)",
    "resubmit_recirculate": "resubmit",
    "varbit": "a varbit field (extract with a length)",
}


def _programs() -> list[str]:
    return sorted(p.stem for p in CORPUS.glob("*.p4"))


def _param(name: str, xdp: bool = False) -> object:
    reason = None if xdp and name in XDP_REFUSED else KNOWN_DIFFERENCES.get(name)
    marks = [pytest.mark.xfail(strict=True, reason="KNOWN_DIFFERENCES (an XPASS means it is "
                               f"fixed: remove the entry): {reason}")] if reason else []
    return pytest.param(name, marks=marks, id=name)


@functools.cache
def _compiled(name: str) -> dict[str, Any]:
    return compile_file(CORPUS / f"{name}.p4")[0]


def _json(name: str) -> dict[str, Any]:
    """The program's BMv2 JSON, compiled once for both engines (each run gets its own copy)."""
    return copy.deepcopy(_compiled(name))


@pytest.mark.parametrize("name", [_param(n) for n in _programs()])
def test_corpus_program(name: str) -> None:
    res = run_stf(_json(name), (CORPUS / f"{name}.stf").read_text())
    assert res.passed, f"{name}.stf:\n" + "\n".join(res.failures())


@pytest.fixture(scope="module")
def xdp_engine(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Any]:
    """Makes an XdpSwitch (one per program: loading compiles its C) building in a temp dir."""
    missing = libbpf.missing_requirements()
    if missing:
        pytest.skip("the xdp engine cannot run here: " + "; ".join(missing))
    from softnic.runtime.xdp.engine import XdpSwitch

    build = tmp_path_factory.mktemp("xdp")
    return lambda: XdpSwitch(build_dir=build)


@pytest.mark.parametrize("name", [_param(n, xdp=True) for n in _programs()])
def test_corpus_program_xdp(name: str, xdp_engine: Callable[[], Any]) -> None:
    """The same STF on the xdp engine, or, for a program in XDP_REFUSED, the generator's
    refusal of exactly that construct."""
    stf = (CORPUS / f"{name}.stf").read_text()
    construct = XDP_REFUSED.get(name)
    try:
        res = run_stf(_json(name), stf, xdp_engine)
    except XdpUnsupported as e:
        assert str(e).endswith(f" is not supported by {TARGET}"), str(e)
        assert construct is not None, (f"the xdp generator refuses {name} ({e}): fix the "
                                       "generator, or add it to XDP_REFUSED and "
                                       "docs/xdp_subset.md")
        assert e.construct == construct and str(e).endswith(
            f"{construct} is not supported by {TARGET}"), (
            f"{name} is refused for another construct than XDP_REFUSED says: {e}")
        return
    assert construct is None, (f"{name} is no longer refused by the xdp generator "
                               f"(XDP_REFUSED: {construct!r}): remove it from XDP_REFUSED "
                               "and docs/xdp_subset.md")
    assert res.passed, f"{name}.stf on the xdp engine:\n" + "\n".join(res.failures())


def test_xdp_subset_doc_lists_the_refused_programs() -> None:
    """docs/xdp_subset.md names each program of XDP_REFUSED with its construct, and no other
    corpus program."""
    doc = DOCS / "xdp_subset.md"
    if not doc.is_file():
        pytest.skip(f"{doc} not here (an installed package)")
    text = doc.read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] in _programs():
            rows[cells[0]] = cells[1]
    assert rows == XDP_REFUSED


def test_corpus_is_complete() -> None:
    """Every program has its STF and the other way round; KNOWN_DIFFERENCES names only
    corpus programs; every STF has at least one expectation."""
    p4 = {p.stem for p in CORPUS.glob("*.p4")}
    stf = {p.stem for p in CORPUS.glob("*.stf")}
    assert p4 == stf
    assert len(p4) >= 14
    assert set(KNOWN_DIFFERENCES) <= p4
    assert set(XDP_REFUSED) <= p4
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
