"""P4Info built from the checked program (``p4info.collect.collect_resources``).

The P4Info used to be collected by the BMv2 lowering on the way; it is now built from the
checker's findings alone. The P4Info of every program here must be exactly the one the
lowering produced, byte for byte in text format: the files in ``p4info_golden/`` were written
by the lowering-based collector before it was removed (commit c8a76a1).

The programs: the whole corpus, the project's own p4cache.p4 (as ``p4cache.program.build``
compiles it), the bench and demo programs, and programs written here to reach every kind of
object and every ordering rule (tables in ``if``/``switch`` branches, after an ``exit``, never
applied; registers, counters, meters, direct ones, one unused; digests in actions, in apply
blocks and in inlined directional actions; controller headers; sub-controls inlined twice).

When a change to the front end legitimately changes a P4Info, rewrite the golden files with
``SOFTNIC_UPDATE_P4INFO_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.frontend.check import Checker
from softnic.compiler.frontend.parser import parse_program
from softnic.compiler.frontend.passes import front_end_passes
from softnic.compiler.frontend.preprocess import preprocess
from softnic.compiler.p4info.collect import collect_resources
from softnic.compiler.p4info.serialize import build_p4info, serialize_p4info

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
CORPUS = HERE.parent / "corpus"
GOLDEN = HERE / "p4info_golden"
UPDATE = os.environ.get("SOFTNIC_UPDATE_P4INFO_GOLDEN") == "1"

HEAD = """#include <core.p4>
#include <v1model.p4>
@controller_header("packet_in") @id(3)
header cpu_in_t { bit<9> port; bit<7> pad; }
@controller_header("packet_out")
header cpu_out_t { bit<9> port; @brief("pad") bit<7> pad; }
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct d1_t { bit<8> a; bit<16> c; }
struct d2_t { bit<9> port; }
struct hs_t { cpu_out_t pout; h_t h; cpu_in_t pin; }
struct m_t { bit<8> x; bit<32> color; d1_t d; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.pin); pkt.emit(hdr.h); } }
"""
EMPTY_EGRESS = """
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
"""
MAIN = "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"
# Tables everywhere: hit/miss, switch on action_run, tables in both branches, nested ifs,
# a table after an exit (not built), a table never applied, @id, annotations, entries.
TABLES = HEAD + """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    @id(0x01000101) action set_b(@brief("val") bit<8> v) { hdr.h.b = v; }
    action set_c(bit<16> c, bit<8> k) { hdr.h.c = c; hdr.h.a = k; }
    @name("MyDrop") action drop() { mark_to_drop(sm); }
    action learn() { digest<d1_t>(1, {hdr.h.a, hdr.h.c}); }
    action nop() { }
    table first {
        key = { hdr.h.a: exact @name("a_key"); hdr.h.c & 0xff00: ternary; }
        actions = { set_b; @tableonly set_c; @defaultonly drop; }
        default_action = drop();
        size = 64;
    }
    @brief("second table") table second {
        key = { hdr.h.b: lpm; hdr.h.isValid(): exact; }
        actions = { set_c; learn; }
        default_action = set_c(0x1234, 3);
    }
    table third {
        key = { hdr.h.c: range; meta.x: optional; }
        actions = { nop; set_b; }
        const entries = { (1 .. 5, 3): set_b(9); (_, _): nop(); }
    }
    table fourth { actions = { learn; nop; } const default_action = nop(); }
    table fifth { key = { hdr.h.a: exact; } actions = { set_b; } }
    @id(77) table never_applied { actions = { nop; } }
    table after_exit { actions = { set_c; } }
    apply {
        if (first.apply().hit) {
            switch (second.apply().action_run) {
                set_c: { third.apply(); }
                default: { fourth.apply(); }
            }
        } else if (hdr.h.a == 3) {
            fifth.apply();
            exit;
            after_exit.apply();
        }
        meta.x = 1;
    }
}
""" + EMPTY_EGRESS + MAIN

# Extern instances: registers (signed too), counters, meters, direct ones (one unused),
# instances at top level and in both controls, digests in egress too.
EXTERNS = HEAD + """
@id(5) register<bit<32>>(16) top_reg;
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    register<int<16>>(8) sreg;
    counter(32, CounterType.packets_and_bytes) pkts;
    @brief("m") meter(4, MeterType.bytes) m_bytes;
    direct_counter(CounterType.bytes) dc;
    direct_counter(CounterType.packets) dc_unused;
    direct_meter<bit<32>>(MeterType.packets) dm;
    action count_it() { pkts.count((bit<32>)hdr.h.a); sreg.write(0, 5); }
    action meter_it() { dm.read(meta.color); }
    action rd() { bit<32> v; top_reg.read(v, 1); hdr.h.c = (bit<16>)v; }
    table with_dc { key = { hdr.h.a: exact; } actions = { count_it; NoAction; } counters = dc; }
    table with_dm { key = { hdr.h.b: exact; } actions = { meter_it; } meters = dm; }
    apply {
        with_dc.apply();
        m_bytes.execute_meter((bit<32>)hdr.h.a, meta.color);
        with_dm.apply();
        rd();
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    counter(2, CounterType.packets) ecnt;
    action e_learn() { digest<d2_t>(2, {sm.egress_port}); }
    table etab { key = { sm.egress_port: exact; } actions = { e_learn; } }
    apply { ecnt.count(0); etab.apply(); digest<d1_t>(1, {hdr.h.a, hdr.h.c}); }
}
""" + MAIN

# Sub-controls inlined (twice), direct action calls (with and without directional
# parameters), digests in plain statement runs, a return that ends the block.
INLINED = HEAD + """
control Sub(inout hs_t hdr, inout m_t meta) {
    action s_set(bit<8> v) { hdr.h.a = v; }
    table s_tab { key = { hdr.h.b: exact; } actions = { s_set; } }
    apply { s_tab.apply(); }
}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Sub() sub1;
    Sub() sub2;
    action bump(inout bit<8> x) { x = x + 1; digest<d2_t>(3, {sm.ingress_port}); }
    action to_port(bit<9> p) { sm.egress_spec = p; }
    action dm() { digest<d1_t>(1, meta.d); }
    table last { actions = { dm; } }
    table unreachable { actions = { to_port; } }
    apply {
        sub1.apply(hdr, meta);
        bump(hdr.h.b);
        to_port(3);
        digest<d1_t>(4, {hdr.h.b, hdr.h.c});
        if (hdr.h.a == 0) {
            sub2.apply(hdr, meta);
            return;
        }
        last.apply();
        return;
        unreachable.apply();
    }
}
""" + EMPTY_EGRESS + MAIN

# A switch on a value and !hit / miss conditions.
SWITCHES = HEAD + """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action a1() { hdr.h.a = 1; }
    action a2(bit<8> v) { hdr.h.a = v; }
    table t1 { key = { hdr.h.a: exact; } actions = { a1; a2; } }
    table t2 { key = { hdr.h.b: exact; } actions = { a2; a1; } default_action = a2(-1); }
    table t3 { actions = { a1; } }
    apply {
        switch (hdr.h.b) {
            1: { t3.apply(); }
            2: { if (!t1.apply().miss) { a1(); } }
            default: { }
        }
        if (!t2.apply().hit) { a2(8w5); }
    }
}
""" + EMPTY_EGRESS + MAIN

INLINE = {"tables": TABLES, "externs": EXTERNS, "inlined": INLINED, "switches": SWITCHES}


@dataclass(frozen=True)
class Case:
    name: str  # golden file stem
    path: Path | None = None  # a program on disk, or
    source: str = ""  # an inline program
    include_dirs: tuple[str, ...] = ()
    defines: dict[str, str | None] = field(default_factory=dict)


CASES = [
    *(Case(f"corpus_{p.stem}", p) for p in sorted(CORPUS.glob("*.p4"))),
    Case("p4cache", ROOT / "p4src" / "v1model" / "p4cache.p4"),
    Case("p4cache_kmax32", ROOT / "p4src" / "v1model" / "p4cache.p4",
         defines={"KMAX": "32", "KEY_BITS": "256"}),
    Case("bench_stateful", ROOT / "bench" / "p4cache_bench" / "p4" / "stateful.p4"),
    Case("l3_demo_basic", ROOT / "topo" / "l3-demo" / "basic.p4"),
    *(Case(f"inline_{name}", source=src) for name, src in INLINE.items()),
]


def program_path(case: Case, tmp_path: Path) -> Path:
    if case.path is not None:
        return case.path
    path = tmp_path / f"{case.name}.p4"
    path.write_text(case.source)
    return path


def checked(path: Path, case: Case) -> Checker:
    """The checker's state after ``run()`` on the front end's program, which the P4Info is built
    from (as p4c-bm2-ss serializes it before its mid end)."""
    text = preprocess(str(path), list(case.include_dirs), dict(case.defines))
    prog = parse_program(text, str(path))
    for _name, run in front_end_passes():
        run(prog)
    chk = Checker(prog)
    chk.run()
    return chk


def golden(case: Case, text: bytes) -> bytes:
    gpath = GOLDEN / f"{case.name}.txt"
    if UPDATE:
        gpath.write_bytes(text)
    return gpath.read_bytes()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_p4info_from_the_checked_program_is_unchanged(case: Case, tmp_path: Path) -> None:
    path = program_path(case, tmp_path)
    res = collect_resources(checked(path, case), str(path))
    text = serialize_p4info(build_p4info(res), "text")
    assert text == golden(case, text)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_compile_returns_the_same_p4info(case: Case, tmp_path: Path) -> None:
    path = program_path(case, tmp_path)
    _, res = compile_file(path, include_dirs=case.include_dirs, defines=case.defines)
    text = serialize_p4info(build_p4info(res), "text")
    assert text == (GOLDEN / f"{case.name}.txt").read_bytes()


def test_the_cases_reach_every_kind_of_object() -> None:
    """The golden files cover every P4Info section and the ordering rules named above."""
    texts = {p.stem: p.read_text() for p in GOLDEN.glob("*.txt")}
    assert {c.name for c in CASES} <= set(texts)
    everything = "".join(texts.values())
    for section in ("tables {", "actions {", "counters {", "direct_counters {", "meters {",
                    "direct_meters {", "registers {", "digests {",
                    "controller_packet_metadata {", "initial_default_action {",
                    "const_default_action_id:", "is_const_table: true"):
        assert section in everything, section
    tables = texts["inline_tables"]
    # built last to first: the table applied last in the source comes first
    assert tables.index('name: "I.third"') < tables.index('name: "I.first"')
    assert "I.never_applied" not in tables
    # applied only after an exit in a control without a return: p4c's front end keeps it (its
    # RemoveReturns leaves such a control alone; key_after_exit-frontend.p4), so it is listed
    assert 'name: "I.after_exit"' in tables
    inlined = texts["inline_inlined"]
    assert "I.sub1.s_tab" in inlined and "I.sub2.s_tab" in inlined
    assert "I.unreachable" not in inlined
    # a directly called action with an inout parameter is listed, without that parameter, as
    # p4c lists simple_action of its gauntlet_inout_slice_table_key-bmv2.p4
    assert 'name: "I.bump"' in inlined
    assert 'name: "d2_t"' in inlined  # the digest inside the inlined directional action
    externs = texts["inline_externs"]
    assert "I.dc_unused" not in externs and 'name: "I.dc"' in externs


APPLY_IN_EXPRESSIONS = HEAD + """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action seta(bit<8> v) { hdr.h.b = v; }
    table t { key = { hdr.h.a: exact; } actions = { seta; } }
    table u { key = { hdr.h.c: exact; } actions = { seta; } }
    apply {
        bool hit = t.apply().hit;
        if (hit) { hdr.h.b = 1; }
        hdr.h.a = u.apply().miss ? 8w1 : 8w2;
    }
}
""" + EMPTY_EGRESS + MAIN


def test_tables_applied_inside_expressions_are_in_the_p4info(tmp_path: Path) -> None:
    """A table applied in an initializer or an assignment is applied: it has a P4Info entry
    with its actions, whatever form the lowering gives the apply."""
    path = tmp_path / "apply_in_expressions.p4"
    path.write_text(APPLY_IN_EXPRESSIONS)
    case = Case("apply_in_expressions", path)
    info = build_p4info(collect_resources(checked(path, case), str(path)))
    assert sorted(t.preamble.name for t in info.tables) == ["I.t", "I.u"]
    assert sorted(a.preamble.name for a in info.actions) == ["I.seta", "NoAction"]
    [u] = [t for t in info.tables if t.preamble.name == "I.u"]
    assert [(m.name, m.bitwidth) for m in u.match_fields] == [("hdr.h.c", 16)]
