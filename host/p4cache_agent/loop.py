"""The agent's event loop: asyncio's selector loop, which polls its sockets for a short while
before it sleeps when a socket is about to have something to read.

Where a gated read's time goes (docs/bench-gate.md, "What the profile showed"): the agent's
own work is about 30 µs of CPU per get; the rest of what the gate adds is waking processes up.
On a VM whose idle vCPUs halt at once, a wake-up that crosses vCPUs costs tens of µs, and a
relay adds such wake-ups to every request (a minimal compiled relay measured no better than
the gate when its wake-ups crossed vCPUs). So the loop polls with a zero timeout, yielding the
CPU between polls, before it blocks in epoll_wait:

- while memcached owes a gate connection replies (:data:`OWED`, kept by the relay), for up to
  ``busy_poll`` seconds: the reply then finds the agent awake;
- for ``busy_poll`` seconds after a reply went to a client (its next request often follows),
  but not once a write waits for the switch, which may need this very CPU.

An idle agent polls nothing. The CPU spent is at most ``busy_poll`` per request and per reply.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import time
from collections.abc import Callable

DEFAULT_BUSY_POLL = 150e-6


class Owed:
    """What the loop expects soon: replies memcached owes to ``connections`` gate connections
    (the relay keeps the count), a client's next request until ``until``; and how many times
    polling found an event (the selector counts)."""

    __slots__ = ("connections", "polled", "linger", "until")

    def __init__(self) -> None:
        self.connections = 0
        self.polled = 0
        self.linger = 0.0
        self.until = 0.0

    def replied(self) -> None:
        """A reply went to a client: its next request may follow soon."""
        if self.linger:
            self.until = time.perf_counter() + self.linger

    def gating(self) -> None:
        """A write waits for the switch: no polling for a next request meanwhile."""
        self.until = 0.0


OWED = Owed()


class BusyPollSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """While ``owed.connections`` is not 0 (for up to ``busy_poll`` seconds) or until
    ``owed.until``, select(timeout) polls with a zero timeout, never past ``timeout``, yielding
    the CPU between polls; then it waits in the kernel for the rest of ``timeout``. Otherwise it
    is the plain selector's."""

    def __init__(self, busy_poll: float, owed: Owed = OWED) -> None:
        super().__init__()
        self.busy_poll = busy_poll
        self.owed = owed

    def select(self, timeout: float | None = None
               ) -> list[tuple[selectors.SelectorKey, int]]:
        poll = super().select
        if timeout is not None and timeout <= 0:
            return poll(timeout)
        start = now = time.perf_counter()
        if self.owed.connections:
            end = start + self.busy_poll
        elif start < self.owed.until:
            end = self.owed.until
        else:
            return poll(timeout)
        if timeout is not None:
            end = min(end, start + timeout)
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
    OWED.linger = busy_poll
    return lambda: asyncio.SelectorEventLoop(BusyPollSelector(busy_poll))
