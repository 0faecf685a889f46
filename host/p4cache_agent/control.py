"""The controller's channel: JSON lines over TCP, one request per line, one reply per request
(spec "Agent control channel"). Requests carry ``id``; replies echo it and may come out of
order (a fetch can wait for its fence while others are answered).

    {"id":1,"op":"fetch","key":"foo"}
      -> {"id":1,"ok":true,"found":true,"flags":0,"ttl":-1,"value_b64":"..."}
       | {"id":1,"ok":true,"found":false}
       | {"id":1,"ok":false,"error":"busy"}          fence timeout, flush owed or pending
    {"id":2,"op":"unwatch","key":"foo"}   -> {"id":2,"ok":true}
    {"id":3,"op":"sync","keys":["a","b"]} -> {"id":3,"ok":true,"watched":2}
    {"id":4,"op":"status"}                -> {"id":4,"ok":true,"status":{...}}
    anything else                         -> {"id":...,"ok":false,"error":"..."}

Keys are memcached keys as latin-1 strings.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from p4cache_agent import udpqueue
from p4cache_agent.expiry import Expiry
from p4cache_agent.fetch import FetchError, MemcachedReader
from p4cache_agent.gate.cparse import KEY_MAX_LENGTH
from p4cache_agent.gate.policy import Gate
from p4cache_agent.metrics import Metrics
from p4cache_agent.watch import InFlight, WatchSet

log = logging.getLogger("p4cache_agent.control")

REQUEST_MAX = 16 << 20       # a sync of every slot's key fits many times over
OUTSTANDING_MAX = 256        # requests in progress per connection


class BadRequest(Exception):
    pass


def _key(req: dict[str, Any], name: str = "key") -> bytes:
    k = req.get(name)
    if not isinstance(k, str):
        raise BadRequest(f"'{name}' must be a string")
    try:
        b = k.encode("latin-1")
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
                    self._send(writer, {"id": None, "ok": False, "error": "request too long"})
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
            writer.write(json.dumps(rep, separators=(",", ":")).encode() + b"\n")

    async def _answer(self, line: bytes, writer: asyncio.StreamWriter) -> None:
        rid: Any = None
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise BadRequest("a request is a JSON object")
            rid = req.get("id")
            rep = await self.handle(req)
        except (ValueError, BadRequest) as e:
            rep = {"ok": False, "error": f"bad request: {e}"}
        self._send(writer, {"id": rid, **rep})

    async def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        self.metrics.inc(f"control_{op}" if op in ("fetch", "unwatch", "sync", "status")
                         else "control_other")
        if op == "fetch":
            return await self.fetch(_key(req))
        if op == "unwatch":
            key = _key(req)
            self.watch.discard(key)
            self.expiry.cancel(key)
            return {"ok": True}
        if op == "sync":
            keys = req.get("keys")
            if not isinstance(keys, list):
                raise BadRequest("'keys' must be a list")
            ks = {_key({"key": k}) for k in keys}
            self.watch.sync(ks)
            self.expiry.keep_only(ks)
            log.info("sync: %d keys watched", len(ks))
            return {"ok": True, "watched": len(ks)}
        if op == "status":
            return {"ok": True, "status": self.status()}
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
                    return {"ok": False, "error": "busy"}
                self.metrics.observe("fence", time.monotonic() - start)
            if self.udp_port and not await self._udp_drained():
                return {"ok": False, "error": "busy"}
            blocked = self.gate.fetch_blocked()
        if blocked is not None:
            self.metrics.inc("fetches_blocked")
            log.info("fetch %r: busy: %s", key, blocked)
            return {"ok": False, "error": "busy"}
        try:
            item = await self.reader.get(key)
        except FetchError as e:
            self.metrics.inc("fetch_errors")
            return {"ok": False, "error": str(e)}
        self.metrics.inc("fetches")
        if item is None:
            return {"ok": True, "found": False}
        if item.ttl > 0:
            self.expiry.invalidate_in(key, item.ttl - self.ttl_margin)
        return {"ok": True, "found": True, "flags": item.flags, "ttl": item.ttl,
                "value_b64": base64.b64encode(item.value).decode()}
