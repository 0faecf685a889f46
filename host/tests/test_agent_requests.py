"""The request framer and the command table, without memcached: where lines and data blocks
end, what each command writes, and (hypothesis) that no input breaks the framer or depends on
how it is split."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4cache_agent.gate.commands import Reply, Write, classify
from p4cache_agent.gate.cparse import Num, safe_strtol, safe_strtoul, tokenize
from p4cache_agent.gate.requests import (
    LINE_MAX,
    Data,
    DataEnd,
    Line,
    LongGet,
    Raw,
    RequestFramer,
)


def events(chunks: list[bytes]) -> list:
    f = RequestFramer()
    out = []
    for c in chunks:
        f.feed(c)
        while (ev := f.next()) is not None:
            out.append(ev)
    return out


def merged(evs: list) -> list:
    """Events with consecutive Data / Raw pieces joined, and Data joined into the DataEnd that
    follows it (where the pieces are cut follows how the input was cut)."""
    out: list = []
    for ev in evs:
        prev = out[-1] if out else None
        if isinstance(ev, Raw) and isinstance(prev, Raw):
            out[-1] = Raw(prev.raw + ev.raw, ev.reason)
        elif isinstance(ev, Data) and isinstance(prev, Data):
            out[-1] = Data(prev.raw + ev.raw)
        elif isinstance(ev, DataEnd) and isinstance(prev, Data):
            out[-1] = DataEnd(prev.raw + ev.raw, ev.ok)
        else:
            out.append(ev)
    return out


def test_numbers_read_as_memcached_reads_them() -> None:
    assert safe_strtol(b"12") == 12
    assert safe_strtol(b"-3") == -3
    assert safe_strtol(b"+7") == 7
    assert safe_strtol(b"\t5") == 5          # strtol skips leading blanks
    assert safe_strtol(b"5\r") == 5          # and memcached accepts a blank after the digits
    assert safe_strtol(b"5x") is Num.FAIL
    assert safe_strtol(b"") is Num.FAIL
    assert safe_strtol(b"2147483648") is Num.FAIL
    assert safe_strtol(b"-2147483649") is Num.GRAY
    assert safe_strtoul(b"4294967296") == 0   # truncated into 32 bits, accepted
    assert safe_strtoul(b"-1") is Num.FAIL
    assert safe_strtoul(b"18446744073709551616", 64) is Num.FAIL  # ERANGE


def test_tokens_split_on_spaces_only() -> None:
    assert tokenize(b"  set\tk  0 ") == ([b"set\tk", b"0"], 3)
    parts, ntok = tokenize(b" ".join(b"k%d" % i for i in range(30)))
    assert len(parts) == 30 and ntok == 24


@pytest.mark.parametrize("line, data, keys, write, reply", [
    (b"set foo 0 0 5", 7, (b"foo",), Write.KEYS, Reply.LINE),
    (b"set foo 0 0 5 noreply", 7, (b"foo",), Write.KEYS, Reply.FENCE),
    (b"cas foo 0 0 1 99", 3, (b"foo",), Write.KEYS, Reply.LINE),
    (b"append foo 0 0 0", 2, (b"foo",), Write.KEYS, Reply.LINE),
    (b"set foo 0 0 -1", None, (b"foo",), Write.KEYS, Reply.LINE),     # CLIENT_ERROR, no block
    (b"set foo x 0 5", None, (b"foo",), Write.KEYS, Reply.LINE),
    (b"set foo 0 0", None, (), Write.NONE, Reply.LINE),              # ERROR
    (b"set " + b"k" * 251 + b" 0 0 5", None, (b"k" * 251,), Write.KEYS, Reply.LINE),
    (b"set foo 0 0 2000000", 2000002, (b"foo",), Write.KEYS, Reply.LINE),
    (b"ms foo 3 T10", 5, (b"foo",), Write.KEYS, Reply.META),
    (b"ms foo 3 q", 5, (b"foo",), Write.KEYS, Reply.FENCE),
    (b"ms foo 3 Zbad", 5, (b"foo",), Write.KEYS, Reply.META),         # swallowed after error
    (b"ms foo 3 b", 5, (), Write.ALL, Reply.META),                     # base64 key
    (b"ms foo", None, (b"foo",), Write.KEYS, Reply.META),
    (b"get a b c", None, (), Write.NONE, Reply.RETRIEVAL),
    (b"gat 10 a b", None, (b"a", b"b"), Write.KEYS, Reply.RETRIEVAL),
    (b"mg foo v f t", None, (), Write.NONE, Reply.META),
    (b"mg foo v q", None, (), Write.NONE, Reply.FENCE),
    (b"mg foo v N30", None, (b"foo",), Write.KEYS, Reply.META),
    (b"mg foo T30", None, (b"foo",), Write.KEYS, Reply.META),
    (b"mg Zm9v b v", None, (), Write.NONE, Reply.META),
    (b"mg Zm9v b T1", None, (), Write.ALL, Reply.META),
    (b"md foo q", None, (b"foo",), Write.KEYS, Reply.FENCE),
    (b"ma foo v", None, (b"foo",), Write.KEYS, Reply.META),
    (b"touch foo 10", None, (b"foo",), Write.KEYS, Reply.LINE),
    (b"incr foo 1 noreply", None, (b"foo",), Write.KEYS, Reply.FENCE),
    (b"delete foo", None, (b"foo",), Write.KEYS, Reply.LINE),
    (b"delete foo 0 noreply", None, (b"foo",), Write.KEYS, Reply.FENCE),
    (b"flush_all", None, (), Write.ALL, Reply.LINE),
    (b"flush_all 10 noreply", None, (), Write.ALL, Reply.FENCE),
    (b"stats", None, (), Write.NONE, Reply.FENCE),
    (b"version", None, (), Write.NONE, Reply.LINE),
    (b"mn", None, (), Write.NONE, Reply.LINE),
    (b"bogus foo", None, (), Write.ALL, Reply.FENCE),
    (b"", None, (), Write.ALL, Reply.FENCE),
    (b"set foo 0 0 5\0 garbage", 7, (b"foo",), Write.KEYS, Reply.LINE),  # strlen stops at NUL
])
def test_command_table(line: bytes, data: int | None, keys: tuple, write: Write,
                       reply: Reply) -> None:
    cmd = classify(line + b"\r")
    assert (cmd.data, cmd.keys, cmd.write, cmd.reply) == (data, keys, write, reply)


def test_flush_all_delay() -> None:
    assert classify(b"flush_all 30").flush_delay == 30
    assert classify(b"flush_all").flush_delay is None
    assert classify(b"flush_all noreply").flush_delay is None


def test_lines_and_blocks() -> None:
    evs = merged(events([b"get a\r\nset k 0 0 5\r\nhel", b"lo\r\nversion\n"]))
    assert [type(e) for e in evs] == [Line, Line, DataEnd, Line]
    assert evs[2] == DataEnd(b"hello\r\n", True)
    assert evs[3].raw == b"version\n"


def test_a_bad_block_end_is_reported_and_framing_goes_on() -> None:
    evs = events([b"set k 0 0 1\r\nxyz\r\nget k\r\n"])
    assert evs[1:3] == [Data(b"x"), DataEnd(b"yz", False)]
    # memcached takes the next line from right after the block's two bytes, as here
    assert isinstance(evs[3], Line) and evs[3].raw == b"\r\n"


def test_binary_protocol_is_raw() -> None:
    evs = events([b"\x80\x01\x00\x03", b"get k\r\n"])
    assert all(isinstance(e, Raw) for e in evs)
    assert b"".join(e.raw for e in evs) == b"\x80\x01\x00\x03get k\r\n"


def test_0x80_after_the_first_byte_is_text() -> None:
    evs = events([b"get k\r\n\x80junk\r\n"])
    assert [type(e) for e in evs] == [Line, Line]
    assert evs[1].cmd.write is Write.ALL


def test_over_long_lines() -> None:
    long_set = b"set " + b"k" * LINE_MAX + b" 0 0 1\r\nx\r\n"
    evs = events([long_set[:LINE_MAX], long_set[LINE_MAX:]])
    assert all(isinstance(e, Raw) for e in evs)
    # a line of exactly LINE_MAX bytes before its newline is still a line
    ok = b"get " + b"k" * (LINE_MAX - 4) + b"\n"
    assert [type(e) for e in events([ok])] == [Line]
    big_get = b"   get " + b"k " * 3000 + b"\r\nversion\r\n"
    evs = merged(events([big_get[i:i + 1000] for i in range(0, len(big_get), 1000)]))
    assert [type(e) for e in evs] == [LongGet, DataEnd, Line]
    assert b"".join(e.raw for e in evs[:2]) == big_get[:-len(b"version\r\n")]
    # the whole long get in one piece: only the line is the get's
    evs = merged(events([big_get]))
    assert [type(e) for e in evs] == [LongGet, DataEnd, Line]
    assert b"".join(e.raw for e in evs[:2]) == big_get[:-len(b"version\r\n")]
    spaced = b" " * 101 + b"get " + b"k" * LINE_MAX + b"\r\n"
    assert all(isinstance(e, Raw) for e in events([spaced]))


def test_gray_storage_line_goes_raw() -> None:
    evs = events([b"set k 0 0 -9999999999\r\nabc\r\n"])
    assert all(isinstance(e, Raw) for e in evs)


def test_watch_leaves_the_protocol() -> None:
    evs = events([b"watch\r\nget k\r\n"])
    assert isinstance(evs[0], Line) and evs[0].cmd.reply is Reply.RAW
    assert isinstance(evs[1], Raw)


def test_memory_stays_bounded_on_a_huge_block() -> None:
    f = RequestFramer()
    f.feed(b"set k 0 0 100000000\r\n")
    assert isinstance(f.next(), Line)
    chunk = b"x" * 65536
    for _ in range(100):
        f.feed(chunk)
        while (ev := f.next()) is not None:
            assert isinstance(ev, Data)
        assert f.buffered == 0


PIECES = st.sampled_from([
    b"get k\r\n", b"gets a b\r\n", b"set k 0 0 3\r\nabc\r\n", b"set k 0 0 3 noreply\r\nab",
    b"ms k 2 T1\r\nhi\r\n", b"mg k v q\r\n", b"delete k\r\n", b"flush_all\r\n", b"\r\n",
    b"\n", b"\x00", b"\x80", b" ", b"set k 0 0 -1\r\n", b"incr k 1\r\n", b"watch\r\n",
    b"x" * 1500, b"get " + b"k " * 700, b"set k 0 0 99999999999\r\n", b"\r", b"mn\r\n",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(PIECES, st.binary(max_size=64)), max_size=40), st.data())
def test_fuzz_framer_never_fails_and_ignores_splits(parts: list[bytes], data: st.DataObject
                                                    ) -> None:
    stream = b"".join(parts)
    whole = events([stream])
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    split = events(chunks)
    assert merged(split) == merged(whole)
    # every byte is in exactly one event, in order, except an unfinished last line
    seen = b"".join(e.raw for e in whole)
    assert stream.startswith(seen)
    rest = stream[len(seen):]
    # an unfinished line, or the first byte of a block's two-byte end
    assert len(rest) < 2 or (len(rest) <= LINE_MAX and b"\n" not in rest)
