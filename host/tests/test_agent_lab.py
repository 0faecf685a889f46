"""The gate against a real switch (softnic running the p4cache program, in p4cache.lab):
writes over TCP invalidate the switch's slot before memcached answers them, flushes and
unreadable input flush the whole cache, and an unreachable switch refuses writes."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator

import pytest
from agentdiff import binary_stream, run_to_close, split, without_cas
from agentkit import Control, Memcached
from agentlab import (
    AGENT_CONTROL,
    NO_GATE_PORT,
    AgentLab,
    bring_up,
    gate_exchange,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4cache import dataplane as dp

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("memcached") is None, reason="memcached not installed"),
]

REFUSED = b"SERVER_ERROR p4cache: cache invalidation not confirmed\r\n"


def reply(key: bytes, value: bytes) -> bytes:
    return dp.render_value_reply(key, 0, value)


@pytest.fixture(scope="module")
def al(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentLab]:
    lab, al = bring_up(tmp_path_factory.mktemp("agentlab"))
    try:
        yield al
    finally:
        al.switch.close()
        lab.__exit__(None, None, None)


@pytest.fixture
def control(al: AgentLab) -> Iterator[Control]:
    c = Control(AGENT_CONTROL, host=al.mgmt)
    yield c
    c.close()


def test_a_tcp_write_invalidates_the_slot_before_memcached_answers(al: AgentLab,
                                                                   control: Control) -> None:
    key = b"hot"
    gate_exchange(al, b"set hot 0 0 5\r\nreal0\r\n")
    before = al.stat(dp.STAT_INVALIDATE)
    # W unknown (no sync yet): every write invalidates
    assert control.call({"op": "status"})["status"]["watch"]["known"] is False
    for i in range(1, 6):
        al.cache(key, reply(key, b"cached"))
        assert al.client(key) == [reply(key, b"cached")]         # the switch answers
        new = b"real%d" % i
        # the GET leaves the client right after STORED came back
        stored, got = al.client(key, tcp=b"set hot 0 0 5\r\n%s\r\n" % new)
        assert stored == b"STORED\r\n"
        assert got == reply(key, new), f"round {i}: a GET after the write saw {got!r}"
    assert al.stat(dp.STAT_INVALIDATE) >= before + 5
    st = control.call({"op": "status"})["status"]
    assert st["counters"]["invalidate_acked"] >= 5
    assert st["latency"]["invalidate"]["p50_us"] > 0
    # watched after a sync: the same holds; an unwatched key's write does not ask the switch
    assert control.call({"op": "sync", "keys": ["hot"]})["ok"]
    al.cache(key, reply(key, b"cached"))
    _, got = al.client(key, tcp=b"set hot 0 0 5\r\nreal9\r\n")
    assert got == reply(key, b"real9")
    sent = control.call({"op": "status"})["status"]["counters"]["invalidate_sent"]
    gate_exchange(al, b"set cold 0 0 1\r\nx\r\n")
    assert control.call({"op": "status"})["status"]["counters"]["invalidate_sent"] == sent


@pytest.mark.parametrize("command, answer", [
    (b"delete hot\r\n", b"DELETED\r\n"),
    (b"touch hot 1000\r\n", b"TOUCHED\r\n"),
    (b"ms hot 5 T0\r\nmeta1\r\n", b"HD\r\n"),
    (b"gat 1000 hot\r\n", b"END\r\n"),
    (b"mg hot T1000\r\n", b"HD\r\n"),
    (b"incr hot 1\r\n", b"\r\n"),
])
def test_other_writes_invalidate_too(al: AgentLab, control: Control, command: bytes,
                                     answer: bytes) -> None:
    assert control.call({"op": "sync", "keys": ["hot"]})["ok"]
    gate_exchange(al, b"set hot 0 0 1\r\n7\r\n")
    al.cache(b"hot", reply(b"hot", b"cached"))
    out, got = al.client(b"hot", tcp=command, tcp_end=answer)
    assert out.endswith(answer)
    assert got != reply(b"hot", b"cached")


def test_the_test_fails_without_the_gate(al: AgentLab) -> None:
    """--no-gate, the deliberately broken variant: the switch keeps answering the old value."""
    gate_exchange(al, b"set hot 0 0 5\r\nreal0\r\n")
    al.cache(b"hot", reply(b"hot", b"cached"))
    stored, got = al.client(b"hot", tcp=b"set hot 0 0 5\r\nfresh\r\n", port=NO_GATE_PORT)
    assert stored == b"STORED\r\n"
    assert got == reply(b"hot", b"cached")


@pytest.mark.parametrize("stream", [
    b"flush_all\r\n",
    b"flush_all noreply\r\nmn\r\n",
    b"bogus command\r\n",
    b"set other 0 0 1\r\nxyz\r\n",                        # a bad data block end
    b"md Zm9v b\r\n",                                      # a base64 key
    b"\x80\x0a\x00\x00" + b"\x00" * 20,                    # binary protocol (noop)
    b"set " + b"k" * 20000 + b"\r\n",                      # a line over 2048 bytes
    b"flush_all 3\r\n",
])
def test_writes_the_gate_cannot_name_flush_the_cache(al: AgentLab, stream: bytes) -> None:
    key = b"hot"
    gate_exchange(al, b"set hot 0 0 4\r\nreal\r\n")
    al.cache(key, reply(key, b"cached"))
    assert al.client(key) == [reply(key, b"cached")]
    before = al.stat(dp.STAT_FLUSH)
    gate_exchange(al, stream)
    assert al.stat(dp.STAT_FLUSH) > before
    got = al.client(key)[0]
    assert got != reply(key, b"cached")


def test_a_delayed_flush_all_refuses_fetches_and_flushes_again(al: AgentLab,
                                                               control: Control) -> None:
    gate_exchange(al, b"set hot 0 0 4\r\nreal\r\n")
    before = al.stat(dp.STAT_FLUSH)
    assert gate_exchange(al, b"flush_all 2\r\n") == b"OK\r\n"
    assert control.call({"op": "fetch", "key": "hot"}) == {"ok": False, "error": "busy"}
    al.cache(b"hot", reply(b"hot", b"cached"))   # as a controller ignoring busy would
    # flushes at once, before and after the delay (poll: on a busy machine the second comes
    # late; a generous deadline only catches one that never comes)
    deadline = time.monotonic() + 15.0
    while al.stat(dp.STAT_FLUSH) < before + 3:
        assert time.monotonic() < deadline, (before, al.stat(dp.STAT_FLUSH))
        time.sleep(0.1)
    assert al.client(b"hot") == [b"END\r\n"]     # memcached flushed, the slot too
    # Fetches are refused until 2 s of slack past the delay (memcached's clock ticks in whole
    # seconds); on a loaded machine later. Poll rather than guess the instant.
    deadline = time.monotonic() + 15.0
    while (got := control.call({"op": "fetch", "key": "hot"})) != {"ok": True, "found": False}:
        assert got == {"ok": False, "error": "busy"}, got
        assert time.monotonic() < deadline, control.call({"op": "status"})
        time.sleep(0.2)


def test_an_unreachable_switch_refuses_writes_to_watched_keys(al: AgentLab,
                                                              control: Control) -> None:
    assert control.call({"op": "sync", "keys": ["hot"]})["ok"]
    gate_exchange(al, b"set hot 0 0 4\r\nreal\r\n")
    al.block_control_datagrams(True)
    try:
        out = gate_exchange(al, b"set hot 0 0 3\r\nnew\r\nset hot 0 0 3 noreply\r\nnew\r\n"
                            b"set cold 0 0 1\r\nx\r\nget hot\r\nflush_all\r\n")
        assert out == REFUSED + b"STORED\r\n" + reply(b"hot", b"real") + REFUSED
        st = control.call({"op": "status"})["status"]
        assert st["counters"]["refused_noreply_dropped"] >= 1
    finally:
        al.block_control_datagrams(False)
    assert gate_exchange(al, b"set hot 0 0 3\r\nnew\r\n") == b"STORED\r\n"


def test_a_fetched_item_with_a_ttl_is_invalidated_by_the_agent(al: AgentLab,
                                                               control: Control) -> None:
    # TTL 4 s, margin 2 s: the agent invalidates the key about 2 s from now
    gate_exchange(al, b"set ttl 0 4 4\r\nreal\r\n")
    rep = control.call({"op": "fetch", "key": "ttl"})
    assert rep["found"] and 3 <= rep["ttl"] <= 4
    al.cache(b"ttl", reply(b"ttl", b"cached"))
    assert al.client(b"ttl") == [reply(b"ttl", b"cached")]
    # nothing else invalidates the slot here: poll (generous deadline) until the agent did
    deadline = time.monotonic() + 15.0
    while al.client(b"ttl") == [reply(b"ttl", b"cached")]:
        assert time.monotonic() < deadline, "the agent never invalidated the key"
        time.sleep(0.1)
    assert control.call({"op": "status"})["status"]["counters"]["ttl_invalidations"] >= 1


# ---- the differential run with input the gate must flush for -----------------------------

JUNK = st.sampled_from([
    b"bogus\r\n", b"\r\n", b"\n", b"x\r\n", b"GET k1\r\n", b"set k1 0 0 1\r\nxyz\r\n",
    b"set k1 0 0 2\r\nab\r\r\n", b"flush_all\r\n", b"flush_all 0 noreply\r\n",
    b"md azE= b\r\n", b"mg azE= b T0 v\r\n", b"ms azE= 2 b\r\nhi\r\n", b"\x00\x80\xff\r\n",
    b"set k1 0 0 -1\r\nnot a command\r\n", b"verbosity\r\n", b"mz k1\r\n",
])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(JUNK, st.sampled_from([
    b"set k1 0 0 2\r\nv1\r\n", b"get k1 k2\r\n", b"set k2 0 0 2 noreply\r\nv2\r\n",
    b"mg k1 v q\r\n", b"mn\r\n", b"delete k2\r\n", b"incr k1 1\r\n"])), min_size=1,
    max_size=20), st.lists(st.integers(0, 4000), max_size=5), st.one_of(st.none(),
                                                                        binary_stream()))
def test_same_bytes_back_with_input_the_gate_flushes_for(al: AgentLab,
                                                         direct_memcached: Memcached,
                                                         cmds: list[bytes], cuts: list[int],
                                                         binary: bytes | None) -> None:
    stream = b"".join(cmds) if binary is None else binary
    chunks = split(stream, cuts)
    want = run_to_close(direct_memcached.port, chunks)
    got = gate_exchange(al, b"", chunks=chunks)
    assert without_cas(got) == without_cas(want)


@pytest.fixture(scope="module")
def direct_memcached() -> Iterator[Memcached]:
    m = Memcached()
    yield m
    m.stop()


def test_the_agent_log_is_clean(al: AgentLab) -> None:
    log = al.lab.log("agent")
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
    assert al.lab.running("agent")
