"""The switch side: OP_INVALIDATE_KEY and OP_FLUSH as plain UDP datagrams from this server's
data address (docs/update-protocol.md), each retransmitted until acknowledged.

The switch echoes a datagram's ``version`` field in its acknowledgement: it is the request id
here, so many requests can be outstanding and a late ack of an earlier copy still counts.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time

from p4cache import dataplane as dp
from p4cache_agent.metrics import Metrics

log = logging.getLogger("p4cache_agent.switch")

_OK = {dp.OP_INVALIDATE_KEY: {dp.STATUS_APPLIED, dp.STATUS_NOT_CACHED}}


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, client: SwitchClient) -> None:
        self.client = client

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.client._ack(data)

    def error_received(self, exc: Exception) -> None:  # ICMP unreachable and the like
        self.client.metrics.inc("switch_send_errors")


class SwitchClient:
    def __init__(self, addr: tuple[str, int], source: str | None, metrics: Metrics,
                 retransmit: float = 0.02, deadline: float = 1.0) -> None:
        self.addr = addr
        self.source = source
        self.metrics = metrics
        self.retransmit = retransmit
        self.deadline = deadline
        self._transport: asyncio.DatagramTransport | None = None
        self._version = random.getrandbits(32)
        self._pending: dict[tuple[int, int], asyncio.Future[int]] = {}

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        local = (self.source, 0) if self.source else None
        self._transport, _ = await loop.create_datagram_endpoint(
            lambda: _Protocol(self), local_addr=local, remote_addr=self.addr)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        for fut in self._pending.values():
            if not fut.done():
                fut.cancel()

    async def invalidate(self, key: bytes) -> bool:
        """OP_INVALIDATE_KEY(key): True once the switch confirms (applied or not cached)."""
        return await self._request(dp.OP_INVALIDATE_KEY, "invalidate",
                                   lambda v: dp.invalidate_key_datagram(key, v))

    async def flush(self) -> bool:
        """OP_FLUSH: True once the switch confirms that no slot answers any more."""
        return await self._request(dp.OP_FLUSH, "flush", dp.flush_datagram)

    async def _request(self, op: int, what: str, build) -> bool:  # noqa: ANN001
        if self._transport is None:
            raise RuntimeError("switch client not started")
        self._version = (self._version + 1) & 0xFFFFFFFF
        version = self._version
        payload = build(version)
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending[(op, version)] = fut
        start = time.monotonic()
        end = start + self.deadline
        self.metrics.inc(f"{what}_sent")
        try:
            while True:
                self._transport.sendto(payload)
                left = end - time.monotonic()
                if left <= 0:
                    break
                done, _ = await asyncio.wait({fut}, timeout=min(self.retransmit, left))
                if done:
                    break
                self.metrics.inc(f"{what}_retransmits")
        finally:
            self._pending.pop((op, version), None)
        if not fut.done():
            fut.cancel()
            self.metrics.inc(f"{what}_timeouts")
            log.warning("switch %s:%d: %s not confirmed within %.2f s", *self.addr, what,
                        self.deadline)
            return False
        status = fut.result()
        ok = status in _OK.get(op, {dp.STATUS_APPLIED})
        if ok:
            self.metrics.observe(what, time.monotonic() - start)
            self.metrics.inc(f"{what}_acked")
        else:
            self.metrics.inc(f"{what}_refused")
            log.warning("switch: %s answered %s", what, dp.STATUS_NAMES.get(status, status))
        return ok

    def _ack(self, data: bytes) -> None:
        try:
            ack = dp.parse_ctrl(data)
        except ValueError:
            self.metrics.inc("switch_bad_acks")
            return
        if not ack.is_ack:
            return
        fut = self._pending.get((ack.op & ~dp.ACK_FLAG & 0xFF, ack.version))
        if fut is not None and not fut.done():
            fut.set_result(ack.status)
