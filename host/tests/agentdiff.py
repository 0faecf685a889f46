"""Differential runs: the same bytes to memcached directly and through the agent, replies
compared byte for byte. Command generators for hypothesis."""

from __future__ import annotations

import socket
import struct
import threading
import time

from hypothesis import strategies as st

from p4cache_agent.gate.commands import Write
from p4cache_agent.gate.requests import Line, Raw, RequestFramer


def run_to_close(port: int, chunks: list[bytes], pause: float = 0.0, timeout: float = 30.0,
                 host: str = "127.0.0.1") -> bytes:
    """Send the chunks (``pause`` between them), close our sending side, read until the
    server closes. memcached runs everything it got, answers, and closes on the EOF.

    Replies are read while the chunks are still being sent: a client that only reads at the
    end deadlocks with memcached as soon as the replies outgrow the socket buffers (memcached
    stops reading while it cannot write), and a stream cut short on one side only leaves the
    two servers with different contents for every later example."""
    out = bytearray()
    tail: list[bytes] = []
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def read() -> None:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                try:
                    d = s.recv(1 << 20)
                except ConnectionResetError:
                    tail.append(b"<RST>")
                    return
                except (TimeoutError, OSError):
                    continue
                if not d:
                    return
                out.extend(d)
            tail.append(b"<TIMEOUT>")

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            for i, c in enumerate(chunks):
                if pause and i:
                    time.sleep(pause)
                s.sendall(c)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            # the server already closed (and reset) the connection
            reader.join(timeout)
            return bytes(out) + b"<CLOSED>"
        reader.join(timeout + 1)
    return bytes(out) + b"".join(tail)


def needs_switch(stream: bytes) -> bool:
    """Would the gate need the switch for this stream with W known and empty (a flush)?"""
    f = RequestFramer()
    f.feed(stream)
    while (ev := f.next()) is not None:
        if isinstance(ev, Raw) or (isinstance(ev, Line) and ev.cmd.write is Write.ALL):
            return True
        if type(ev).__name__ == "DataEnd" and not ev.ok:
            return True
    return False


KEYS = [b"k1", b"k2", b"num", b"a-much-longer-key-" + b"x" * 40, b"k" * 250]


def keys() -> st.SearchStrategy[bytes]:
    return st.sampled_from(KEYS)


def values() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"", b"\r\n", b"END\r\n", b"VALUE x 0 1\r\n", b"MN\r\n", b"42"]),
        st.integers(0, 2**64 - 1).map(lambda n: str(n).encode()),
        st.sampled_from([200_000, 1_100_000, 2_000_000]).map(lambda n: b"v" * n),
    )


@st.composite
def storage(draw: st.DrawFn) -> bytes:
    verb = draw(st.sampled_from([b"set", b"add", b"replace", b"append", b"prepend", b"cas"]))
    key, value = draw(keys()), draw(values())
    flags = draw(st.sampled_from([b"0", b"5", b"4294967295"]))
    cas = b" %d" % draw(st.integers(0, 40)) if verb == b"cas" else b""
    noreply = draw(st.sampled_from([b"", b"", b" noreply"]))
    length = len(value)
    return b"%s %s %s 0 %d%s%s\r\n%s\r\n" % (verb, key, flags, length, cas, noreply, value)


