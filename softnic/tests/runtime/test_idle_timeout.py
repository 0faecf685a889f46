"""Idle timeouts over real gRPC: P4Runtime ``idle_timeout_ns`` and IdleTimeoutNotification.

The program is compiled by softnic's compiler; its table ``t`` has ``support_timeout = true``
(P4Info: idle_timeout_behavior NOTIFY_CONTROL), ``u`` has not. What the P4Runtime spec and
BMv2/PI do, and these tests expect:
* an entry of ``t`` may carry ``idle_timeout_ns``; on a table without support_timeout the
  update fails with INVALID_ARGUMENT;
* traffic that hits the entry keeps it alive; once it has been idle for longer than its timeout
  the primary client gets one IdleTimeoutNotification naming it (table id, match), and no other
  for the same expiry; the entry stays installed (the controller deletes it). A hit makes it
  live again, and it can expire (and be reported) again;
* a read returns ``idle_timeout_ns`` and, when the request sets ``time_since_last_hit``, the
  time since the entry's last hit (or insertion).
The sweeper runs every 50 ms here (BMv2's default is 1000 ms), so times are loose bounds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb

from softnic.compiler.compile import compile_file
from softnic.compiler.p4info.serialize import build_p4info
from softnic.runtime.p4rt import P4RuntimeServer
from softnic.tests.compiler.p4progs import program
from softnic.tests.runtime import test_p4rt_fixture as fx
from softnic.tests.runtime.test_p4rt_fixture import Client, update, write_errors

BODY = """
  action set_b(bit<8> v) { hdr.h.b = v; }
  table t {
    key = { hdr.h.a : exact; }
    actions = { set_b; NoAction; }
    support_timeout = true;
  }
  table u { key = { hdr.h.b : exact; } actions = { NoAction; } }
  apply { sm.egress_spec = 1; t.apply(); u.apply(); }
