"""The gate is transparent: the same byte streams sent to memcached directly and through the
agent (W synced empty, so no write needs the switch) get the same bytes back — pipelined,
split anywhere, with noreply, meta commands, values over memcached's 1 MB item limit, bad
command lines memcached recovers from, and lines over 2048 bytes."""

from __future__ import annotations

import random
import re
import time
import uuid

import pytest
from agentdiff import command, needs_switch, run_to_close, split
from agentkit import Agent, Memcached
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    # Room for everything the test stores (fresh keys per example), so that no store fails
    # for memory on one side only. (CI once saw `gets` CAS 372 against 373: one side had run a
    # stream cut short by a client deadlock, now fixed in run_to_close; compare() checks every
    # example for it.)
    direct, behind = Memcached("-m", "2048"), Memcached("-m", "2048")
    agent = Agent(behind, tmp_path_factory.mktemp("diff") / "agent.log")
    assert agent.control.call({"op": "sync", "keys": []})["ok"]
    yield direct, agent
    agent.stop()
    direct.stop()
    behind.stop()


def prefixed(stream: bytes) -> bytes:
    """Fresh keys per example: both servers see every example on fresh items."""
    tag = uuid.uuid4().hex[:8].encode()
    longest = b" " + b"k" * 250    # memcached's longest key stays 250 bytes long
    stream = stream.replace(longest, b" " + tag + b"k" * 242)
    for k in (b"k1", b"k2", b"num", b"a-much-longer-key-"):
        stream = stream.replace(b" " + k, b" " + tag + k)
    return stream


def same_counters(a: int, b: int) -> tuple[int, int]:
    """Bring both memcacheds' CAS counters to the same value (probe items on the one behind).
    Item CAS values are global counters, and `cas KEY ... N` or `md KEY CN` succeed only on the
    exact number: every example must start from the same counter on both sides, or a
    difference left by an earlier one (a failed example, a stream cut by a timeout) would turn
    into different replies in every later one."""
    ca, cb = cas_counter(a), cas_counter(b)
    for _ in range(100_000):
        if ca == cb:
            return ca, cb
        if ca < cb:
            ca = cas_counter(a)
        else:
            cb = cas_counter(b)
    raise AssertionError(f"CAS counters too far apart: {ca} and {cb}")


def wait_idle(port: int, timeout: float = 10.0) -> None:
    """Until memcached has no connection but the one asking: every earlier stream has been
    run to its end (memcached closes a connection only after running what it read)."""
    deadline = time.monotonic() + timeout
    while True:
        out = run_to_close(port, [b"stats\r\n"])
        match = re.search(rb"STAT curr_connections (\d+)\r\n", out)
        if match and int(match.group(1)) <= 1:
            return
        assert time.monotonic() < deadline, f"memcached on {port} still has connections: {out}"
        time.sleep(0.01)


def cas_counter(port: int) -> int:
    """memcached's CAS counter, read by storing a probe item: it counts every item stored."""
    wait_idle(port)
    out = run_to_close(port, [b"set casprobe 0 0 1\r\nx\r\ngets casprobe\r\n"])
    match = re.search(rb"VALUE casprobe 0 1 (\d+)\r\n", out)
    assert match, out
    return int(match.group(1))


def compare(pair, chunks: list[bytes], pause: float = 0.0) -> None:  # noqa: ANN001
    direct, agent = pair
    log_before = agent.log.stat().st_size
    before = same_counters(direct.port, agent.memcached.port)
    want = run_to_close(direct.port, chunks, pause)
    got = run_to_close(agent.port, chunks, pause)
    after = cas_counter(direct.port), cas_counter(agent.memcached.port)
    # The same replies are not enough: a noreply store run on one side only is silent. Each
    # side must have stored exactly as many items during this example.
    assert after[0] - before[0] == after[1] - before[1], (
        f"items stored directly: {after[0] - before[0] - 1}, through the agent: "
        f"{after[1] - before[1] - 1}, for the chunks {[c[:400] for c in chunks]!r}; replies "
        f"through the agent {got[:1500]!r}, direct {want[:1500]!r}")
    log = agent.log.read_bytes()[log_before:].decode(errors="replace")
    # `me` reports seconds since the item's last access: the two sides are asked a moment
    # apart, so a second boundary may fall between them.
    got, want = (re.sub(rb"(\r\nME |^ME )(\S+ .*?)la=\d+", rb"\1\2la=N", x) for x in (got, want))
    assert got == want, (f"through the agent:\n{got[:3000]!r}\ndirect:\n{want[:3000]!r}\n"
                         f"agent log:\n{log[-2000:]}")
    assert agent.alive()
    assert "WARNING" not in log and "ERROR" not in log, log[-3000:]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.lists(command(), min_size=1, max_size=25), st.lists(st.integers(0, 10**7),
                                                              max_size=8),
       st.booleans())
def test_same_bytes_back(pair, cmds: list[bytes], cuts: list[int], slow: bool) -> None:  # noqa: ANN001
    stream = prefixed(b"".join(cmds))
    assume(not needs_switch(stream))
    compare(pair, split(stream, cuts), pause=0.002 if slow else 0.0)


def test_a_long_pipeline(pair) -> None:  # noqa: ANN001
    rnd = random.Random(7)
    parts = []
    for _ in range(3000):
        k = b"p%d" % rnd.randrange(50)
        parts.append(rnd.choice([b"set %s 0 0 3\r\nabc\r\n" % k, b"get %s\r\n" % k,
                                 b"set %s 0 0 1 noreply\r\nz\r\n" % k, b"mg %s v q\r\n" % k,
                                 b"delete %s noreply\r\n" % k, b"incr %s 1\r\n" % k,
                                 b"mn\r\n"]))
    stream = b"".join(parts)
    compare(pair, split(stream, [rnd.randrange(len(stream)) for _ in range(200)]))


def test_large_values_both_ways(pair) -> None:  # noqa: ANN001
    big = bytes(random.Random(1).getrandbits(8) for _ in range(900_000))
    stream = (b"set big1 0 0 %d\r\n%s\r\nget big1 big1\r\n" % (len(big), big)
              + b"set big2 0 0 3000000\r\n" + b"y" * 3_000_000 + b"\r\nget big2\r\nversion\r\n")
    compare(pair, split(stream, list(range(0, len(stream), 65_000))))


def test_tokens_memcached_reads_oddly(pair) -> None:  # noqa: ANN001
    stream = (b"set t1 0 0 +2\r\nhi\r\nset t2 0 0 \t3\r\nabc\r\nset t3 4294967296 0 1\r\nx\r\n"
              b"set t4 -1 0 1\r\nget t4\r\nget t1 t2 t3 t4\r\nset t5 0 0 2 junk\r\nab\r\n"
              b"cas t1 0 0 1 x\r\nms t6 2 T0 F1 Zq\r\nzz\r\nms t7\r\nmg t7 v\r\n"
              b"ms " + b"t" * 251 + b" 2\r\nmn\r\nms t8 2 " + b" ".join([b"k"] * 20) + b"\r\n"
              b"mn\r\nmg t1 v f\0 N5\r\n")
    assert not needs_switch(stream)
    compare(pair, [stream])
