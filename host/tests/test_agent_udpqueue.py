"""The UDP fence reads real kernel queues: datagrams sent to a socket nobody reads are counted
until they are read."""

from __future__ import annotations

import asyncio
import socket

from p4cache_agent import udpqueue


def test_queued_bytes_of_a_real_socket() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind(("127.0.0.1", 0))
        port = rx.getsockname()[1]
        assert udpqueue.rx_queued(port) == 0
        for _ in range(3):
            tx.sendto(b"delete k\r\n", ("127.0.0.1", port))
        assert udpqueue.rx_queued(port) > 0
        assert asyncio.run(udpqueue.wait_drained(port, 0.05)) is None
        rx.settimeout(1)
        for _ in range(3):
            rx.recv(100)
        assert udpqueue.rx_queued(port) == 0
        assert asyncio.run(udpqueue.wait_drained(port, 0.05)) == 0.0


def test_drained_while_waiting() -> None:
    async def run() -> tuple[float | None, float]:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, \
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            rx.bind(("127.0.0.1", 0))
            rx.setblocking(False)
            port = rx.getsockname()[1]
            tx.sendto(b"x", ("127.0.0.1", port))
            loop = asyncio.get_running_loop()
            loop.call_later(0.05, rx.recv, 10)
            t0 = loop.time()
            waited = await udpqueue.wait_drained(port, 10.0)
            return waited, loop.time() - t0

    waited, elapsed = asyncio.run(run())
    # it returned once drained, not at its 10 s deadline (the bound leaves a busy machine room)
    assert waited is not None and 0.04 <= waited <= elapsed < 8


def test_no_socket_on_the_port() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert udpqueue.rx_queued(port) is None
    assert asyncio.run(udpqueue.wait_drained(port, 0.01)) == 0.0