"""

MS = 1_000_000


class Env:
    def __init__(self, tmp_path: Path) -> None:
        import json

        src = tmp_path / "idle.p4"
        src.write_text(program(BODY))
        bmv2, res = compile_file(src)
        self.info = build_p4info(res)
        self.switch = fx.make_switch()
        self.srv = P4RuntimeServer(self.switch, device_id=0, cpu_port=fx.CPU_PORT)
        self.srv.service.idle.interval_s = 0.05
        port = self.srv.start("127.0.0.1:0")
        self.client = Client(f"127.0.0.1:{port}")
        self.client.set_pipeline(device_config=json.dumps(bmv2).encode(), p4info_msg=self.info)
        ids = {t.preamble.name: t.preamble.id for t in self.info.tables}
        self.t, self.u = ids["I.t"], ids["I.u"]
        self.set_b = next(a.preamble.id for a in self.info.actions
                          if a.preamble.name == "I.set_b")

    def entry(self, a: int, timeout_ns: int, table: str = "t") -> pb.TableEntry:
        e = pb.TableEntry(table_id=getattr(self, table), idle_timeout_ns=timeout_ns)
        e.match.add(field_id=1).exact.value = bytes([a])
        if table == "t":
            e.action.action.action_id = self.set_b
            e.action.action.params.add(param_id=1, value=b"\x07")
        else:
            e.action.action.action_id = next(a.preamble.id for a in self.info.actions
                                             if a.preamble.name == "NoAction")
        return e

    def send(self, a: int) -> int:
        """One packet (a, 0); the output's second byte (7 when it hit t's entry)."""
        [(port, data)] = self.switch.process_packet(0, bytes([a, 0]))
        assert port == 1
        return data[1]

    def read_t(self, with_hit_time: bool) -> list[pb.TableEntry]:
        req = pb.TableEntry(table_id=self.t)
        if with_hit_time:
            req.time_since_last_hit.SetInParent()
        return [e.table_entry for e in self.client.read(pb.Entity(table_entry=req))]

    def notification(self, timeout: float) -> pb.IdleTimeoutNotification | None:
        m = self.client.next("idle_timeout_notification", timeout=timeout)
        return None if m is None else m.idle_timeout_notification


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    try:
        yield e
    finally:
        e.client.close()
        e.srv.stop()


def test_p4info_marks_the_timeout_table(env: Env) -> None:
    tables = {t.preamble.name: t for t in env.info.tables}
    assert tables["I.t"].idle_timeout_behavior == tables["I.t"].NOTIFY_CONTROL
    assert tables["I.u"].idle_timeout_behavior == tables["I.u"].NO_TIMEOUT


def test_traffic_keeps_the_entry_alive_silence_gives_one_notification(env: Env) -> None:
    env.client.write(update("INSERT", "table_entry", env.entry(5, 300 * MS)))
    # hit every 50 ms for 0.9 s: three times the timeout, never idle for long
    deadline = time.monotonic() + 0.9
    longest_gap = 0.0       # from before one hit to after the next: the most it was idle
    prev_before = None
    while time.monotonic() < deadline:
        before_hit = time.monotonic()
        assert env.send(5) == 7
        if prev_before is not None:
            longest_gap = max(longest_gap, time.monotonic() - prev_before)
        prev_before = before_hit
        time.sleep(0.05)
    # a busy machine can stall this loop past the timeout; then the entry really was idle that
    # long and a notification is right. Otherwise traffic kept it alive: none may have come.
    got = env.notification(timeout=0.0)
    if longest_gap < 0.25 and time.monotonic() - before_hit < 0.25:
        assert got is None
    else:
        while got is not None:
            got = env.notification(timeout=0.0)  # expiries during the stall
        before_hit = time.monotonic()
        assert env.send(5) == 7  # live again: the silence below must give one notification
    note = env.notification(timeout=3.0)
    assert note is not None
    assert time.monotonic() - before_hit >= 0.3  # not before the timeout has passed
    [te] = note.table_entry
    assert te.table_id == env.t
    assert [(m.field_id, m.exact.value) for m in te.match] == [(1, b"\x05")]
    assert te.idle_timeout_ns == 300 * MS
    assert note.timestamp > 0
    # once per expiry: nothing more while it stays idle, and the entry is still installed
    assert env.notification(timeout=0.6) is None
    assert len(env.read_t(with_hit_time=False)) == 1
    assert env.send(5) == 7
    # a hit made it live: it expires, and is reported, again
    again = env.notification(timeout=3.0)
    assert again is not None and again.table_entry[0].match[0].exact.value == b"\x05"


def test_entry_without_timeout_never_expires(env: Env) -> None:
    env.client.write(update("INSERT", "table_entry", env.entry(6, 0)))
    env.client.write(update("INSERT", "table_entry", env.entry(5, 100 * MS)))
    note = env.notification(timeout=3.0)
    assert note is not None
    assert [e.match[0].exact.value for e in note.table_entry] == [b"\x05"]
    assert env.notification(timeout=0.4) is None


def test_read_reports_timeout_and_time_since_last_hit(env: Env) -> None:
    env.client.write(update("INSERT", "table_entry", env.entry(5, 10_000 * MS)))
    time.sleep(0.3)
    [e] = env.read_t(with_hit_time=True)
    assert e.idle_timeout_ns == 10_000 * MS
    assert 250 * MS <= e.time_since_last_hit.elapsed_ns < 5_000 * MS
    t_send = time.monotonic()
    assert env.send(5) == 7
    [e] = env.read_t(with_hit_time=True)
    # the hit reset it: at most the time since just before the send (however busy the machine)
    assert e.time_since_last_hit.elapsed_ns <= (time.monotonic() - t_send) * 1e9 + 5 * MS
    [e] = env.read_t(with_hit_time=False)
    assert e.idle_timeout_ns == 10_000 * MS and not e.HasField("time_since_last_hit")
    # a MODIFY sets the timeout it carries
    env.client.write(update("MODIFY", "table_entry", env.entry(5, 2_000 * MS)))
    [e] = env.read_t(with_hit_time=False)
    assert e.idle_timeout_ns == 2_000 * MS


def test_timeout_on_a_table_without_support_timeout_is_invalid(env: Env) -> None:
    with pytest.raises(grpc.RpcError) as exc:
        env.client.write(update("INSERT", "table_entry", env.entry(5, 300 * MS, table="u")))
    [err] = write_errors(exc.value)
    assert err.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert env.client.read(pb.Entity(table_entry=pb.TableEntry(table_id=env.u))) == []
    # time_since_last_hit is read-only (PI refuses it in a write)
    e = env.entry(5, 300 * MS)
    e.time_since_last_hit.elapsed_ns = 1
    with pytest.raises(grpc.RpcError) as exc:
        env.client.write(update("INSERT", "table_entry", e))
    [err] = write_errors(exc.value)
    assert err.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "time_since_last_hit" in err.message


def test_one_sweep_reports_every_expired_entry_once(env: Env, monkeypatch) -> None:
    """Deterministic sweeps (explicit clock): 256 timed entries swept in chunks of 100 (the
    switch lock is held per chunk) give one notification naming all of them; the next sweep
    reports nothing new; a deleted entry is never reported."""
    from softnic.runtime.p4rt import idle

    monkeypatch.setattr(idle, "SWEEP_CHUNK", 100)
    env.srv.service.idle.interval_s = 3600.0  # no sweeps but ours (after the current wait)
    env.client.write(*[update("INSERT", "table_entry", env.entry(a, 60_000 * MS))
                       for a in range(256)])
    env.client.write(update("DELETE", "table_entry", env.entry(7, 0)))
    sweeper = env.srv.service.idle
    later = time.monotonic() + 120.0
    [note] = sweeper.sweep(now=later)
    values = sorted(e.match[0].exact.value[0] if e.match[0].exact.value != b"\x00" else 0
                    for e in note.table_entry)
    assert values == [a for a in range(256) if a != 7]
    assert sweeper.sweep(now=later + 1.0) == []
