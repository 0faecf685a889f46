"""The host agent: the write gate's listener, the switch client, the control server."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from dataclasses import dataclass
from typing import Any

from p4cache_agent.control import ControlServer
from p4cache_agent.expiry import Expiry
from p4cache_agent.fetch import MemcachedReader
from p4cache_agent.gate.policy import Gate
from p4cache_agent.gate.proxy import GateConnection, PassThrough
from p4cache_agent.loop import DEFAULT_BUSY_POLL, OWED
from p4cache_agent.metrics import Metrics
from p4cache_agent.switch import SwitchClient
from p4cache_agent.watch import InFlight, WatchSet

log = logging.getLogger("p4cache_agent")


@dataclass(frozen=True)
class Config:
    listen: tuple[str, int]
    memcached: tuple[str, int]
    switch: tuple[str, int]
    control: tuple[str, int]
    source: str | None = None
    gate: bool = True
    fence_timeout: float = 2.0
    ttl_margin: float = 2.0
    retransmit: float = 0.02
    deadline: float = 1.0
    memcached_udp_port: int = 11211   # 0: memcached runs without UDP, no UDP fence
    busy_poll: float = DEFAULT_BUSY_POLL  # seconds (p4cache_agent.loop); 0: never polls


class Agent:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.metrics = Metrics()
        self.watch = WatchSet()
        self.inflight = InFlight()
        self.switch = SwitchClient(cfg.switch, cfg.source, self.metrics, cfg.retransmit,
                                   cfg.deadline)
        self.expiry = Expiry(self.switch, self.metrics, self._owe)
        self.gate = Gate(self.watch, self.inflight, self.switch, self.expiry, self.metrics)
        self.reader = MemcachedReader(cfg.memcached)
        self.control = ControlServer(self.watch, self.inflight, self.gate, self.expiry,
                                     self.reader, self.metrics, self.status,
                                     cfg.fence_timeout, cfg.ttl_margin,
                                     cfg.memcached_udp_port)
        self.started = time.monotonic()
        self._servers: list[asyncio.Server] = []

    def _owe(self, why: str) -> None:
        self.gate.owe_flush(why)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await self.switch.start()
        if self.cfg.gate:
            def factory() -> asyncio.Protocol:
                return GateConnection(self.gate, self.cfg.memcached, self.metrics)
        else:
            log.warning("--no-gate: writes are NOT invalidated at the switch")

            def factory() -> asyncio.Protocol:
                return PassThrough(self.cfg.memcached, self.metrics)
        self._servers.append(await loop.create_server(factory, *self.cfg.listen,
                                                      reuse_address=True, backlog=1024))
        self._servers.append(await self.control.serve(*self.cfg.control))
        log.info("gate on %s:%d -> memcached %s:%d, switch %s:%d, control on %s:%d",
                 *self.cfg.listen, *self.cfg.memcached, *self.cfg.switch, *self.cfg.control)

    def close(self) -> None:
        for s in self._servers:
            s.close()
        self.expiry.close()
        self.gate.close()
        self.switch.close()
        self.reader.close()

    def status(self) -> dict[str, Any]:
        snap = self.metrics.snapshot()
        return {
            "gate": self.cfg.gate,
            "uptime_s": round(time.monotonic() - self.started, 1),
            "watch": {"known": self.watch.known, "keys": len(self.watch.keys)},
            "in_flight": len(self.inflight),
            "scheduled": len(self.expiry),
            "fetch_blocked": self.gate.fetch_blocked(),
            "busy_poll": {"us": round(self.cfg.busy_poll * 1e6, 1),
                          "owed": OWED.connections, "polled": OWED.polled},
            **snap,
        }

    async def run_forever(self) -> None:
        await self.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            log.info("stopping")
            self.close()
