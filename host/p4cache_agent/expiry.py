"""Invalidations the agent schedules itself: a fetched item's TTL (defence in depth should the
controller die before it removes the entry) and flush_all's delay."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from p4cache_agent.metrics import Metrics
from p4cache_agent.switch import SwitchClient

log = logging.getLogger("p4cache_agent.expiry")

ATTEMPTS = 3


class Expiry:
    def __init__(self, switch: SwitchClient, metrics: Metrics,
                 on_failure: Callable[[str], None]) -> None:
        self.switch = switch
        self.metrics = metrics
        self.on_failure = on_failure
        self._keys: dict[bytes, asyncio.TimerHandle] = {}
        self._flushes: set[asyncio.TimerHandle] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._keys) + len(self._flushes)

    def invalidate_in(self, key: bytes, seconds: float) -> None:
        """OP_INVALIDATE_KEY(key) in ``seconds`` (replacing an earlier one for the key)."""
        self.cancel(key)
        loop = asyncio.get_running_loop()
        self._keys[key] = loop.call_later(max(0.0, seconds), self._fire_key, key)

    def cancel(self, key: bytes) -> None:
        h = self._keys.pop(key, None)
        if h is not None:
            h.cancel()

    def keep_only(self, keys: set[bytes]) -> None:
        for k in [k for k in self._keys if k not in keys]:
            self.cancel(k)

    def flush_in(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        h: asyncio.TimerHandle

        def fire() -> None:
            self._flushes.discard(h)
            self._spawn("scheduled flush", self.switch.flush)

        h = loop.call_later(max(0.0, seconds), fire)
        self._flushes.add(h)

    def close(self) -> None:
        for h in [*self._keys.values(), *self._flushes]:
            h.cancel()
        self._keys.clear()
        self._flushes.clear()
        for t in self._tasks:
            t.cancel()

    def _fire_key(self, key: bytes) -> None:
        self._keys.pop(key, None)
        self.metrics.inc("ttl_invalidations")
        self._spawn(f"TTL invalidation of {key!r}", lambda: self.switch.invalidate(key))

    def _spawn(self, what: str, call: Callable[[], Awaitable[bool]]) -> None:
        async def run() -> None:
            for _ in range(ATTEMPTS):
                if await call():
                    return
            log.error("%s not confirmed by the switch", what)
            self.on_failure(what)

        t = asyncio.get_running_loop().create_task(run())
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
