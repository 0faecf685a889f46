"""The gate with the switch unreachable (nothing listens where control datagrams go): writes
that need an invalidation are refused, in order, without reaching memcached; everything else
passes."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from agentkit import Agent, Memcached, exchange

REFUSED = b"SERVER_ERROR p4cache: cache invalidation not confirmed\r\n"


def direct(m: Memcached, data: bytes) -> bytes:
    return exchange(m.port, data, quiet=0.2)


def test_unknown_w_refuses_writes_to_cacheable_keys(memcached: Memcached, tmp_path: Path
                                                    ) -> None:
    direct(memcached, b"set k 0 0 3\r\nold\r\n")
    a = Agent(memcached, tmp_path / "agent.log", "--deadline", "0.3")
    try:
        t0 = time.monotonic()
        got = exchange(a.port, b"get k\r\nset k 0 0 3\r\nnew\r\nget k\r\n"
                       b"set k 0 0 3 noreply\r\nnew\r\nmn\r\nms k 3 q\r\nnew\r\nmn\r\n"
                       b"delete k\r\ntouch k 10\r\ngat 10 k\r\nincr k 1\r\n", quiet=1.0)
        old = b"VALUE k 0 3\r\nold\r\nEND\r\n"
        # noreply: dropped silently; a meta q command still hears the error
        assert got == (old + REFUSED + old + b"MN\r\n" + REFUSED + b"MN\r\n" + REFUSED * 4)
        assert time.monotonic() - t0 >= 6 * 0.3
        assert direct(memcached, b"get k\r\n") == old
        # keys the switch cannot hold pass: longer than 64 bytes
        long_key = b"L" * 65
        assert exchange(a.port, b"set %s 0 0 1\r\nx\r\n" % long_key) == b"STORED\r\n"
        st = a.control.call({"op": "status"})["status"]
        assert st["watch"]["known"] is False
        assert st["counters"]["refused"] == 7
        assert st["counters"]["refused_noreply_dropped"] == 1
        assert st["counters"]["invalidate_timeouts"] == 7
        assert st["in_flight"] == 0
    finally:
        a.stop()


def test_sync_decides_which_writes_need_the_switch(memcached: Memcached, tmp_path: Path
                                                   ) -> None:
    a = Agent(memcached, tmp_path / "agent.log", "--deadline", "0.2")
    try:
        assert a.control.call({"op": "sync", "keys": ["hot"]}) == {"ok": True, "watched": 1}
        assert exchange(a.port, b"set cold 0 0 1\r\nx\r\nset hot 0 0 1\r\nx\r\n"
                        b"set cold 0 0 1\r\ny\r\n") == b"STORED\r\n" + REFUSED + b"STORED\r\n"
        assert a.control.call({"op": "unwatch", "key": "hot"})["ok"]
        assert exchange(a.port, b"set hot 0 0 1\r\nx\r\n") == b"STORED\r\n"
        # a fetch watches its key from then on
        rep = a.control.call({"op": "fetch", "key": "hot"})
        assert rep["found"] and rep["value_b64"] == "eA=="
        assert exchange(a.port, b"append hot 0 0 1\r\nx\r\nmg hot v\r\n"
                        b"mg hot T30\r\nmg hot N30 v\r\nma hot\r\n") == (
            REFUSED + b"VA 1\r\nx\r\n" + REFUSED * 3)
    finally:
        a.stop()


def test_flushes_and_garbage_are_refused_without_the_switch(agent: Agent,
                                                            memcached: Memcached) -> None:
    direct(memcached, b"set k 0 0 1\r\nx\r\n")
    got = exchange(agent.port, b"flush_all\r\nbogus\r\nflush_all noreply\r\nmd Zm9v b\r\n"
                   b"get k\r\n", quiet=6.0)
    assert got == REFUSED * 2 + REFUSED + b"VALUE k 0 1\r\nx\r\nEND\r\n"
    # the binary protocol and a line over 2048 bytes cannot be refused in their own terms:
    # the connection closes and memcached sees nothing
    assert exchange(agent.port, b"\x80\x01\x00\x01" + b"\x00" * 20, quiet=3.0) == b"<EOF>"
    assert exchange(agent.port, b"set " + b"k" * 3000, quiet=3.0) == b"<EOF>"
    assert direct(memcached, b"get k\r\n") == b"VALUE k 0 1\r\nx\r\nEND\r\n"


def test_a_refused_write_swallows_its_data_block(memcached: Memcached, tmp_path: Path) -> None:
    a = Agent(memcached, tmp_path / "agent.log", "--deadline", "0.2")
    try:
        block = b"get k\r\nflush_all\r\n" * 1000   # would be commands if it were not a block
        data = b"set k 0 0 %d\r\n%s\r\nget k\r\n" % (len(block), block)
        pieces = [data[i:i + 7000] for i in range(0, len(data), 7000)]
        assert exchange(a.port, b"", chunks=pieces, quiet=1.0) == REFUSED + b"END\r\n"
        st = a.control.call({"op": "status"})["status"]
        assert "flush_sent" not in st["counters"]
    finally:
        a.stop()


def test_quit_and_half_close(agent: Agent) -> None:
    assert exchange(agent.port, b"set q 0 0 1\r\nx\r\nquit\r\nget q\r\n") == b"STORED\r\n<EOF>"
    with socket.create_connection(("127.0.0.1", agent.port)) as s:
        s.sendall(b"get q\r\nset r 0 0 2\r\nok\r\n")
        s.shutdown(socket.SHUT_WR)
        out = b""
        while d := s.recv(4096):
            out += d
    assert out == b"VALUE q 0 1\r\nx\r\nEND\r\nSTORED\r\n"


def test_a_client_that_does_not_read_is_not_buffered_without_bound(agent: Agent,
                                                                   memcached: Memcached
                                                                   ) -> None:
    direct(memcached, b"set big 0 0 500000\r\n" + b"b" * 500_000 + b"\r\n")
    s = socket.create_connection(("127.0.0.1", agent.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(0.2)
    sent = 0
    req = b"get big\r\n" * 100
    try:
        for _ in range(40_000):      # 4M gets = 2 TB of replies, never read
            s.sendall(req)
            sent += len(req)
    except TimeoutError:
        pass
    # the agent stopped reading long before (what was sent sits in socket buffers)
    assert sent < 40_000 * len(req) // 2
    rss = int(next(line.split()[1] for line in
                   Path(f"/proc/{agent.proc.pid}/status").read_text().splitlines()
                   if line.startswith("VmRSS")))
    assert rss < 200_000, f"agent RSS {rss} kB"
    s.close()
    time.sleep(0.5)
    assert agent.alive()
    assert exchange(agent.port, b"version\r\n").startswith(b"VERSION")
