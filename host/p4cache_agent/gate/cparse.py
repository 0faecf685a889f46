"""memcached 1.6's text-protocol helpers, byte for byte: ``tokenize_command`` (proto_text.c) and
``safe_strtol`` / ``safe_strtoul`` / ``safe_strtoull`` (util.c, glibc ``strtol`` on a 64-bit
``long``).

The gate must read a command line exactly as memcached will, above all to know whether a data
block follows it and how long it is. Where the C code's result depends on something this module
does not model, the answer is ``GRAY`` and the caller gives up on framing the connection.
"""

from __future__ import annotations

from enum import Enum

MAX_TOKENS = 24          # proto_text.c MAX_TOKENS (the terminal token included)
KEY_MAX_LENGTH = 250
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
_LONG_MAX = 2**63 - 1
_ULONG_MAX = 2**64 - 1
_C_SPACE = b" \t\n\v\f\r"  # isspace() in the C locale


class Num(Enum):
    FAIL = 0   # memcached rejects the number
    GRAY = 1   # memcached's answer depends on what this module does not model


def command_text(line: bytes) -> bytes:
    """What process_command_ascii sees of a line (the bytes before its '\\n'): a '\\r' before
    the '\\n' is cut if the line has more than one byte, and strlen() stops at a NUL."""
    if len(line) > 1 and line[-1:] == b"\r":
        line = line[:-1]
    nul = line.find(b"\0")
    return line if nul < 0 else line[:nul]


def tokenize(cmd: bytes) -> tuple[list[bytes], int]:
    """The tokens of a command (split on ' ' only, empty tokens skipped) and memcached's
    ``ntokens``: at most MAX_TOKENS - 1 tokens are counted, plus the terminal token. All the
    tokens are returned (a get with more keys goes on with the rest)."""
    parts = [p for p in cmd.split(b" ") if p]
    return parts, min(len(parts), MAX_TOKENS - 1) + 1


def _strtol(tok: bytes, unsigned: bool) -> tuple[int, bool, int] | None:
    """glibc strtol/strtoul(tok, &end, 10) with a 64-bit long: (value, ends_cleanly, end), or None
    when nothing was converted or the value is out of range (ERANGE)."""
    i, n = 0, len(tok)
    while i < n and tok[i] in _C_SPACE:
        i += 1
    neg = False
    if i < n and tok[i] in b"+-":
        neg = tok[i] == 0x2D
        i += 1
    start = i
    while i < n and 0x30 <= tok[i] <= 0x39:
        i += 1
    if i == start:
        return None
    mag = int(tok[start:i])
    if unsigned:
        if mag > _ULONG_MAX:
            return None
        value = (-mag) % (2**64) if neg else mag
    else:
        value = -mag if neg else mag
        if value > _LONG_MAX or value < -_LONG_MAX - 1:
            return None
    # The token is NUL-terminated where it ends; memcached accepts a space or the end after it.
    clean = i == n or tok[i] in _C_SPACE
    return value, clean, i


def safe_strtol(tok: bytes) -> int | Num:
    """util.c safe_strtol into an int32_t."""
    r = _strtol(tok, unsigned=False)
    if r is None or not r[1]:
        return Num.FAIL
    value = r[0]
    if value > INT_MAX:
        return Num.FAIL
    if value < INT_MIN:
        return Num.GRAY  # truncated into the int32_t; not modelled
    return value


def safe_strtoul(tok: bytes, bits: int = 32) -> int | Num:
    """util.c safe_strtoul (``bits`` 32: into a uint32_t, truncated) / safe_strtoull (64)."""
    r = _strtol(tok, unsigned=True)
    if r is None or not r[1]:
        return Num.FAIL
    value = r[0]
    if value >= 2**63 and b"-" in tok[:r[2]]:
        return Num.FAIL
    return value & ((1 << bits) - 1)
