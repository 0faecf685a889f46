"""Controller packet metadata (``@controller_header``) between P4Runtime and the engine.

In P4Info a program's ``packet_in`` / ``packet_out`` headers appear as controller packet metadata
with per-field ids and bitwidths; in the BMv2 JSON they are ordinary header types. The engine
works with header types, so after a pipeline load we tell it which JSON header types these are,
recognised by their field names (P4Info lists exactly the header's fields, in order).

When the engine hands a packet-in over without parsed metadata (it does not know the controller
header), the header is parsed here from the front of the packet, as PI does for BMv2: the fields
in P4Info order, packed big-endian, padded to whole bytes.
"""

from __future__ import annotations

import logging

from softnic.runtime.api import PacketIn, SwitchAPI

from .p4info import P4InfoIndex, PacketMetadataInfo

log = logging.getLogger("softnic.p4rt")


def _header_type_for(bmv2_json: dict, info: PacketMetadataInfo | None) -> str | None:
    if info is None:
        return None
    wanted = [f.name for f in info.fields]
    for ht in bmv2_json.get("header_types", []):
        fields = [f[0] for f in ht.get("fields", []) if isinstance(f, list) and f]
        if fields == wanted:
            return ht.get("name")
    log.warning("no header type in the JSON has the fields of controller header %s: %s",
                info.name, wanted)
    return None


def configure_switch(switch: SwitchAPI, index: P4InfoIndex, bmv2_json: dict,
                     cpu_port: int | None) -> None:
    """Tell the engine which header types are the controller headers (if it wants to know)."""
    setter = getattr(switch, "set_controller_headers", None)
    if setter is None:
        return
    in_type = _header_type_for(bmv2_json, index.packet_metadata.get("packet_in"))
    out_type = _header_type_for(bmv2_json, index.packet_metadata.get("packet_out"))
    if in_type is not None or out_type is not None:  # else leave the engine's own choice
        setter(in_type, out_type)


def packet_out(switch: SwitchAPI, info: PacketMetadataInfo | None, payload: bytes,
               values: dict[str, int]) -> list[tuple[int, bytes]]:
    return switch.packet_out(payload, values if info is not None else {})


def packet_in(info: PacketMetadataInfo | None, p: PacketIn) -> tuple[bytes, dict[str, int]]:
    """The payload and metadata values of a packet-in, parsing the header if the engine did not."""
    if p.metadata or info is None or not info.fields:
        return p.payload, dict(p.metadata)
    total = sum(f.bitwidth for f in info.fields)
    nbytes = (total + 7) // 8
    if len(p.payload) < nbytes:
        return p.payload, {}
    bits = int.from_bytes(p.payload[:nbytes], "big") >> (nbytes * 8 - total)
    values: dict[str, int] = {}
    shift = total
    for f in info.fields:
        shift -= f.bitwidth
        values[f.name] = (bits >> shift) & ((1 << f.bitwidth) - 1)
    return p.payload[nbytes:], values
