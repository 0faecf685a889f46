"""The P4Runtime layer (p4runtime-shell) against a real ``softnic run --no-p4``."""

from __future__ import annotations

import threading

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from p4runtime_sh import shell as sh

from p4cache import dataplane as dp
from p4cache import program
from p4cache.controller.p4rt import PipelineFiles, Switch, SwitchError, SwitchUnavailable
from p4cache.controller.promote import SET_SLOT, lookup_match
from p4cache.controller.updates import Endpoint, Updates

from .conftest import SERVER_IP, free_port


def connect(addr: str, pipeline: PipelineFiles, **kw) -> Switch:
    sw = Switch(addr, pipeline, **kw)
    sw.connect()
    return sw


def test_pipeline_is_pushed_once_and_kept_across_controller_restarts(softnic, pipeline
                                                                     ) -> None:
    sw = connect(softnic.addr, pipeline)
    try:
        assert sw.pushed_pipeline
        sw.insert(sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, b"k"), SET_SLOT,
                           {"slot": "3"}))
    finally:
        sw.close()
    sw = connect(softnic.addr, pipeline)
    try:
        assert not sw.pushed_pipeline, "same cookie: the running program is left alone"
        [row] = sw.read_entries(dp.TABLE_LOOKUP)   # and so is its state
        assert row.params == {"slot": 3}
    finally:
        sw.close()


def test_a_different_program_is_pushed(softnic, pipeline, tmp_path) -> None:
    sw = connect(softnic.addr, pipeline)
    sw.insert(sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, b"k"), SET_SLOT, {"slot": "3"}))
    sw.close()
    # The same P4Info with a BMv2 JSON that differs by one byte: another cookie.
    other_json = tmp_path / "other.json"
    other_json.write_bytes(pipeline.bmv2_json.read_bytes() + b"\n")
    other = PipelineFiles(other_json, pipeline.p4info)
    assert other.cookie != pipeline.cookie
    sw = connect(softnic.addr, other)
    try:
        assert sw.pushed_pipeline
        assert sw.read_entries(dp.TABLE_LOOKUP) == [], "a new pipeline starts empty"
    finally:
        sw.close()


def test_entries_by_name_insert_install_read_back_delete(softnic, pipeline) -> None:
    sw = connect(softnic.addr, pipeline)
    try:
        key = b"user:1234"
        te = sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, key), SET_SLOT, {"slot": "42"})
        sw.insert(te)
        with pytest.raises(SwitchError) as e:
            sw.insert(te)
        assert e.value.code == code_pb2.ALREADY_EXISTS
        sw.install(te)                                         # idempotent: modify
        sw.install(sw.entry(dp.TABLE_ALLOWLIST, {"src_addr": "10.0.0.0/24"},
                            "CacheIngress.lookup.allow_client"))
        sw.install(sw.entry(dp.TABLE_AGENTS, {"ingress_port": "1", "src_addr": SERVER_IP},
                            "CacheIngress.control_trust.trust_agent"))
        [row] = sw.read_entries(dp.TABLE_LOOKUP)
        assert row.action == SET_SLOT and row.params == {"slot": 42}
        assert row.match == {"server_addr": 0x0A000001, "key_len": len(key),
                             "key": int.from_bytes(key, "big")}
        assert dp.key_from_match(row.match["key_len"], row.match["key"]) == key
        [allow] = sw.read_entries(dp.TABLE_ALLOWLIST)
        assert allow.match == {"src_addr": (0x0A000000, 24)}
        [agent] = sw.read_entries(dp.TABLE_AGENTS)
        assert agent.match == {"ingress_port": 1, "src_addr": 0x0A000001}
        sw.delete(sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, key)))
        assert sw.read_entries(dp.TABLE_LOOKUP) == []
        with pytest.raises(SwitchError) as e:
            sw.delete(sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, key)))
        assert e.value.code == code_pb2.NOT_FOUND
        with pytest.raises(SwitchError):
            sw.entry("CacheIngress.lookup.no_such_table", {})
    finally:
        sw.close()


