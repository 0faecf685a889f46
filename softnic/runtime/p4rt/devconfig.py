"""Decode ``ForwardingPipelineConfig.p4_device_config`` into the BMv2 JSON dict.

BMv2's server accepts two spellings (see shared/design/FIDELITY.md): the raw JSON bytes, which
p4runtime-shell sends, and a serialized ``P4DeviceConfig`` message from PI's
``p4/tmp/p4config.proto`` (``bool reassign = 1; Extras extras = 2; bytes device_data = 3;``),
which p4lang/tutorials' ``p4runtime_lib`` sends. That proto is not in the PyPI ``p4runtime``
package, so the message is read straight off the protobuf wire format here: only field 3 matters
and the format is simple and stable. The two forms cannot be confused: JSON starts with ``{``
(after optional whitespace), and a byte ``{`` (0x7b) would open field 15 with the deprecated
group wire type, which a P4DeviceConfig never contains.
"""

from __future__ import annotations

import json

from .errors import invalid

_DEVICE_DATA_FIELD = 3


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise invalid("P4DeviceConfig: truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise invalid("P4DeviceConfig: varint too long")


def device_data_of(message: bytes) -> bytes:
    """``device_data`` of a serialized P4DeviceConfig (the last occurrence wins, as in protobuf)."""
    pos = 0
    found: bytes | None = None
    while pos < len(message):
        tag, pos = _varint(message, pos)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise invalid("P4DeviceConfig: field number 0")
        if wire_type == 0:
            _, pos = _varint(message, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        elif wire_type == 2:
            length, pos = _varint(message, pos)
            if pos + length > len(message):
                raise invalid("P4DeviceConfig: truncated length-delimited field")
            if number == _DEVICE_DATA_FIELD:
                found = message[pos:pos + length]
            pos += length
        else:
            raise invalid(f"P4DeviceConfig: unsupported wire type {wire_type}")
        if pos > len(message):
            raise invalid("P4DeviceConfig: truncated field")
    if found is None:
        raise invalid("P4DeviceConfig has no device_data")
    return found


def is_raw_json(data: bytes) -> bool:
    return data.lstrip(b" \t\r\n").startswith(b"{")


def parse_device_config(data: bytes) -> dict:
    """The BMv2 JSON dict carried by ``p4_device_config`` in either accepted form."""
    if not data:
        raise invalid("p4_device_config is empty")
    raw = data if is_raw_json(data) else device_data_of(data)
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise invalid(f"p4_device_config is not valid BMv2 JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise invalid("p4_device_config: BMv2 JSON must be an object")
    return parsed
