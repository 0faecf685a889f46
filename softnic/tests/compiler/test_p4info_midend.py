"""The P4Info describes the front end's program: mid-end rewrites do not change it.

p4c-bm2-ss serializes its P4Info after the front end and before the BMv2 mid end
(backends/bmv2/simple_switch/main.cpp). Its serializer lists every action left in a control
after the front end (control-plane/p4RuntimeSerializer.cpp, ``analyzeControl``: all the
control's ``P4Action`` locals; the front end's RemoveAllUnusedDeclarations has dropped the
unreferenced ones and its InlineActions has inlined, then dropped, those only called from
other actions), with their directionless parameters. Expectations follow those rules and p4c's
golden outputs (testdata/p4_16_samples_outputs/<sample>.p4info.txtpb), named at each test.
The packets are worked out by hand from the P4_16 spec (the ``h`` header is ``a``, ``b``).

softnic has no mid-end pass that removes a table, so there is no such case here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softnic.compiler.p4info.serialize import build_p4info
from softnic.runtime.p4rt.pipeline import verify
from softnic.tests.compiler.p4progs import compile_text, program, run_b


def compiled(tmp_path: Path, body: str) -> tuple[dict[str, Any], p4info_pb2.P4Info]:
    bmv2, res = compile_text(tmp_path, program(body))
    return bmv2, build_p4info(res)


def actions(info: p4info_pb2.P4Info) -> dict[str, list[tuple[str, int]]]:
    """Action name -> its P4Info parameters (name, bitwidth)."""
    return {a.preamble.name: [(p.name, p.bitwidth) for p in a.params] for a in info.actions}


def pipeline_accepts(bmv2: dict[str, Any], info: p4info_pb2.P4Info) -> None:
    """softnic's P4Runtime SetForwardingPipelineConfig check takes the pair, as BMv2 does."""
    import json

    config = p4runtime_pb2.ForwardingPipelineConfig()
    config.p4info.CopyFrom(info)
    config.p4_device_config = json.dumps(bmv2).encode()
    verify(config)


def test_directly_called_action_with_runtime_data_is_listed(tmp_path: Path) -> None:
    # p4c's front end keeps rt_a (a direct call references it); only the mid end rewrites the
    # call, after the P4Info is written. Like do_action in p4c's
    # gauntlet_exit_combination_1-bmv2.p4.p4info.txtpb, called directly and listed.
    bmv2, info = compiled(tmp_path, """
  action unused_a() { hdr.h.b = 1; }
  action rt_a(bit<8> v) { hdr.h.b = v + 1; }
  apply { sm.egress_spec = 1; rt_a(hdr.h.a); }""")
    acts = actions(info)
    assert acts["I.rt_a"] == [("v", 8)]
    # never referenced: RemoveAllUnusedDeclarations drops it (foo3 of issue1560-bmv2.p4 is not
    # in that sample's P4Info)
    assert "I.unused_a" not in acts
    # the call runs with the header's value: b = a + 1
    assert run_b(bmv2, 41) == 42
    assert run_b(bmv2, 255) == 0
    pipeline_accepts(bmv2, info)


def test_directly_called_action_with_directional_parameter_is_listed_without_it(
        tmp_path: Path) -> None:
    # gauntlet_inout_slice_table_key-bmv2.p4: simple_action(inout bit<4> dummy), called
    # directly, is in p4c's P4Info with no params. gauntlet_action_return-bmv2.p4: a table's
    # actions = { do_action(h.h.a); } with do_action(inout bit<8> val) is listed with no params.
    bmv2, info = compiled(tmp_path, """
  action bump(inout bit<8> x, bit<8> step) { x = x + step; }
  action inc(inout bit<8> val, bit<8> by) { val = val + by; }
  table t { key = { hdr.h.a : exact; } actions = { inc(hdr.h.b); }
            default_action = inc(hdr.h.b, 2); }
  apply { sm.egress_spec = 1; bump(hdr.h.b, hdr.h.a); t.apply(); }""")
    acts = actions(info)
    assert acts["I.bump"] == [("step", 8)]
    assert acts["I.inc"] == [("by", 8)]
    # copy-in/copy-out: b = b + a, then t's default action adds 2
    assert run_b(bmv2, 3, 4) == 9
    pipeline_accepts(bmv2, info)


