"""The write gate's decision for one command: which invalidations must the switch confirm
before memcached may see it — and the bookkeeping that goes with it (writes in flight, flushes
owed, fetches refused meanwhile)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from p4cache import dataplane as dp
from p4cache_agent.expiry import Expiry
from p4cache_agent.gate.commands import Command, Write
from p4cache_agent.metrics import Metrics
from p4cache_agent.switch import SwitchClient
from p4cache_agent.watch import InFlight, Ticket, WatchSet

log = logging.getLogger("p4cache_agent.gate")

REFUSAL = b"SERVER_ERROR p4cache: cache invalidation not confirmed\r\n"
RELATIVE_EXPTIME_MAX = 60 * 60 * 24 * 30   # memcached: larger values are Unix times
FLUSH_DELAY_SLACK = 1.0   # memcached's clock ticks in seconds
DEBT_RETRY = 0.5


def cacheable(key: bytes) -> bool:
    """Could the switch hold ``key``? (p4cache.dataplane.check_key, without the exception)"""
    return 1 <= len(key) <= dp.KMAX and all(0x20 < b != 0x7F for b in key)


@dataclass(slots=True)
class Admission:
    ticket: Ticket | None
    keys: tuple[bytes, ...] = ()   # to invalidate
    flush: bool = False
    flush_delay: int | None = None

    @property
    def immediate(self) -> bool:
        return not self.keys and not self.flush


_READ = Admission(None)


class Gate:
    def __init__(self, watch: WatchSet, inflight: InFlight, switch: SwitchClient,
                 expiry: Expiry, metrics: Metrics) -> None:
        self.watch = watch
        self.inflight = inflight
        self.switch = switch
        self.expiry = expiry
        self.metrics = metrics
        self._blocked_until = 0.0
        self._debt: str | None = None
        self._debt_task: asyncio.Task[None] | None = None

    # ---- decisions ----------------------------------------------------------------------
    def admit(self, cmd: Command) -> Admission:
        """Register a command as in flight (if it writes) and say what must happen first."""
        if cmd.write is Write.NONE:
            return _READ
        self.metrics.inc("writes")
        if cmd.write is Write.ALL:
            return Admission(self.inflight.begin(None), flush=True, flush_delay=cmd.flush_delay)
        ticket = self.inflight.begin(cmd.keys)
        needs = self.watch.needs_invalidation
        keys = tuple(dict.fromkeys(k for k in cmd.keys if cacheable(k) and needs(k)))
        return Admission(ticket, keys=keys)

    def admit_all(self) -> Ticket:
        """A write to everything whose end the caller decides (a raw connection)."""
        self.metrics.inc("writes")
        return self.inflight.begin(None)

    def end(self, ticket: Ticket | None) -> None:
        self.inflight.end(ticket)

    async def confirm(self, adm: Admission) -> bool:
        """Have the switch confirm the admission's invalidations; False if it did not."""
        self.metrics.inc("writes_gated")
        if adm.flush:
            ok = await self.switch.flush()
            if ok and adm.flush_delay:
                self._delayed_flush(adm.flush_delay)
            return ok
        if len(adm.keys) == 1:
            return await self.switch.invalidate(adm.keys[0])
        results = await asyncio.gather(*(self.switch.invalidate(k) for k in adm.keys))
        return all(results)

    async def flush(self) -> bool:
        self.metrics.inc("writes_gated")
        return await self.switch.flush()

    # ---- fetch refusals ----------------------------------------------------------------
    def fetch_blocked(self) -> str | None:
        """Why a fetch must answer busy now, or None."""
        if self._debt is not None:
            return f"flush owed ({self._debt})"
        if time.monotonic() < self._blocked_until:
            return "flush_all with a delay pending"
        return None

    def _delayed_flush(self, delay: int) -> None:
        seconds = float(delay - time.time() if delay > RELATIVE_EXPTIME_MAX else delay)
        if seconds <= 0:
            return
        # Flush a little early and again just after memcached's flush takes effect; promote
        # nothing in between.
        self.expiry.flush_in(seconds - FLUSH_DELAY_SLACK)
        self.expiry.flush_in(seconds + FLUSH_DELAY_SLACK)
        self._blocked_until = max(self._blocked_until,
                                  time.monotonic() + seconds + 2 * FLUSH_DELAY_SLACK)
        self.metrics.inc("delayed_flushes")

    def owe_flush(self, why: str) -> None:
        """Something may have changed memcached behind the switch's back and the switch was not
        told: refuse fetches and retry OP_FLUSH until it is confirmed."""
        self.metrics.inc("flushes_owed")
        if self._debt is None:
            log.warning("flush owed: %s", why)
        self._debt = why
        if self._debt_task is None or self._debt_task.done():
            self._debt_task = asyncio.get_running_loop().create_task(self._pay())

    async def _pay(self) -> None:
        while self._debt is not None:
            why = self._debt
            if await self.switch.flush():
                if self._debt == why:
                    self._debt = None
                    log.info("flush owed (%s) done", why)
                continue
            await asyncio.sleep(DEBT_RETRY)

    def close(self) -> None:
        if self._debt_task is not None:
            self._debt_task.cancel()
