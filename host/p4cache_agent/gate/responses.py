"""The response framer: memcached's replies cut into one response per command, so the relay
knows when each command is done (and so when a write has reached memcached).

The relay says what it expects (the :class:`~p4cache_agent.gate.commands.Reply` of the oldest
command not yet answered) and gets back the bytes to pass on and whether that response is
complete. Data blocks (VALUE / VA) pass through in pieces, as they arrive.
"""

from __future__ import annotations

from p4cache_agent.gate.commands import Reply

RESP_LINE_MAX = 1 << 16   # no memcached reply line comes near this (stats, ME, VALUE lines)
FENCE_LINE = b"MN\r\n"
FENCE_REQUEST = b"mn\r\n"


class ProtocolError(Exception):
    """memcached sent something this framer cannot follow."""


def _block_size(line: bytes | bytearray, index: int) -> int:
    parts = line.split()
    try:
        n = int(parts[index])
    except (IndexError, ValueError):
        raise ProtocolError(f"unreadable header {line[:80]!r}") from None
    if n < 0:
        raise ProtocolError(f"negative size in {line[:80]!r}")
    return n + 2


class ResponseFramer:
    def __init__(self) -> None:
        self._buf = bytearray()
        self._block = 0            # bytes of a data block still to pass through
        self._ends_with_block = False

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> None:
        self._buf += data

    def take_all(self) -> bytes:
        out = bytes(self._buf)
        self._buf.clear()
        return out

    def step(self, kind: Reply) -> tuple[bytes, bool] | None:
        """Frame what is buffered against a response of ``kind``: (bytes for the client,
        response complete), or None until more bytes come. Takes as much of the response as
        is buffered in one go."""
        buf = self._buf
        n = len(buf)
        if not n:
            return None
        if kind is Reply.RAW or kind is Reply.NONE:
            out = bytes(buf)
            buf.clear()
            return out, False
        pos = 0
        end = -1          # where the bytes for the client stop (the gate's MN is not passed on)
        done = False
        while pos < n:
            if self._block:
                take = min(self._block, n - pos)
                pos += take
                self._block -= take
                if self._block:
                    break
                if self._ends_with_block:
                    self._ends_with_block = False
                    done = True
                    break
                continue
            nl = buf.find(b"\n", pos, pos + RESP_LINE_MAX)
            if nl < 0:
                if n - pos >= RESP_LINE_MAX:
                    raise ProtocolError(f"reply line over {RESP_LINE_MAX} bytes")
                break
            start, pos = pos, nl + 1
            if kind is Reply.LINE:
                done = True
                break
            if kind is Reply.RETRIEVAL:
                if buf.startswith(b"VALUE ", start):
                    self._block = _block_size(buf[start:pos], 3)
                    continue
                done = True
                break
            if kind is Reply.META:
                if buf.startswith(b"VA ", start):
                    self._block = _block_size(buf[start:pos], 1)
                    self._ends_with_block = True
                    continue
                done = True
                break
            # FENCE: everything up to the gate's own "MN", which the client never sees.
            if pos - start == 4 and buf.startswith(FENCE_LINE, start):
                end = start
                done = True
                break
            if buf.startswith(b"VA ", start):
                self._block = _block_size(buf[start:pos], 1)
            elif buf.startswith(b"VALUE ", start):
                self._block = _block_size(buf[start:pos], 3)
        if not pos:
            return None
        out = bytes(buf[:pos if end < 0 else end])
        del buf[:pos]
        return out, done