def test_batched_writes_tolerate_what_they_may_and_report_the_rest(softnic, pipeline) -> None:
    """insert_many / delete_many: one WriteRequest; an entry already there (insert) or already
    gone (delete) among applied ones is no error, any other failure is raised, naming the
    update (a batch with some updates applied and one refused once hung p4runtime-shell's
    error reader)."""
    sw = connect(softnic.addr, pipeline)
    try:
        def te(key: bytes, slot: int):
            return sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, key), SET_SLOT,
                            {"slot": str(slot)})
        sw.insert(te(b"b", 2))
        sw.insert_many([te(b"a", 1), te(b"b", 2), te(b"c", 3)])       # b exists: fine
        assert len(sw.read_entries(dp.TABLE_LOOKUP)) == 3
        sw.delete_many([sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, k))
                        for k in (b"a", b"gone", b"c")])               # gone: fine
        [row] = sw.read_entries(dp.TABLE_LOOKUP)
        assert row.params == {"slot": 2}
        # an entry of a table the program does not have is refused by the switch
        good = te(b"y", 8)

        class NoSuchTable:
            name = good.name

            def msg(self) -> p4runtime_pb2.TableEntry:
                m = p4runtime_pb2.TableEntry()
                m.CopyFrom(good.msg())
                m.table_id = 1
                return m
        bad = NoSuchTable()
        with pytest.raises(SwitchError) as e:
            sw.insert_many([te(b"x", 7), bad])
        assert "update 1" in str(e.value), str(e.value)
        assert e.value.code not in (code_pb2.OK, code_pb2.ALREADY_EXISTS)
        assert len(sw.read_entries(dp.TABLE_LOOKUP)) == 2, "the other update was applied"
    finally:
        sw.close()


def test_counters_digest_config_and_packet_io(softnic, pipeline) -> None:
    sw = connect(softnic.addr, pipeline)
    try:
        got: list = []
        up = Updates(sw.packet_out, "10.0.0.254", "02:00:00:00:00:fe")
        sw.start_stream(on_packet_in=lambda p: up.on_packet_in(p.payload),
                        on_digest=got.append, on_lost=got.append)
        sw.enable_digest(dp.DIGEST_HOT_KEY)
        sw.enable_digest(dp.DIGEST_HOT_KEY, ack_timeout_ns=2 * 10**9)   # again: modified
        [d] = list(sh.DigestEntry(dp.DIGEST_HOT_KEY).read())
        assert d.ack_timeout_ns == 2 * 10**9 and d.max_list_size == 1
        stats = sw.read_counter(dp.COUNTER_STATS)
        assert sorted(stats) == list(range(dp.STATS_SIZE))
        assert all(v == (0, 0) for v in stats.values())
        # A control datagram as a packet-out comes back as a packet-in (the ack).
        ack = up.update(Endpoint(SERVER_IP), 5, 9, dp.render_value_reply(b"k", 0, b"v"))
        assert ack.status == dp.STATUS_APPLIED
        stats = sw.read_counter(dp.COUNTER_STATS)
        assert stats[dp.STAT_UPDATE][0] == 1
        assert sw.read_counter_cells(dp.COUNTER_SLOT_HITS, [5, 6]) == {5: 0, 6: 0}
        assert up.stats.retransmissions == 0 and got == []
    finally:
        sw.close()


def test_losing_the_switch_is_reported_once(softnic, pipeline) -> None:
    sw = connect(softnic.addr, pipeline)
    lost = []
    done = threading.Event()
    sw.start_stream(on_packet_in=lambda p: None, on_digest=lambda d: None,
                    on_lost=lambda why: (lost.append(why), done.set()))
    softnic.stop()
    assert done.wait(10), "stream end not noticed"
    assert len(lost) == 1 and not sw.connected
    with pytest.raises(SwitchUnavailable):
        sw.packet_out(b"x")
    sw.close()


def test_unreachable_switch_and_second_client(pipeline, softnic) -> None:
    with pytest.raises(SwitchUnavailable):
        Switch(f"127.0.0.1:{free_port()}", pipeline, connect_timeout=0.5).connect()
    sw = connect(softnic.addr, pipeline)
    try:
        with pytest.raises(SwitchError, match="one client per process"):
            Switch(softnic.addr, pipeline).connect()
    finally:
        sw.close()


def test_cookie_is_a_fingerprint_of_both_files(tmp_path) -> None:
    prog = program.build()
    a = PipelineFiles(prog.json_path, prog.p4info_path)
    assert a.cookie == PipelineFiles(prog.json_path, prog.p4info_path).cookie
    p4info = tmp_path / "p.txt"
    p4info.write_text(prog.p4info_path.read_text() + "\n# changed\n")
    assert PipelineFiles(prog.json_path, p4info).cookie != a.cookie
