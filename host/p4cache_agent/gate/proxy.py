"""The relay: one client connection, one upstream connection to memcached, commands in order.

Requests are framed (requests.py), writes go through the gate (policy.py) — the connection
stops reading and forwarding while the switch confirms an invalidation, so pipelined commands
keep their order — and responses are framed (responses.py) against what each forwarded
command will get, so the gate knows when each write is done at memcached.

noreply: the relay appends ``mn`` after every command whose response it cannot predict
(classic ``noreply``, meta commands with ``q``, stats and other admin commands, garbage) and
takes everything up to memcached's "MN" as that command's response; the "MN" itself is not
passed on. A noreply write is in flight until then.

A write the switch does not confirm is not forwarded: the client gets
``SERVER_ERROR p4cache: cache invalidation not confirmed`` in its place (nothing for classic
noreply; a meta command with q gets it, errors are always returned). Bytes the framer cannot
follow (requests.py: Raw) are forwarded only after a confirmed OP_FLUSH each time; the
connection then counts as a write to everything until memcached has closed it, and one more
flush follows.

Bounds per connection: the request framer's buffer (one read plus one partial line), the
responses awaited (MAX_PENDING, then the client is not read), the transports' write buffers
(reading the other side pauses when one is full).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass

from p4cache_agent.gate.commands import Command, Reply
from p4cache_agent.gate.policy import REFUSAL, Admission, Gate
from p4cache_agent.gate.requests import Data, DataEnd, Line, LongGet, Raw, RequestFramer
from p4cache_agent.gate.responses import FENCE_REQUEST, ProtocolError, ResponseFramer
from p4cache_agent.loop import OWED
from p4cache_agent.metrics import Metrics
from p4cache_agent.watch import Ticket

log = logging.getLogger("p4cache_agent.proxy")
trace = logging.getLogger("p4cache_agent.trace")

MAX_PENDING = 1024          # responses awaited before the client is no longer read
BUFFER_MAX = 1 << 18        # request bytes held before the client is no longer read
CLOSE_WAIT = 10.0           # for memcached to close after the client went away


@dataclass(slots=True)
class _Expect:
    kind: Reply | None            # None: a reply made here (synth)
    ticket: Ticket | None = None
    synth: bytes = b""


# What a command without a ticket (a read) waits for: never modified, so shared.
_UNTICKETED = {kind: _Expect(kind) for kind in Reply}


class _Upstream(asyncio.Protocol):
    def __init__(self, conn: GateConnection) -> None:
        self.conn = conn

    def data_received(self, data: bytes) -> None:
        self.conn.upstream_data(data)

    def eof_received(self) -> bool:
        self.conn.upstream_closed()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn.upstream_closed()

    def pause_writing(self) -> None:
        self.conn.pause("upstream-full")

    def resume_writing(self) -> None:
        self.conn.resume("upstream-full")


class GateConnection(asyncio.Protocol):
    ids = 0

    def __init__(self, gate: Gate, memcached: tuple[str, int], metrics: Metrics) -> None:
        GateConnection.ids += 1
        self.id = GateConnection.ids
        self.gate = gate
        self.memcached = memcached
        self.metrics = metrics
        self.client: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.requests = RequestFramer()
        self.responses = ResponseFramer()
        self.expect: deque[_Expect] = deque()
        self._paused: set[str] = {"connect"}
        self._reading = True
        self._busy = False
        self._swallow = False         # drop the data block of a refused command
        self._fence_after_data = False
        self._quit = False
        self._client_eof = False
        self._client_gone = False
        self._upstream_done = False
        self._eof_sent = False
        self._raw_ticket: Ticket | None = None
        self._raw_expected = False
        self._owed = False            # counted in loop.OWED: memcached owes replies
        self._tasks: set[asyncio.Task[None]] = set()
        self._tracing = trace.isEnabledFor(logging.DEBUG)

    # ---- client side ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.client = transport
        self.metrics.inc("connections")
        self._apply_reading()
        self._spawn(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self.upstream, _ = await loop.create_connection(lambda: _Upstream(self),
                                                            *self.memcached)
        except OSError as e:
            log.warning("conn %d: memcached at %s:%d: %s", self.id, *self.memcached, e)
            self.metrics.inc("upstream_connect_errors")
            if self.client is not None:
                self.client.close()
            return
        if self._client_gone:
            self.upstream.close()
            return
        self.resume("connect")
        self._pump()

    def data_received(self, data: bytes) -> None:
        if self._quit:
            return
        self.requests.feed(data)
        self._pump()

    def eof_received(self) -> bool:
        self._client_eof = True
        self._pump()
        return True   # keep writing the responses still to come

    def connection_lost(self, exc: Exception | None) -> None:
        self._client_gone = True
        self._client_eof = True
        self._pump()   # memcached would still run what the client sent before it left

    def pause_writing(self) -> None:      # the client does not read its responses
        if self.upstream is not None:
            self.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None and not self._upstream_done:
            self.upstream.resume_reading()

    # ---- reading control -----------------------------------------------------------------
    def pause(self, why: str) -> None:
        self._paused.add(why)
        self._apply_reading()

    def resume(self, why: str) -> None:
        self._paused.discard(why)
        self._apply_reading()

    def _apply_reading(self) -> None:
        want = not self._paused
        if want != self._reading and self.client is not None and not self._client_gone:
            self._reading = want
            if want:
                self.client.resume_reading()
            else:
                self.client.pause_reading()

    # ---- requests --------------------------------------------------------------------------
    def _pump(self) -> None:
        """Handle request events until one must wait (for the switch, for responses)."""
        exhausted = False
        while not self._busy and not self._quit and self.upstream is not None:
            if len(self.expect) >= MAX_PENDING:
                self.pause("pending")
                break
            ev = self.requests.next()
            if ev is None:
                exhausted = True
                break
            self._handle(ev)
        if self.requests.buffered > BUFFER_MAX:
            self.pause("buffer")
        elif "buffer" in self._paused:
            self.resume("buffer")
        if (self._client_eof and not self._busy and not self._eof_sent
                and self.upstream is not None and (exhausted or self._quit)):
            self._finish_requests()
        self._count_owed()

    def _handle(self, ev: Line | LongGet | Data | DataEnd | Raw) -> None:
        if isinstance(ev, Line):
            self._line(ev)
        elif isinstance(ev, Data):
            if not self._swallow:
                self._send(ev.raw)
        elif isinstance(ev, DataEnd):
            if self._swallow:
                self._swallow = False
            elif ev.ok:
                self._end_block(ev.raw)
            else:
                # memcached counts the same bytes and answers CLIENT_ERROR bad data chunk;
                # still, a malformed block is what desynchronised framing looks like.
                self._wait_for(self._flush_then(ev.raw, block_end=True))
        elif isinstance(ev, LongGet):
            self.metrics.inc("commands")
            self._trace("get (line over 2048 bytes)")
            self._send(ev.raw)
            self.expect.append(_Expect(Reply.RETRIEVAL))
        else:
            self._wait_for(self._flush_then(ev.raw, raw_reason=ev.reason))

    def _line(self, ev: Line) -> None:
        cmd = ev.cmd
        self.metrics.inc("commands")
        adm = self.gate.admit(cmd)
        if adm.immediate:
            if self._tracing:
                self._trace(f"{cmd.name} {_keys(cmd)}: forwarded")
            self._forward(ev.raw, cmd, adm.ticket)
            return
        self._wait_for(self._gated(ev, adm))

    def _wait_for(self, coro) -> None:  # noqa: ANN001
        OWED.gating()
        self._busy = True
        self.pause("busy")
        self._spawn(coro)

    async def _gated(self, ev: Line, adm: Admission) -> None:
        cmd = ev.cmd
        try:
            ok = await self.gate.confirm(adm)
        except asyncio.CancelledError:
            self.gate.end(adm.ticket)
            raise
        if self._tracing:
            what = "flush" if adm.flush else f"invalidate {len(adm.keys)} key(s)"
            self._trace(f"{cmd.name} {_keys(cmd)}: {what} {'confirmed' if ok else 'FAILED'}")
        if ok:
            self._forward(ev.raw, cmd, adm.ticket)
        else:
            self.gate.end(adm.ticket)
            self.metrics.inc("refused")
            self._swallow = cmd.data is not None
            if cmd.silent:
                self.metrics.inc("refused_noreply_dropped")
            else:
                self.expect.append(_Expect(None, synth=REFUSAL))
                self._relay()
        self._done_waiting()

    async def _flush_then(self, raw: bytes, raw_reason: str = "", block_end: bool = False
                          ) -> None:
        if raw_reason and self._raw_ticket is None:
            self.metrics.inc("raw_connections")
            log.info("conn %d: no longer framed: %s", self.id, raw_reason)
            self._raw_ticket = self.gate.admit_all()
        ok = await self.gate.flush()
        self._trace(f"{raw_reason or 'bad data block end'}: flush "
                    f"{'confirmed' if ok else 'FAILED'}, {len(raw)} bytes")
        if not ok:
            self.metrics.inc("refused")
            self._abort("flush not confirmed")
            return
        if block_end:
            self._end_block(raw)
        else:
            if not self._raw_expected:
                self._raw_expected = True
                self.expect.append(_Expect(Reply.RAW))
            self._send(raw)
        self._done_waiting()

    def _done_waiting(self) -> None:
        self._busy = False
        self.resume("busy")
        self._pump()

    def _forward(self, raw: bytes, cmd: Command, ticket: Ticket | None) -> None:
        fence = cmd.reply is Reply.FENCE
        if cmd.data is not None:
            self._send(raw)
            self._fence_after_data = fence
        else:
            self._send(raw + FENCE_REQUEST if fence else raw)
        if cmd.reply is Reply.RAW:
            self._raw_expected = True
        self.expect.append(_UNTICKETED[cmd.reply] if ticket is None
                           else _Expect(cmd.reply, ticket))
        if cmd.reply is Reply.NONE:
            self._quit = True   # memcached closes after quit and reads nothing more

    def _end_block(self, raw: bytes) -> None:
        if self._fence_after_data:
            self._fence_after_data = False
            raw += FENCE_REQUEST
        self._send(raw)

    def _send(self, data: bytes) -> None:
        if self.upstream is not None and not self._upstream_done:
            self.upstream.write(data)

    def _finish_requests(self) -> None:
        """The client sent everything it will: let memcached finish and close."""
        self._eof_sent = True
        assert self.upstream is not None
        if self._upstream_done:
            return
        if self.upstream.can_write_eof():
            self.upstream.write_eof()
        else:
            self.upstream.close()
        self._spawn(self._close_watchdog())

    async def _close_watchdog(self) -> None:
        await asyncio.sleep(CLOSE_WAIT)
        if not self._upstream_done:
            log.warning("conn %d: memcached did not close within %.0f s", self.id, CLOSE_WAIT)
            if self._raw_ticket is not None or self.expect:
                self.gate.owe_flush("connection closed with writes of unknown outcome")
            if self.upstream is not None:
                self.upstream.abort()
            self.upstream_closed()

    # ---- responses -------------------------------------------------------------------------
    def upstream_data(self, data: bytes) -> None:
        self.responses.feed(data)
        self._relay()

    def _relay(self) -> None:
        out: list[bytes] = []
        expect = self.expect
        try:
            while expect:
                head = expect[0]
                if head.kind is None:
                    out.append(head.synth)
                    expect.popleft()
                    continue
                r = self.responses.step(head.kind)
                if r is None:
                    break
                chunk, done = r
                if chunk:
                    out.append(chunk)
                if done:
                    expect.popleft()
                    self.gate.end(head.ticket)
            if self.responses.buffered and not expect:
                raise ProtocolError("memcached sent a reply to no command")
        except ProtocolError as e:
            out.append(self.responses.take_all())
            self._write_client(out)
            self._abort(str(e))
            return
        self._write_client(out)
        if "pending" in self._paused and len(expect) < MAX_PENDING // 2:
            self.resume("pending")
            self._pump()
        self._count_owed()

    def _count_owed(self) -> None:
        owed = bool(self.expect) and not self._upstream_done
        if owed != self._owed:
            self._owed = owed
            OWED.connections += 1 if owed else -1

    def _write_client(self, out: list[bytes]) -> None:
        if out and self.client is not None and not self._client_gone:
            self.client.write(b"".join(out))
            OWED.replied()

    def upstream_closed(self) -> None:
        if self._upstream_done:
            return
        self._upstream_done = True
        # memcached has closed: whatever it was going to run, it ran.
        for e in self.expect:
            self.gate.end(e.ticket)
        pending_synth = [e.synth for e in self.expect if e.kind is None]
        self.expect.clear()
        self._count_owed()
        self._write_client(pending_synth)
        for t in list(self._tasks):
            if t is not asyncio.current_task():
                t.cancel()
        if self._raw_ticket is not None:
            self._spawn(self._last_flush(self._raw_ticket))
            self._raw_ticket = None
        if self.client is not None and not self._client_gone:
            self.client.close()

    async def _last_flush(self, ticket: Ticket) -> None:
        if not await self.gate.flush():
            self.gate.owe_flush("raw connection closed")
        self.gate.end(ticket)

    def _abort(self, why: str) -> None:
        """Framing is lost: stop reading the client, let memcached finish what it has, close."""
        log.warning("conn %d: closing: %s", self.id, why)
        self.metrics.inc("aborts")
        self._quit = True
        if self.client is not None and not self._client_gone:
            self.client.close()
        self._client_gone = True
        if self.upstream is not None and not self._eof_sent:
            self._finish_requests()

    # ---- helpers ---------------------------------------------------------------------------
    def _spawn(self, coro) -> None:  # noqa: ANN001
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._task_done)

    def _task_done(self, t: asyncio.Task[None]) -> None:
        self._tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("conn %d: %r", self.id, t.exception(), exc_info=t.exception())
            self._abort("internal error")

    def _trace(self, text: str) -> None:
        if self._tracing:
            trace.debug("conn %d: %s", self.id, text)


def _keys(cmd: Command) -> str:
    return " ".join(k.decode("latin-1") for k in cmd.keys[:4]) + (" ..." if len(cmd.keys) > 4
                                                                   else "")


class _PassUp(asyncio.Protocol):
    def __init__(self, down: PassThrough) -> None:
        self.down = down

    def data_received(self, data: bytes) -> None:
        if self.down.client is not None:
            self.down.client.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.down.client is not None:
            self.down.client.close()

    def pause_writing(self) -> None:
        if self.down.client is not None:
            self.down.client.pause_reading()

    def resume_writing(self) -> None:
        if self.down.client is not None:
            self.down.client.resume_reading()


class PassThrough(asyncio.Protocol):
    """--no-gate: bytes both ways, nothing read, nothing invalidated (the broken variant)."""

    def __init__(self, memcached: tuple[str, int], metrics: Metrics) -> None:
        self.memcached = memcached
        self.metrics = metrics
        self.client: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.closed = False
        self._task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.client = transport
        self.metrics.inc("connections")
        transport.pause_reading()
        self._task = asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        try:
            self.upstream, _ = await asyncio.get_running_loop().create_connection(
                lambda: _PassUp(self), *self.memcached)
        except OSError:
            if self.client is not None:
                self.client.close()
            return
        if self.closed:
            self.upstream.close()
        elif self.client is not None:
            self.client.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self.upstream is not None:
            self.upstream.write(data)

    def eof_received(self) -> bool:
        if self.upstream is not None and self.upstream.can_write_eof():
            self.upstream.write_eof()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.upstream is not None:
            self.upstream.close()

    def pause_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.resume_reading()
