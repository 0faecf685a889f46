"""The controller's channel: fetch with its fence, unwatch, sync, status, and bad requests."""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agentkit import Agent, Control, Memcached, exchange


def eventually(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    """Poll ``check`` until it holds; a generous deadline, so a busy machine is only slower."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.02)


def in_flight(a: Agent) -> int:
    return a.control.call({"op": "status"})["status"]["in_flight"]


def test_fetch_reads_value_flags_and_ttl(agent: Agent, memcached: Memcached) -> None:
    exchange(memcached.port, b"set a 42 0 5\r\nhello\r\nset t 1 100 2\r\nhi\r\n"
             b"set bin 0 0 4\r\n\r\n\x00\xff\r\n")
    c = agent.control
    assert c.call({"op": "fetch", "key": "a"}) == {
        "ok": True, "found": True, "flags": 42, "ttl": -1,
        "value_b64": base64.b64encode(b"hello").decode()}
    rep = c.call({"op": "fetch", "key": "t"})
    assert rep["found"] and 98 <= rep["ttl"] <= 100
    assert base64.b64decode(c.call({"op": "fetch", "key": "bin"})["value_b64"]) == b"\r\n\x00\xff"
    assert c.call({"op": "fetch", "key": "missing"}) == {"ok": True, "found": False}
    st = c.call({"op": "status"})["status"]
    assert st["watch"] == {"known": True, "keys": 4}
    assert st["scheduled"] == 1       # the TTL item's own invalidation
    assert c.call({"op": "unwatch", "key": "t"}) == {"ok": True}
    st = c.call({"op": "status"})["status"]
    assert st["watch"]["keys"] == 3 and st["scheduled"] == 0


def test_bad_requests_get_errors_and_the_channel_lives_on(agent: Agent) -> None:
    c = agent.control
    for raw in [b"not json\n", b"[1,2]\n", b'{"id":5,"op":"nope"}\n',
                b'{"id":6,"op":"fetch","key":"two words"}\n', b'{"id":7,"op":"fetch"}\n',
                b'{"id":8,"op":"sync","keys":"abc"}\n',
                b'{"id":9,"op":"fetch","key":"' + b"k" * 251 + b'"}\n',
                b'{"id":10,"op":"unwatch","key":"\\u20ac"}\n']:
        c.sock.sendall(raw)
        rep = c.reply()
        assert rep["ok"] is False and "error" in rep, rep
    assert c.call({"op": "status"})["ok"]
    # a request line over the limit ends that connection, not the agent
    big = socket.create_connection(("127.0.0.1", agent.control_port))
    try:
        big.sendall(b"x" * (17 << 20))
    except OSError:
        pass
    big.close()
    assert Control(agent.control_port).call({"op": "status"})["ok"]


def test_fetch_waits_for_a_write_in_flight(memcached: Memcached, tmp_path: Path) -> None:
    # the fence waits up to 10 s: far longer than this test needs even on a busy machine
    a = Agent(memcached, tmp_path / "agent.log", "--fence-timeout", "10")
    try:
        assert a.control.call({"op": "sync", "keys": []})["ok"]
        exchange(memcached.port, b"set k 0 0 3\r\nold\r\n")
        w = socket.create_connection(("127.0.0.1", a.port))
        w.sendall(b"set k 0 0 3\r\nne")   # admitted and forwarded, its block unfinished
        eventually(lambda: in_flight(a) == 1, "the write is in flight")
        rep: dict = {}

        def fetch() -> None:
            rep.update(Control(a.control_port).call({"op": "fetch", "key": "k"}))

        t = threading.Thread(target=fetch)
        t.start()
        time.sleep(0.5)
        assert not rep                      # still waiting for the write
        w.sendall(b"w\r\n")
        assert w.recv(100) == b"STORED\r\n"
        t.join(15)
        assert base64.b64decode(rep["value_b64"]) == b"new"
        st = a.control.call({"op": "status"})["status"]
        assert st["counters"]["fences_waited"] == 1 and st["latency"]["fence"]["n"] == 1
        w.close()
    finally:
        a.stop()


def test_fence_timeout_is_busy_and_only_earlier_writes_count(memcached: Memcached,
                                                             tmp_path: Path) -> None:
    a = Agent(memcached, tmp_path / "agent.log", "--fence-timeout", "0.5")
    try:
        c = a.control
        assert c.call({"op": "sync", "keys": []})["ok"]
        w = socket.create_connection(("127.0.0.1", a.port))
        w.sendall(b"set k 0 0 1 noreply\r\n")   # a noreply write, its block unfinished
        eventually(lambda: in_flight(a) == 1, "the write is in flight")
        t0 = time.monotonic()
        assert c.call({"op": "fetch", "key": "k"}) == {"ok": False, "error": "busy"}
        # it waited the fence timeout, then gave up (the upper bound only catches a hang: a
        # busy machine answers late)
        assert 0.45 < time.monotonic() - t0 < 10
        assert c.call({"op": "fetch", "key": "other"})["ok"]    # another key: no wait
        # the key stays watched: a new write to it now needs the (unreachable) switch
        assert c.call({"op": "status"})["status"]["watch"]["keys"] == 2
        w.sendall(b"x\r\n")
        eventually(lambda: in_flight(a) == 0, "memcached ran the write")
        assert c.call({"op": "fetch", "key": "k"})["value_b64"] == "eA=="
        assert c.call({"op": "status"})["status"]["counters"]["fence_timeouts"] == 1
        w.close()
    finally:
        a.stop()


def test_a_noreply_write_is_in_flight_until_memcached_has_run_it(memcached: Memcached,
                                                                 tmp_path: Path) -> None:
    """A noreply write the agent has admitted, its block still streaming when the fetch comes:
    the fetch reads what the write stored, never the value before it (no reply tells the
    agent when memcached ran it: the "MN" of the mn it appended does)."""
    a = Agent(memcached, tmp_path / "agent.log")
    try:
        c = a.control
        assert c.call({"op": "sync", "keys": []})["ok"]
        w = socket.create_connection(("127.0.0.1", a.port))
        for i in range(30):
            key = f"n{i}"
            value = b"%06d" % i * 100_000
            w.sendall(b"set %s 0 0 %d noreply\r\n%s" % (key.encode(), len(value), value[:10]))
            deadline = time.monotonic() + 5
            while c.call({"op": "status"})["status"]["in_flight"] != 1:
                assert time.monotonic() < deadline, "the write was never in flight"
                time.sleep(0.005)
            w.sendall(value[10:] + b"\r\n")
            rep = c.call({"op": "fetch", "key": key})
            assert rep["found"], (i, rep)
            assert base64.b64decode(rep["value_b64"]) == value
        w.close()
    finally:
        a.stop()


def test_a_many_key_fetch_answers_each_key_in_order(agent: Agent, memcached: Memcached) -> None:
    exchange(memcached.port, b"set a 1 0 2\r\naa\r\nset b 2 100 2\r\nbb\r\n")
    c = agent.control
    rep = c.call({"op": "fetch", "keys": ["b", "missing", "a"]})
    assert rep["ok"] is True
    b, missing, a = rep["items"]
    assert (b["flags"], base64.b64decode(b["value_b64"])) == (2, b"bb") and 98 <= b["ttl"] <= 100
    assert missing == {"ok": True, "found": False}
    assert a == {"ok": True, "found": True, "flags": 1, "ttl": -1,
                 "value_b64": base64.b64encode(b"aa").decode()}
    st = c.call({"op": "status"})["status"]
    assert st["watch"] == {"known": True, "keys": 3}, "every key watched, found or not"
    assert st["scheduled"] == 1 and st["counters"]["fetch_batches"] == 1
    for bad in ([], "a", ["a", "two words"], ["k"] * 257):
        r = c.call({"op": "fetch", "keys": bad})
        assert r["ok"] is False and "error" in r, (bad, r)


def test_a_many_key_fetch_waits_for_a_write_to_any_of_its_keys(memcached: Memcached,
                                                              tmp_path: Path) -> None:
    a = Agent(memcached, tmp_path / "agent.log", "--fence-timeout", "0.5")
    try:
        c = a.control
        assert c.call({"op": "sync", "keys": []})["ok"]
        exchange(memcached.port, b"set x 0 0 1\r\n1\r\n")
        w = socket.create_connection(("127.0.0.1", a.port))
        w.sendall(b"set k 0 0 1 noreply\r\n")   # a write to k in flight, its block unfinished
        eventually(lambda: in_flight(a) == 1, "the write is in flight")
        rep = c.call({"op": "fetch", "keys": ["x", "k"]})
        # k's fence timed out: k is busy, x (no write in flight) is read all the same
        assert rep["items"][1] == {"ok": False, "error": "busy"}
        assert base64.b64decode(rep["items"][0]["value_b64"]) == b"1"
        w.sendall(b"y\r\n")
        eventually(lambda: in_flight(a) == 0, "memcached ran the write")
        rep = c.call({"op": "fetch", "keys": ["k", "x"]})
        assert [base64.b64decode(i["value_b64"]) for i in rep["items"]] == [b"y", b"1"]
        w.close()
    finally:
        a.stop()
