"""The request framer: a client's byte stream cut where memcached 1.6.18 cuts it.

Events, pulled one at a time (the relay stops pulling while a write waits for the switch, and
what is not pulled stays here):

- :class:`Line` — one command line (bytes up to and including its '\\n') and its
  :class:`~p4cache_agent.gate.commands.Command`;
- :class:`Data` — a piece of the data block after a storage line (never more than was received;
  a block is streamed, never held whole), then :class:`DataEnd` with its last two bytes, which
  memcached wants to be CRLF (``CLIENT_ERROR bad data chunk`` otherwise, with the same count);
- :class:`LongGet` / :class:`Data` / :class:`DataEnd` — a get/gets line longer than memcached's
  2048-byte limit, which memcached alone accepts (and buffers) whatever its length;
- :class:`Raw` — bytes the framer cannot follow: the binary protocol (first byte 0x80), a line
  over 2048 bytes without its '\\n' that is not a get (memcached closes the connection if it
  sees it so, or runs it if the whole line came in one read: the gate cannot know which), a
  storage line whose data block memcached may or may not read, everything after ``watch`` /
  ``lru_crawler metadump``. Once raw, always raw.

Memory: the buffer holds at most one partial line (2048 bytes) plus what the caller fed it.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4cache_agent.gate.commands import Command, Reply, classify

LINE_MAX = 2048               # try_read_command_ascii: more bytes than this without a '\n'
LEADING_SPACES_MAX = 100      # ... is a get only after at most this many spaces
BINARY_MAGIC = 0x80


@dataclass(slots=True)
class Line:
    raw: bytes
    cmd: Command


@dataclass(slots=True)
class LongGet:
    raw: bytes  # the line's first bytes; more follow as Data, then DataEnd(b"", True)


@dataclass(slots=True)
class Data:
    raw: bytes


@dataclass(slots=True)
class DataEnd:
    raw: bytes   # the block's last two bytes ("\r\n" when well formed)
    ok: bool


@dataclass(slots=True)
class Raw:
    raw: bytes
    reason: str


Event = Line | LongGet | Data | DataEnd | Raw

_START, _LINE, _DATA, _LONG, _RAW = range(5)


def _long_line_is_get(buf: bytes | bytearray) -> bool:
    """try_read_command_ascii's test on a line with no '\\n' in its first 2048 bytes."""
    i = 0
    while i < len(buf) and buf[i] == 0x20:
        i += 1
    if i > LEADING_SPACES_MAX:
        return False
    return buf[i:i + 4] == b"get " or buf[i:i + 5] == b"gets "


class RequestFramer:
    def __init__(self) -> None:
        self._buf = bytearray()
        self._state = _START
        self._left = 0          # bytes of the current data block still to come (CRLF included)
        self._raw_reason = ""

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def raw(self) -> bool:
        return self._state == _RAW

    def feed(self, data: bytes) -> None:
        self._buf += data

    def enter_raw(self, reason: str) -> None:
        """From now on everything is Raw (after watch, or when the relay gives up)."""
        self._state = _RAW
        self._raw_reason = reason

    def next(self) -> Event | None:
        """The next event, or None until more bytes are fed."""
        buf = self._buf
        if not buf:
            return None
        state = self._state
        if state == _START:
            if buf[0] == BINARY_MAGIC:
                self.enter_raw("binary protocol")
                return self.next()
            self._state = state = _LINE
        if state == _LINE:
            nl = buf.find(b"\n", 0, LINE_MAX + 1)
            if nl >= 0:
                raw = bytes(buf[:nl + 1])
                del buf[:nl + 1]
                cmd = classify(raw[:-1])
                if cmd.gray:
                    self.enter_raw(f"{cmd.name}: data block length unknown")
                    return Raw(raw, self._raw_reason)
                if cmd.data is not None:
                    self._state, self._left = _DATA, cmd.data
                elif cmd.reply is Reply.RAW:
                    self.enter_raw(cmd.name)
                return Line(raw, cmd)
            if len(buf) <= LINE_MAX:
                return None
            if _long_line_is_get(buf):
                self._state = _LONG
                raw = bytes(buf[:LINE_MAX + 1])   # no '\n' in these; the rest may hold one
                del buf[:LINE_MAX + 1]
                return LongGet(raw)
            self.enter_raw(f"line over {LINE_MAX} bytes")
            return self.next()
        if state == _DATA:
            left = self._left
            if left > 2:
                n = min(left - 2, len(buf))
                raw = bytes(buf[:n])
                del buf[:n]
                self._left -= n
                return Data(raw)
            if len(buf) < left:
                return None
            raw = bytes(buf[:left])
            del buf[:left]
            self._left = 0
            self._state = _LINE
            return DataEnd(raw, raw == b"\r\n")
        if state == _LONG:
            nl = buf.find(b"\n")
            if nl < 0:
                raw = bytes(buf)
                buf.clear()
                return Data(raw)
            raw = bytes(buf[:nl + 1])
            del buf[:nl + 1]
            self._state = _LINE
            return DataEnd(raw, True)
        raw = bytes(buf)
        buf.clear()
        return Raw(raw, self._raw_reason)
