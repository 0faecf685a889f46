"""The controller's channel, the agent's end (spec "Agent control channel"): JSON lines over
TCP, one request per line, one reply per request, as p4cache.agent_protocol defines them."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable
from typing import Any

from p4cache import agent_protocol as proto
from p4cache_agent import udpqueue
from p4cache_agent.expiry import Expiry
from p4cache_agent.fetch import FetchError, Item, MemcachedReader
from p4cache_agent.gate.cparse import KEY_MAX_LENGTH
from p4cache_agent.gate.policy import Gate
from p4cache_agent.metrics import Metrics
from p4cache_agent.watch import InFlight, WatchSet

log = logging.getLogger("p4cache_agent.control")

REQUEST_MAX = proto.LINE_MAX  # a sync of every slot's key fits many times over
OUTSTANDING_MAX = 256        # requests in progress per connection


class BadRequest(Exception):
    pass


def _key(req: dict[str, Any], name: str = proto.KEY) -> bytes:
    k = req.get(name)
    if not isinstance(k, str):
        raise BadRequest(f"'{name}' must be a string")
    try:
        b = proto.key_bytes(k)
    except UnicodeEncodeError:
        raise BadRequest(f"key {k!r} is not latin-1") from None
    if not 1 <= len(b) <= KEY_MAX_LENGTH or any(c <= 0x20 or c == 0x7F for c in b):
        raise BadRequest(f"key {k!r} is not a memcached text key")
    return b


class ControlServer:
    def __init__(self, watch: WatchSet, inflight: InFlight, gate: Gate, expiry: Expiry,
                 reader: MemcachedReader, metrics: Metrics, status: Callable[[], dict],
                 fence_timeout: float = 2.0, ttl_margin: float = 2.0,
                 udp_port: int = 0) -> None:
        self.watch = watch
        self.inflight = inflight
        self.gate = gate
        self.expiry = expiry
        self.reader = reader
        self.metrics = metrics
        self.status = status
        self.fence_timeout = fence_timeout
        self.ttl_margin = ttl_margin
        self.udp_port = udp_port

    async def serve(self, host: str, port: int) -> asyncio.Server:
        return await asyncio.start_server(self._client, host, port, limit=REQUEST_MAX)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        log.info("controller connected from %s", peer)
        slots = asyncio.Semaphore(OUTSTANDING_MAX)
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.LimitOverrunError:
                    self._send(writer, {proto.ID: None, proto.OK: False,
                                        proto.ERROR: "request too long"})
                    break
                except asyncio.IncompleteReadError:
                    break
                if not line.strip():
                    continue
                await slots.acquire()
                t = asyncio.get_running_loop().create_task(self._answer(line, writer))
                tasks.add(t)
                t.add_done_callback(lambda t: (tasks.discard(t), slots.release()))
        except (ConnectionError, OSError):
            pass
        finally:
            for t in tasks:
                t.cancel()
            writer.close()
            log.info("controller %s disconnected", peer)

    def _send(self, writer: asyncio.StreamWriter, rep: dict[str, Any]) -> None:
        if not writer.is_closing():
            writer.write(proto.encode(rep))

    async def _answer(self, line: bytes, writer: asyncio.StreamWriter) -> None:
        rid: Any = None
        try:
            req = proto.decode(line)
            rid = req.get(proto.ID)
            rep = await self.handle(req)
        except (ValueError, BadRequest) as e:
            rep = {proto.OK: False, proto.ERROR: f"bad request: {e}"}
        self._send(writer, {proto.ID: rid, **rep})

    async def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get(proto.OP)
        self.metrics.inc(f"control_{op}" if op in proto.OPS else "control_other")
        if op == proto.FETCH:
            if proto.KEYS in req:
                keys = req[proto.KEYS]
                if not isinstance(keys, list) or not 1 <= len(keys) <= proto.FETCH_KEYS_MAX:
                    raise BadRequest(f"'{proto.KEYS}' must be a list of 1 to "
                                     f"{proto.FETCH_KEYS_MAX} keys")
                return await self.fetch_many([_key({proto.KEY: k}) for k in keys])
            return await self.fetch(_key(req))
        if op == proto.UNWATCH:
            key = _key(req)
            self.watch.discard(key)
            self.expiry.cancel(key)
            return {proto.OK: True}
        if op == proto.SYNC:
            keys = req.get(proto.KEYS)
            if not isinstance(keys, list):
                raise BadRequest(f"'{proto.KEYS}' must be a list")
            ks = {_key({proto.KEY: k}) for k in keys}
            self.watch.sync(ks)
            self.expiry.keep_only(ks)
            log.info("sync: %d keys watched", len(ks))
            return {proto.OK: True, proto.WATCHED: len(ks)}
        if op == proto.STATUS:
            return {proto.OK: True, proto.STATUS_FIELD: self.status()}
        raise BadRequest(f"unknown op {op!r}")

    async def _udp_drained(self) -> bool:
        """Wait until memcached has taken every UDP datagram queued for it (udpqueue)."""
        waited = await udpqueue.wait_drained(self.udp_port, self.fence_timeout)
        if waited is None:
            self.metrics.inc("udp_fences_waited")
            self.metrics.inc("udp_fence_timeouts")
            return False
        if waited > 0:
            self.metrics.inc("udp_fences_waited")
            self.metrics.observe("udp_fence", waited)
        return True

    async def fetch_many(self, keys: list[bytes]) -> dict[str, Any]:
        """Several fetches sharing one fence: every key is watched first, then one mark is
        taken and each key waits until no write admitted before it is in flight (as a one-key
        fetch does, against the same mark), then memcached's UDP queue is drained once, and
        the items are read in one pipelined round trip. A key whose fence times out is busy;
        the others are read."""
        for key in keys:
            self.watch.add(key)
        start = time.monotonic()
        blocked = self.gate.fetch_blocked()
        busy: set[bytes] = set()
        if blocked is None:
            mark = self.inflight.mark()
            for key in keys:
                if self.inflight.clear_before(key, mark):
                    continue
                self.metrics.inc("fences_waited")
                left = self.fence_timeout - (time.monotonic() - start)
                if not await self.inflight.wait_clear(key, mark, max(0.0, left)):
                    self.metrics.inc("fence_timeouts")
                    busy.add(key)
            if self.udp_port and not await self._udp_drained():
                busy.update(keys)
            blocked = self.gate.fetch_blocked()
        if blocked is not None:
            self.metrics.inc("fetches_blocked")
            log.info("fetch of %d keys: busy: %s", len(keys), blocked)
            busy.update(keys)
        todo = [k for k in keys if k not in busy]
        try:
            items = await self.reader.get_many(todo) if todo else []
        except FetchError as e:
            self.metrics.inc("fetch_errors")
            return {proto.OK: False, proto.ERROR: str(e)}
        self.metrics.inc("fetches", len(todo))
        self.metrics.inc("fetch_batches")
        got = dict(zip(todo, items, strict=True))
        out = []
        for key in keys:
            if key in busy:
                out.append({proto.OK: False, proto.ERROR: proto.BUSY})
            else:
                out.append(self._item_reply(key, got[key]))
        return {proto.OK: True, proto.ITEMS: out}

    def _item_reply(self, key: bytes, item: Item | None) -> dict[str, Any]:
        if item is None:
            return {proto.OK: True, proto.FOUND: False}
        if item.ttl > 0:
            self.expiry.invalidate_in(key, item.ttl - self.ttl_margin)
        return {proto.OK: True, proto.FOUND: True, proto.FLAGS: item.flags, proto.TTL: item.ttl,
                proto.VALUE_B64: base64.b64encode(item.value).decode()}

    async def fetch(self, key: bytes) -> dict[str, Any]:
        self.watch.add(key)
        start = time.monotonic()
        blocked = self.gate.fetch_blocked()
        if blocked is None:
            mark = self.inflight.mark()
            if not self.inflight.clear_before(key, mark):
                self.metrics.inc("fences_waited")
                if not await self.inflight.wait_clear(key, mark, self.fence_timeout):
                    self.metrics.inc("fence_timeouts")
                    return {proto.OK: False, proto.ERROR: proto.BUSY}
                self.metrics.observe("fence", time.monotonic() - start)
            if self.udp_port and not await self._udp_drained():
                return {proto.OK: False, proto.ERROR: proto.BUSY}
            blocked = self.gate.fetch_blocked()
        if blocked is not None:
            self.metrics.inc("fetches_blocked")
            log.info("fetch %r: busy: %s", key, blocked)
            return {proto.OK: False, proto.ERROR: proto.BUSY}
        try:
            item = await self.reader.get(key)
        except FetchError as e:
            self.metrics.inc("fetch_errors")
            return {proto.OK: False, proto.ERROR: str(e)}
        self.metrics.inc("fetches")
        return self._item_reply(key, item)
