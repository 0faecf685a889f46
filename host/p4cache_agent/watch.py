"""The watch set W and the writes in flight at memcached (the fetch fence).

W holds the keys the switch may serve for this server. Until the controller's first ``sync``
W is UNKNOWN (after the agent starts it cannot know what is cached) and every write
invalidates. A ``fetch`` adds its key to W but does not make W known: a controller that lost
track of its connection syncs first (p4cache.controller.agents does, on every connection).

A write is *in flight* from the moment the gate admits it (before it asks the switch) until its
response from memcached has been framed — or, with noreply, until the "MN" of the ``mn`` the
gate appends after it. A fetch waits for the writes to its key (and the writes to everything)
admitted before it, and only those.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field


class WatchSet:
    def __init__(self) -> None:
        self.known = False
        self.keys: set[bytes] = set()

    def needs_invalidation(self, key: bytes) -> bool:
        return not self.known or key in self.keys

    def add(self, key: bytes) -> None:
        self.keys.add(key)

    def discard(self, key: bytes) -> None:
        self.keys.discard(key)

    def sync(self, keys: set[bytes]) -> None:
        self.keys = set(keys)
        self.known = True


@dataclass(eq=False)
class Ticket:
    """One admitted write: to ``keys``, or to everything when ``keys`` is None."""

    seq: int
    keys: tuple[bytes, ...] | None
    ended: bool = field(default=False)


class InFlight:
    def __init__(self) -> None:
        self._seq = itertools.count(1)
        self._by_key: dict[bytes, set[int]] = {}
        self._all: set[int] = set()
        self._waiters: list[tuple[bytes, int, asyncio.Future[None]]] = []

    def __len__(self) -> int:
        return len(self._all) + sum(len(s) for s in self._by_key.values())

    def begin(self, keys: tuple[bytes, ...] | None) -> Ticket:
        t = Ticket(next(self._seq), keys)
        if keys is None:
            self._all.add(t.seq)
        else:
            for k in keys:
                self._by_key.setdefault(k, set()).add(t.seq)
        return t

    def end(self, t: Ticket | None) -> None:
        if t is None or t.ended:
            return
        t.ended = True
        if t.keys is None:
            self._all.discard(t.seq)
        else:
            for k in t.keys:
                s = self._by_key.get(k)
                if s is not None:
                    s.discard(t.seq)
                    if not s:
                        del self._by_key[k]
        if self._waiters:
            self._wake()

    def mark(self) -> int:
        """A point in the admission order: writes admitted so far have smaller numbers."""
        return next(self._seq)

    def clear_before(self, key: bytes, mark: int) -> bool:
        if any(s < mark for s in self._all):
            return False
        return not any(s < mark for s in self._by_key.get(key, ()))

    async def wait_clear(self, key: bytes, mark: int, timeout: float) -> bool:
        """Wait until no write to ``key`` (or to everything) admitted before ``mark`` is in
        flight; False on timeout."""
        if self.clear_before(key, mark):
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (key, mark, fut)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    def _wake(self) -> None:
        for key, mark, fut in list(self._waiters):
            if not fut.done() and self.clear_before(key, mark):
                fut.set_result(None)
