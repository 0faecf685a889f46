"""What one command line does, read as memcached 1.6.18's process_command_ascii reads it.

For each line: which keys it may change (or everything), whether a data block follows and how
long it is, and how its response is framed. Anything memcached would answer with ``ERROR``
because it does not know the command word is garbage: a write to everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from p4cache_agent.gate.cparse import (
    INT_MAX,
    KEY_MAX_LENGTH,
    Num,
    command_text,
    safe_strtol,
    safe_strtoul,
    tokenize,
)


class Reply(Enum):
    LINE = "line"            # exactly one line
    RETRIEVAL = "retrieval"  # VALUE blocks, then END or an error line
    META = "meta"            # one line; "VA <n> ..." is followed by an n-byte data block
    FENCE = "fence"          # unknown shape: the gate appends "mn" and reads up to its "MN"
    NONE = "none"            # quit: nothing, memcached closes
    RAW = "raw"              # the connection leaves the text protocol (watch, metadump)


class Write(Enum):
    NONE = "none"
    KEYS = "keys"  # the keys in Command.keys
    ALL = "all"    # anything: flush_all, garbage, base64 keys


@dataclass(slots=True)
class Command:
    """Shared constants stand for the common reads: never modified."""

    name: str
    reply: Reply
    write: Write = Write.NONE
    keys: tuple[bytes, ...] = ()
    data: int | None = None      # bytes memcached reads after the line (block + CRLF)
    gray: bool = False           # cannot tell whether a data block follows: give up framing
    silent: bool = False         # classic noreply: a refusal is dropped, not answered
    flush_delay: int | None = None  # flush_all <delay>


GARBAGE = Command("garbage", Reply.FENCE, Write.ALL)
_ERROR = Command("error", Reply.LINE)   # a known word with the wrong token count: "ERROR"
_READS = {w: Command(w.decode(), Reply.RETRIEVAL) for w in (b"get", b"gets", b"bget")}
_MG = {Reply.META: Command("mg", Reply.META), Reply.FENCE: Command("mg", Reply.FENCE)}
_ME = Command("me", Reply.META)
_MN = Command("mn", Reply.LINE)
_VERSION = Command("version", Reply.LINE)

_MG_READ_FLAGS = frozenset(b"bcfhklOPLqstuvR")   # mg flags that leave the item alone


def _reply(quiet: bool, normal: Reply) -> Reply:
    return Reply.FENCE if quiet else normal


def _storage(name: str, parts: list[bytes], ntok: int, cas: bool) -> Command:
    """set/add/replace/append/prepend/cas: process_update_command."""
    if ntok not in ((7, 8) if cas else (6, 7)):
        return _ERROR
    noreply = parts[ntok - 2] == b"noreply"
    base = {"write": Write.KEYS, "keys": (parts[1],), "silent": noreply,
            "reply": _reply(noreply, Reply.LINE)}
    if len(parts[1]) > KEY_MAX_LENGTH:
        return Command(name, **base)
    vlen: int | Num = 0
    for tok, parse in ((parts[2], safe_strtoul), (parts[3], safe_strtol), (parts[4], safe_strtol)):
        v = parse(tok)
        if v is Num.GRAY:
            return Command(name, gray=True, **base)
        if v is Num.FAIL:
            return Command(name, **base)
        vlen = v
    if cas and safe_strtoul(parts[5], 64) is Num.FAIL:
        return Command(name, **base)
    assert isinstance(vlen, int)
    if vlen < 0 or vlen > INT_MAX - 2:
        return Command(name, **base)
    return Command(name, data=vlen + 2, **base)


def _flags(parts: list[bytes], ntok: int, start: int) -> list[bytes]:
    return parts[start:ntok - 1]


def _meta(parts: list[bytes], ntok: int) -> Command:
    op = parts[0][1:2]
    if op == b"n":
        return _MN
    if op not in b"gsdae" or len(op) != 1:
        return GARBAGE
    name = "m" + op.decode()
    if ntok < 3:
        return Command(name, Reply.LINE) if op != b"e" else Command(name, Reply.LINE)
    key = parts[1]
    flags = _flags(parts, ntok, 3 if op == b"s" else 2)
    firsts = {f[0] for f in flags}
    quiet = ord("q") in firsts
    reply = _reply(quiet, Reply.META)
    binary_key = ord("b") in firsts
    if op == b"e":
        return _ME
    if op == b"g":
        if firsts <= _MG_READ_FLAGS:
            return _MG[reply]
    write = Write.ALL if binary_key else Write.KEYS
    keys = () if binary_key else (key,)
    if op != b"s":
        return Command(name, reply, write, keys)
    # ms <key> <datalen> <flags>*: process_mset_command; the block is read (or swallowed) once
    # the length parses, whatever goes wrong after that.
    if len(key) > KEY_MAX_LENGTH or ntok == 3 or ntok > 20:
        return Command(name, reply, write, keys)
    vlen = safe_strtol(parts[2])
    if vlen is Num.GRAY:
        return Command(name, reply, write, keys, gray=True)
    if vlen is Num.FAIL or vlen < 0 or vlen > INT_MAX - 2:
        return Command(name, reply, write, keys)
    return Command(name, reply, write, keys, data=vlen + 2)


def _key_op(name: str, parts: list[bytes], ntok: int, ok: tuple[int, ...]) -> Command:
    """incr/decr/touch/delete <key> ...: one line, or nothing with noreply."""
    if ntok not in ok:
        return _ERROR
    noreply = ntok > 3 and parts[ntok - 2] == b"noreply"
    return Command(name, _reply(noreply, Reply.LINE), Write.KEYS, (parts[1],), silent=noreply)


def _flush_all(parts: list[bytes], ntok: int) -> Command:
    if not 2 <= ntok <= 4:
        return _ERROR
    noreply = parts[ntok - 2] == b"noreply"
    delay: int | None = None
    if ntok != (3 if noreply else 2):
        v = safe_strtol(parts[1])
        delay = v if isinstance(v, int) else None
    return Command("flush_all", _reply(noreply, Reply.LINE), Write.ALL, silent=noreply,
                   flush_delay=delay)


_STORAGE = {b"set": False, b"add": False, b"replace": False, b"append": False,
            b"prepend": False, b"cas": True}
_TOUCHING = {b"gat", b"gats"}
_FENCED = {b"stats", b"slabs", b"cache_memlimit", b"verbosity", b"lru", b"extstore",
           b"refresh_certs", b"lru_crawler"}


def classify_text(cmd: bytes) -> Command:
    """The command ``cmd`` (as :func:`command_text` gives it)."""
    parts, ntok = tokenize(cmd)
    if ntok < 2 or len(parts[0]) < 2:
        return GARBAGE
    word = parts[0]
    if word[0] == 0x6D and len(word) == 2:  # 'm'
        return _meta(parts, ntok)
    read = _READS.get(word)
    if read is not None:
        return read if ntok >= 3 else _ERROR
    if word in _STORAGE:
        return _storage(word.decode(), parts, ntok, _STORAGE[word])
    if word in _TOUCHING:
        if ntok < 3:
            return _ERROR
        return Command(word.decode(), Reply.RETRIEVAL, Write.KEYS, tuple(parts[2:]))
    if word in (b"incr", b"decr", b"touch"):
        return _key_op(word.decode(), parts, ntok, (4, 5))
    if word == b"delete":
        return _key_op("delete", parts, ntok, (3, 4, 5))
    if word == b"flush_all":
        return _flush_all(parts, ntok)
    if word == b"version":
        return _VERSION
    if word == b"quit":
        return Command("quit", Reply.NONE)
    if word == b"watch" or (word == b"lru_crawler" and ntok == 4 and parts[1] == b"metadump"):
        return Command(word.decode(), Reply.RAW)
    if word == b"shutdown":
        # Enabled (-A), memcached exits and comes back empty: a write to everything.
        return Command("shutdown", Reply.FENCE, Write.ALL)
    if word in _FENCED:
        return Command(word.decode(), Reply.FENCE)
    return GARBAGE


_GET, _GETS = _READS[b"get"], _READS[b"gets"]


def classify(line: bytes) -> Command:
    """The command of a line as read from the wire (its bytes before the '\\n').

    Fast path for the commonest line, ``get``/``gets`` with at least one key, no NUL and no
    leading blank: the read the slow path (:func:`classify_text` of :func:`command_text`) would
    return, without tokenizing. Anything else takes the slow path."""
    if line[:4] == b"get ":
        cmd, start = _GET, 4
    elif line[:5] == b"gets ":
        cmd, start = _GETS, 5
    else:
        return classify_text(command_text(line))
    end = len(line) - 1 if line[-1:] == b"\r" else len(line)
    if line.count(b" ", start, end) < end - start and line.find(b"\0") < 0:
        return cmd   # a byte other than ' ' after the word: a key token, so ntok >= 3
    return classify_text(command_text(line))