@st.composite
def meta(draw: st.DrawFn) -> bytes:
    key = draw(keys())
    kind = draw(st.sampled_from(["mg", "ms", "md", "ma", "mn", "me"]))
    if kind == "mn":
        return b"mn\r\n"
    if kind == "me":
        return b"me " + key + b"\r\n"
    if kind == "mg":
        flags = draw(st.lists(st.sampled_from([b"v", b"f", b"k", b"s", b"c", b"q", b"h", b"u",
                                               b"Oop1", b"N0", b"T0", b"x"]),
                              unique=True, max_size=5))
        return b" ".join([b"mg", key, *flags]) + b"\r\n"
    if kind == "ms":
        value = draw(values())
        flags = draw(st.lists(st.sampled_from([b"T0", b"F7", b"q", b"k", b"c", b"MA", b"ME",
                                               b"MR", b"Ooo", b"Zbad", b"I"]),
                              unique=True, max_size=4))
        return b" ".join([b"ms", key, b"%d" % len(value), *flags]) + b"\r\n" + value + b"\r\n"
    if kind == "md":
        flags = draw(st.lists(st.sampled_from([b"q", b"I", b"k", b"Oxy", b"C1"]), unique=True,
                              max_size=3))
        return b" ".join([b"md", key, *flags]) + b"\r\n"
    flags = draw(st.lists(st.sampled_from([b"q", b"v", b"N0", b"J7", b"D3", b"MD", b"t", b"c"]),
                          unique=True, max_size=4))
    return b" ".join([b"ma", key, *flags]) + b"\r\n"


@st.composite
def other(draw: st.DrawFn) -> bytes:
    key, key2 = draw(keys()), draw(keys())
    return draw(st.sampled_from([
        b"get " + key + b"\r\n", b"gets " + key + b" " + key2 + b"\r\n",
        b"gat 0 " + key + b"\r\n", b"gats 0 " + key + b" " + key2 + b"\r\n",
        b"get\r\n", b"delete " + key + b"\r\n", b"delete " + key + b" noreply\r\n",
        b"delete " + key + b" 0\r\n", b"delete " + key + b" x noreply\r\n",
        b"incr " + key + b" 3\r\n", b"decr " + key + b" 1 noreply\r\n",
        b"incr " + key + b" x\r\n", b"touch " + key + b" 0\r\n",
        b"touch " + key + b" 0 noreply\r\n", b"version\r\n", b"verbosity 0\r\n",
        b"verbosity 0 noreply\r\n", b"set " + key + b" 0 0 abc\r\n",
        b"set " + key + b" 0 0 -1\r\n", b"set " + key + b" 0 0\r\n",
        b"get " + key + b"\n", b"  get   " + key + b"  \r\n",
        b"get " + b" ".join([key] * 30) + b"\r\n",
        b"get " + b" ".join([b"key%d" % i for i in range(400)]) + b"\r\n",   # over 2048 bytes
        b"mg " + key + b" v\0trailing\r\n",
    ]))


def command() -> st.SearchStrategy[bytes]:
    return st.one_of(storage(), meta(), other())


def binary_request(opcode: int, key: bytes = b"", extras: bytes = b"", value: bytes = b"",
                   opaque: int = 0) -> bytes:
    """One binary-protocol request (memcached's protocol_binary.h request header)."""
    body = extras + key + value
    return struct.pack("!BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, len(body),
                       opaque, 0) + body


def binary_stream() -> st.SearchStrategy[bytes]:
    """Valid binary requests: set, get, delete, incr, noop, flush."""
    key = st.sampled_from([b"k1", b"k2"])
    one = st.one_of(
        st.builds(lambda k, v: binary_request(0x01, k, struct.pack("!II", 0, 0), v), key,
                  st.binary(max_size=20)),
        st.builds(lambda k: binary_request(0x00, k), key),
        st.builds(lambda k: binary_request(0x04, k), key),
        st.builds(lambda k: binary_request(0x05, k, struct.pack("!QQI", 1, 0, 0)), key),
        st.just(binary_request(0x0A)),
        st.just(binary_request(0x08)),
    )
    return st.lists(one, min_size=1, max_size=10).map(b"".join)


def without_cas(replies: bytes) -> bytes:
    """Binary-protocol replies with their CAS fields zeroed (two servers' CAS counters differ
    by whatever else each has stored)."""
    out, pos = bytearray(replies), 0
    while pos + 24 <= len(out) and out[pos] == 0x81:
        out[pos + 16:pos + 24] = bytes(8)
        pos += 24 + int.from_bytes(out[pos + 8:pos + 12], "big")
    return bytes(out)


def split(stream: bytes, cuts: list[int]) -> list[bytes]:
    cuts = sorted({min(max(c, 0), len(stream)) for c in cuts})
    edges = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]
