"""memcached's UDP receive queue, for the fetch fence.

A UDP write (a `delete` a client sends through the switch) invalidates the switch's slot as it
passes, then waits in memcached's socket queue until a worker thread reads it. A refill whose
fetch read memcached in that moment would read the value the write is about to replace, and
the switch would serve it after the write is done. The TCP fence (InFlight) cannot see such a
datagram; the kernel can: /proc/net/udp lists each socket's receive queue in bytes. A fetch
therefore waits until memcached's UDP sockets have nothing queued: every datagram that passed the
switch before the refill's reservation has then been taken by memcached. What stays open is a
worker thread that has read a datagram and not yet applied it (microseconds, against the
milliseconds between a reservation and its fetch).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

TABLES = (Path("/proc/net/udp"), Path("/proc/net/udp6"))


def rx_queued(port: int, tables: tuple[Path, ...] = TABLES) -> int | None:
    """Bytes queued on the sockets bound to UDP ``port`` in this network namespace, or None if
    none is (memcached runs without UDP)."""
    total, found = 0, False
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 5:
                continue
            local, queues = fields[1], fields[4]
            if int(local.rsplit(":", 1)[1], 16) != port:
                continue
            found = True
            total += int(queues.split(":")[1], 16)
    return total if found else None


async def wait_drained(port: int, timeout: float, poll: float = 0.0005) -> float | None:
    """Seconds waited until nothing was queued for ``port`` (0.0 if nothing was at the first
    look, or no socket has the port); None if the queue never emptied within ``timeout``."""
    start = time.monotonic()
    waited = 0.0
    while rx_queued(port):
        if waited >= timeout:
            return None
        await asyncio.sleep(poll)
        waited = time.monotonic() - start
    return waited
