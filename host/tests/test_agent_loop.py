"""The gate's fast paths: the event loop's busy polling (p4cache_agent.loop) and the get/gets
shortcut of the command table. Neither may change what the gate does, only how fast: the
selector returns what the plain one would, polls only while memcached owes replies, and the
running agent's count of owed connections goes back to 0; the shortcut classifies every line
exactly as the slow path does."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from pathlib import Path

from agentkit import Agent, Memcached
from hypothesis import given, settings
from hypothesis import strategies as st

from p4cache_agent.gate.commands import classify, classify_text
from p4cache_agent.gate.cparse import command_text
from p4cache_agent.loop import BusyPollSelector, Owed


def _pair(sel: BusyPollSelector) -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    b.setblocking(False)
    sel.register(b, selectors.EVENT_READ)
    return a, b


def test_nothing_owed_no_polling() -> None:
    owed = Owed()
    sel = BusyPollSelector(0.05, owed)
    a, b = _pair(sel)
    try:
        t0 = time.perf_counter()
        assert sel.select(0.02) == []
        assert time.perf_counter() - t0 >= 0.015
        a.send(b"x")
        assert [k.fileobj for k, _ in sel.select(1.0)] == [b]
        assert owed.polled == 0      # it blocked in the kernel both times
    finally:
        sel.close()
        a.close()
        b.close()


def test_owed_replies_are_polled_for_and_timeouts_hold() -> None:
    owed = Owed()
    owed.connections = 1
    sel = BusyPollSelector(0.2, owed)
    a, b = _pair(sel)
    try:
        timer = threading.Timer(0.01, a.send, (b"x",))
        timer.start()
        t0 = time.perf_counter()
        assert [k.fileobj for k, _ in sel.select(None)] == [b]
        assert time.perf_counter() - t0 < 0.15
        assert owed.polled == 1      # found while polling, not after blocking
        b.recv(10)
        t0 = time.perf_counter()
        assert sel.select(0.02) == []          # polling never runs past the timeout
        assert 0.015 <= time.perf_counter() - t0 < 0.1
        assert sel.select(0) == []
    finally:
        sel.close()
        a.close()
        b.close()


def test_polling_gives_up_after_busy_poll_and_blocks() -> None:
    owed = Owed()
    owed.connections = 1
    sel = BusyPollSelector(0.005, owed)
    a, b = _pair(sel)
    try:
        timer = threading.Timer(0.05, a.send, (b"x",))
        timer.start()
        assert [k.fileobj for k, _ in sel.select(None)] == [b]
        assert owed.polled == 0      # arrived after the 5 ms of polling: it blocked
    finally:
        sel.close()
        a.close()
        b.close()


def test_after_a_reply_it_polls_for_the_next_request_unless_a_write_waits() -> None:
    owed = Owed()
    owed.linger = 0.2
    sel = BusyPollSelector(0.2, owed)
    a, b = _pair(sel)
    try:
        owed.replied()
        timer = threading.Timer(0.01, a.send, (b"x",))
        timer.start()
        assert [k.fileobj for k, _ in sel.select(None)] == [b]
        assert owed.polled == 1
        b.recv(10)
        owed.replied()
        owed.gating()                # a write now waits for the switch: sleep, do not poll
        timer = threading.Timer(0.01, a.send, (b"x",))
        timer.start()
        assert [k.fileobj for k, _ in sel.select(None)] == [b]
        assert owed.polled == 1
    finally:
        sel.close()
        a.close()
        b.close()


LINES = st.one_of(
    st.tuples(st.sampled_from([b"get", b"gets", b"get ", b"gets ", b" get ", b"gat ", b"getx "]),
              st.binary(max_size=12),
              st.lists(st.sampled_from([b" ", b"\r", b"\0", b"\t", b"k", b"key1"]),
                       max_size=8))
    .map(lambda t: t[0] + t[1] + b"".join(t[2])),
    st.binary(max_size=40),
)


@settings(max_examples=3000, deadline=None)
@given(LINES)
def test_the_get_shortcut_classifies_as_memcached_reads(line: bytes) -> None:
    assert classify(line) == classify_text(command_text(line))


def test_the_get_shortcut_edges() -> None:
    for line in (b"get k", b"get k\r", b"gets k1 k2", b"get \r\r", b"get  k ", b"get \t"):
        assert classify(line) == classify_text(command_text(line)), line
        assert classify(line).name in ("get", "gets")
    for line in (b"get ", b"get \r", b"get   ", b"get \0k", b"gets \r"):   # no key: ERROR
        assert classify(line) == classify_text(command_text(line)), line
        assert classify(line).name == "error"


def test_the_running_agent_polls_and_owes_nothing_once_answered(memcached: Memcached,
                                                                 tmp_path: Path) -> None:
    agent = Agent(memcached, tmp_path / "agent.log")
    try:
        assert agent.control.call({"op": "sync", "keys": []})["ok"]
        with socket.create_connection(("127.0.0.1", agent.port), timeout=5) as s:
            for i in range(200):
                s.sendall(b"set k%d 0 0 1\r\nv\r\nget k%d\r\n" % (i, i))
                buf = b""
                while not buf.endswith(b"END\r\n"):
                    buf += s.recv(65536)
                assert buf == b"STORED\r\nVALUE k%d 0 1\r\nv\r\nEND\r\n" % i
            s.sendall(b"get k1\r\nquit\r\n")   # quit: owed until memcached closes
            while s.recv(65536):
                pass
        for _ in range(5):   # quit, and the client gone before memcached closes
            with socket.create_connection(("127.0.0.1", agent.port), timeout=5) as s:
                s.sendall(b"get k1\r\nquit\r\n")
        bp = {}
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            bp = agent.control.call({"op": "status"})["status"]["busy_poll"]
            if bp["owed"] == 0:
                break
            time.sleep(0.05)
        assert bp["owed"] == 0, bp
        assert bp["polled"] > 0, bp     # replies were awaited by polling
        assert bp["us"] == 150.0
    finally:
        agent.stop()


def test_busy_poll_zero_is_the_plain_loop(memcached: Memcached, tmp_path: Path) -> None:
    agent = Agent(memcached, tmp_path / "agent.log", "--busy-poll", "0")
    try:
        with socket.create_connection(("127.0.0.1", agent.port), timeout=5) as s:
            for _ in range(50):
                s.sendall(b"get nothing\r\n")
                buf = b""
                while not buf.endswith(b"END\r\n"):
                    buf += s.recv(65536)
        bp = agent.control.call({"op": "status"})["status"]["busy_poll"]
        assert bp["polled"] == 0 and bp["us"] == 0.0, bp
    finally:
        agent.stop()
