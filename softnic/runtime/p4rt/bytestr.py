"""P4Runtime bytestrings <-> Python ints (P4Runtime spec, section "Bytestrings").

A server must accept a value either in canonical form (no leading zero bytes) or padded to the
full ``ceil(bitwidth / 8)`` bytes, and must answer reads in canonical form so that controllers
comparing what they wrote with what they read see one spelling. A value that does not fit the
field's bitwidth is rejected rather than truncated: silently dropping high bits would install a
different entry than the one the controller asked for.
"""

from __future__ import annotations

from .errors import invalid


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """Decode a bytestring for a field of ``bitwidth`` bits; ``what`` names it in errors."""
    if len(data) == 0:
        raise invalid(f"{what}: empty bytestring")
    max_len = (bitwidth + 7) // 8
    if len(data) > max_len:
        raise invalid(f"{what}: bytestring of {len(data)} bytes is too long for "
                      f"bitwidth {bitwidth} (at most {max_len} bytes)")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise invalid(f"{what}: value 0x{value:x} does not fit in {bitwidth} bits")
    return value


def decode_padded(data: bytes, bitwidth: int, what: str) -> int:
    """Decode as PI's bytestring_p4rt_to_pi does for PacketOut metadata: any length, extra
    leading zero bytes allowed, only the value must fit in ``bitwidth`` bits (the tutorials'
    p4runtime_lib sends ``value.to_bytes(bitwidth, "big")``: 8 bytes for an 8-bit field)."""
    if len(data) == 0:
        raise invalid(f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise invalid(f"{what}: value 0x{value:x} does not fit in {bitwidth} bits")
    return value


def encode(value: int) -> bytes:
    """Canonical bytestring: the fewest bytes holding ``value``, one zero byte for 0."""
    if value < 0:
        raise ValueError("bytestrings encode non-negative values only")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode_width(value: int, bitwidth: int) -> bytes:
    """Full-width big-endian encoding, used to build controller headers on the wire."""
    return value.to_bytes((bitwidth + 7) // 8, "big")