def test_action_called_only_from_another_action_is_not_listed(tmp_path: Path) -> None:
    # gauntlet_side_effect_order_1-bmv2.p4: do_action_2 (called directly) calls do_action_1;
    # p4c's P4Info lists ingress.do_action_2 only (front-end InlineActions inlined do_action_1,
    # then RemoveAllUnusedDeclarations dropped it).
    bmv2, info = compiled(tmp_path, """
  action inner(out bit<8> o, bit<8> v) { o = v; }
  action outer(out bit<8> val) { inner(val, 8w9); }
  apply { sm.egress_spec = 1; outer(hdr.h.b); }""")
    acts = actions(info)
    assert acts["I.outer"] == []
    assert "I.inner" not in acts
    assert run_b(bmv2, 1, 2) == 9
    pipeline_accepts(bmv2, info)


def test_action_called_from_an_action_and_listed_by_a_table_is_listed(tmp_path: Path) -> None:
    # The table references the callee, so the front end keeps it (issue1560-bmv2.p4: actions a
    # table lists are in P4Info); the caller, called directly with run-time data, is listed too.
    bmv2, info = compiled(tmp_path, """
  action setb(bit<8> v) { hdr.h.b = v; }
  action twice(bit<8> v) { setb(v); hdr.h.b = hdr.h.b + v; }
  table t { key = { hdr.h.a : exact; } actions = { setb; } }
  apply { sm.egress_spec = 1; twice(hdr.h.a); t.apply(); }""")
    acts = actions(info)
    assert acts["I.setb"] == [("v", 8)]
    assert acts["I.twice"] == [("v", 8)]
    # t is empty: its default NoAction leaves b = a + a
    assert run_b(bmv2, 5) == 10
    pipeline_accepts(bmv2, info)


def test_directly_called_action_listed_in_a_program_with_tuples(tmp_path: Path) -> None:
    # softnic checks a program with tuple types only after EliminateTuples (a mid-end pass that
    # changes nothing the P4Info lists); the direct call still counts.
    bmv2, info = compiled(tmp_path, """
  action rt_a(bit<8> v) { hdr.h.b = v; }
  apply {
    sm.egress_spec = 1;
    tuple<bit<8>, bit<8>> t = {hdr.h.a, 8w1};
    rt_a(t[0] + t[1]);
  }""")
    assert actions(info)["I.rt_a"] == [("v", 8)]
    assert run_b(bmv2, 6) == 7
    pipeline_accepts(bmv2, info)


def test_table_after_exit_is_listed_unless_the_control_has_a_return(tmp_path: Path) -> None:
    # p4c's front end keeps statements after an exit in a control without a return (its
    # RemoveReturns leaves such a control alone: key_after_exit-frontend.p4 still has
    # ``exit; simple_table_0.apply();``), so that table is in the P4Info; the mid end drops it
    # from the JSON (FIDELITY.md: the table stays in the P4Info, BMv2 accepts the pair). In a
    # control with a return, RemoveReturns drops what follows an exit or a return, and
    # RemoveAllUnusedDeclarations the table.
    bmv2, info = compiled(tmp_path, """
  action seta() { hdr.h.b = 7; }
  table dead { actions = { seta; } default_action = seta(); }
  apply { sm.egress_spec = 1; hdr.h.b = 1; exit; dead.apply(); }""")
    assert "I.dead" in {t.preamble.name for t in info.tables}
    assert "I.seta" in actions(info)
    # the exit ends ingress before dead runs: b = 1
    assert run_b(bmv2, 0) == 1
    pipeline_accepts(bmv2, info)

    bmv2, info = compiled(tmp_path, """
  action seta() { hdr.h.b = 7; }
  table dead { actions = { seta; } default_action = seta(); }
  table dead2 { actions = { seta; } default_action = seta(); }
  apply {
    sm.egress_spec = 1; hdr.h.b = 1;
    if (hdr.h.a == 9) { return; }
    if (hdr.h.a == 0) { exit; dead.apply(); } else { return; dead2.apply(); }
  }""")
    tables = {t.preamble.name for t in info.tables}
    assert "I.dead" not in tables and "I.dead2" not in tables
    assert "I.seta" not in actions(info)
    assert run_b(bmv2, 0) == 1
    assert run_b(bmv2, 5) == 1
