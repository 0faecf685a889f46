"""The agent's event loop: asyncio's selector loop, which polls its sockets for a short while
before it sleeps, but only while memcached owes the gate a reply.

Where a gated read's time goes (docs/bench-gate.md, "What the profile showed"): the agent's
own work is about 30 µs of CPU per get; the rest of what the gate adds is waking processes up.
On a VM whose idle vCPUs halt at once, a wake-up that crosses vCPUs costs tens of µs, and a
relay adds such wake-ups to every request (a minimal compiled relay measured no better than
the gate when its wake-ups crossed vCPUs). memcached answers a forwarded command within tens of
µs, so while replies are owed (:data:`OWED`, kept by the relay) the loop polls with a zero
timeout, yielding the CPU between polls, for up to ``busy_poll`` seconds before it blocks in
epoll_wait: the reply then finds the agent awake. Nothing is polled while nothing is owed (an
idle agent, a write waiting for the switch): the CPU spent is at most ``busy_poll`` per
request, and in practice the time memcached takes to answer.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import time
from collections.abc import Callable

DEFAULT_BUSY_POLL = 150e-6


class Owed:
    """How many gate connections wait for memcached's replies (the relay keeps the count), and
    how many times polling found an event (the selector counts)."""

    __slots__ = ("connections", "polled")

    def __init__(self) -> None:
        self.connections = 0
        self.polled = 0


OWED = Owed()


class BusyPollSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """While ``owed.connections`` is not 0, select(timeout) polls with a zero timeout for up to
    ``busy_poll`` seconds (never past ``timeout``), yielding the CPU between polls, and then
    waits in the kernel for the rest of ``timeout``. Otherwise it is the plain selector's."""

    def __init__(self, busy_poll: float, owed: Owed = OWED) -> None:
        super().__init__()
        self.busy_poll = busy_poll
        self.owed = owed

    def select(self, timeout: float | None = None
               ) -> list[tuple[selectors.SelectorKey, int]]:
        poll = super().select
        if not self.owed.connections or (timeout is not None and timeout <= 0):
            return poll(timeout)
        start = now = time.perf_counter()
        end = start + (self.busy_poll if timeout is None else min(self.busy_poll, timeout))
        while now < end:
            ready = poll(0)
            if ready:
                self.owed.polled += 1
                return ready
            os.sched_yield()   # a process runnable on this CPU (memcached, the switch) goes first
            now = time.perf_counter()
        if timeout is None:
            return poll(None)
        return poll(max(0.0, timeout - (now - start)))


def loop_factory(busy_poll: float) -> Callable[[], asyncio.AbstractEventLoop]:
    """For asyncio.Runner: the plain selector loop when ``busy_poll`` is 0."""
    if busy_poll <= 0:
        return asyncio.SelectorEventLoop
    return lambda: asyncio.SelectorEventLoop(BusyPollSelector(busy_poll))
