"""Corpus programs compiled by ``softnic compile`` and served over P4Runtime.

For every table of the P4Info the test reads the (empty or const) entries and the default entry,
and for each writable table inserts one entry built generically from the P4Info (value 1 in every
key field, the first parameterless entry action) and reads it back - the round trip a controller
does for any program. Const-entry tables must refuse writes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from softnic.runtime.p4rt import P4RuntimeServer
from softnic.tests.runtime import test_p4rt_fixture as fx
from softnic.tests.runtime.test_p4rt_fixture import Client, update, write_errors

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
MT = p4info_pb2.MatchField


def compile_program(name: str, out: Path) -> tuple[bytes, p4info_pb2.P4Info]:
    json_path, info_path = out / f"{name}.json", out / f"{name}.p4info.txt"
    res = subprocess.run([sys.executable, "-m", "softnic.cli", "compile", str(CORPUS / name),
                          "-o", str(json_path), "--p4runtime-files", str(info_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json_path.read_bytes(), text_format.Parse(info_path.read_text(), p4info_pb2.P4Info())


def generic_entry(info: p4info_pb2.P4Info, t: p4info_pb2.Table) -> pb.TableEntry | None:
    actions = {a.preamble.id: a for a in info.actions}
    choice = next((actions[r.id] for r in t.action_refs
                   if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY and not actions[r.id].params),
                  None)
    if choice is None or t.implementation_id:
        return None
    e = pb.TableEntry(table_id=t.preamble.id)
    for f in t.match_fields:
        fm = e.match.add(field_id=f.id)
        one = b"\x01"
        if f.match_type == MT.EXACT:
            fm.exact.value = one
        elif f.match_type == MT.LPM:
            fm.lpm.value, fm.lpm.prefix_len = one, f.bitwidth
        elif f.match_type == MT.TERNARY:
            fm.ternary.value, fm.ternary.mask = one, one
        elif f.match_type == MT.RANGE:
            fm.range.low, fm.range.high = one, one
        elif f.match_type == MT.OPTIONAL:
            fm.optional.value = one
        else:
            return None
    if any(f.match_type in (MT.TERNARY, MT.RANGE, MT.OPTIONAL) for f in t.match_fields):
        e.priority = 1
    e.action.action.action_id = choice.preamble.id
    return e


@pytest.mark.parametrize("program", ["tables_all_kinds.p4", "digest_packetio.p4",
                                     "basic_l3.p4"])
def test_corpus_program_over_p4runtime(program: str, tmp_path: Path) -> None:
    device_config, info = compile_program(program, tmp_path)
    srv = P4RuntimeServer(fx.make_switch(), device_id=0, cpu_port=fx.CPU_PORT)
    port = srv.start("127.0.0.1:0")
    c = Client(f"127.0.0.1:{port}")
    try:
        c.set_pipeline(device_config=device_config, p4info_msg=info)
        for t in info.tables:
            before = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=t.preamble.id)))
            assert all(e.table_entry.is_const for e in before) or not t.is_const_table
            [d] = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=t.preamble.id,
                                                             is_default_action=True)))
            assert d.table_entry.action.action.action_id in {r.id for r in t.action_refs}
            e = generic_entry(info, t)
            if e is None:
                continue
            if t.is_const_table:
                with pytest.raises(grpc.RpcError) as err:
                    c.write(update("INSERT", "table_entry", e))
                assert write_errors(err.value)[0].canonical_code != 0
                continue
            c.write(update("INSERT", "table_entry", e))
            after = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=t.preamble.id)))
            assert len(after) == len(before) + 1
            assert any(list(a.table_entry.match) == list(e.match) for a in after)
    finally:
        c.close()
        srv.stop(0)
