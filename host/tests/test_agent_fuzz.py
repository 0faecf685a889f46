"""Any bytes from a client: the agent stays up, answers other clients, and forgets every write
once the connections are gone (no in-flight write leaks, which would make fetches busy
forever) and no connection stays counted as owed a reply (the loop would poll for it
forever). The switch is unreachable and W unknown, so most writes are refused: the refusal and
abort paths run as much as the forwarding ones."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from agentdiff import command, split
from agentkit import Agent, Memcached, exchange
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BYTES = st.one_of(
    command(),
    st.binary(max_size=300),
    st.sampled_from([b"\x80", b"\r\n", b"\n", b"\0", b"get " + b"k " * 1500, b"x" * 2100,
                     b"set k 0 0 5\r\n", b"mn\r\n", b"watch\r\n", b"quit\r\n", b"stats\r\n",
                     b"lru_crawler metadump all\r\n", b"flush_all 1\r\n"]),
)


def test_fuzz_the_running_agent(memcached: Memcached, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    agent = Agent(memcached, log, "--deadline", "0.05", "--retransmit", "0.01")

    @settings(max_examples=150, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(BYTES, max_size=15), st.lists(st.integers(0, 5000), max_size=6),
           st.booleans())
    def one(parts: list[bytes], cuts: list[int], half_close: bool) -> None:
        stream = b"".join(parts)
        with socket.create_connection(("127.0.0.1", agent.port), timeout=10) as s:
            s.settimeout(0.05)
            for c in split(stream, cuts):
                try:
                    s.sendall(c)
                    s.recv(1 << 20)
                except (TimeoutError, ConnectionError):
                    pass
            if half_close:
                try:
                    s.shutdown(socket.SHUT_WR)
                    s.recv(1 << 20)
                except (TimeoutError, OSError):
                    pass

    try:
        one()
        assert exchange(agent.port, b"version\r\n").startswith(b"VERSION")
        deadline = time.monotonic() + 15
        while True:
            st_ = agent.control.call({"op": "status"})["status"]
            if (st_["in_flight"] == 0 and st_["busy_poll"]["owed"] == 0
                    or time.monotonic() > deadline):
                break
            time.sleep(0.2)
        assert st_["in_flight"] == 0, st_
        assert st_["busy_poll"]["owed"] == 0, st_   # no connection left counted as owed
        assert agent.alive()
        text = log.read_text()
        assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    finally:
        agent.stop()
