"""Frames for the bad-input tests: Ethernet / IPv4 / UDP built field by field, any field settable.

The builders never fix anything the caller set: a test that asks for a wrong checksum, a bogus
length or an IHL of 9 without options gets exactly that. Defaults give a well-formed frame.
"""

from __future__ import annotations

import struct

ETH_HDR = 14
IPV4_MIN = 20
UDP_HDR = 8
ETHERTYPE_IPV4 = 0x0800
PROTO_UDP = 17

CLIENT_MAC = bytes.fromhex("020000000001")
SERVER_MAC = bytes.fromhex("020000000002")
AGENT_MAC = bytes.fromhex("020000000003")
SERVER2_MAC = bytes.fromhex("020000000004")
UNKNOWN_MAC = bytes.fromhex("0200000000ee")


def ip4(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def csum16(data: bytes) -> int:
    """RFC 1071 ones'-complement sum of 16-bit words, complemented (odd length: zero pad)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_header_checksum(header: bytes) -> int:
    """The checksum a sender puts in ``header`` (its own checksum field counted as 0)."""
    return csum16(header[:10] + b"\0\0" + header[12:])


def ipv4(payload: bytes, *, src: int, dst: int, version: int = 4, ihl: int | None = None,
         tos: int = 0, total_len: int | None = None, ident: int = 0x1234, flags: int = 0,
         frag: int = 0, ttl: int = 64, proto: int = PROTO_UDP, checksum: int | None = None,
         options: bytes = b"") -> bytes:
    """An IPv4 header (plus ``options``) followed by ``payload``. ``ihl`` defaults to what the
    options need, ``total_len`` to the real length, ``checksum`` to the correct one."""
    if ihl is None:
        ihl = 5 + (len(options) + 3) // 4
        options = options.ljust((ihl - 5) * 4, b"\0")
    if total_len is None:
        total_len = IPV4_MIN + len(options) + len(payload)
    hdr = struct.pack("!BBHHHBBH4s4s", (version & 15) << 4 | (ihl & 15), tos, total_len & 0xFFFF,
                      ident, (flags & 7) << 13 | (frag & 0x1FFF), ttl, proto, 0,
                      src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    hdr += options
    if checksum is None:
        checksum = ipv4_header_checksum(hdr[:20])
    return hdr[:10] + struct.pack("!H", checksum) + hdr[12:] + payload


def udp(payload: bytes, *, sport: int, dport: int, length: int | None = None,
        checksum: int = 0) -> bytes:
    if length is None:
        length = UDP_HDR + len(payload)
    return struct.pack("!HHHH", sport, dport, length & 0xFFFF, checksum) + payload


def udp_checksum(src: int, dst: int, segment: bytes) -> int:
    """The UDP checksum of ``segment`` (header with checksum 0, then data) over the IPv4
    pseudo-header; 0 is sent as 0xffff (RFC 768)."""
    pseudo = struct.pack("!4s4sBBH", src.to_bytes(4, "big"), dst.to_bytes(4, "big"), 0,
                         PROTO_UDP, len(segment))
    c = csum16(pseudo + segment[:6] + b"\0\0" + segment[8:])
    return c or 0xFFFF


def ether(payload: bytes, *, dst: bytes = SERVER_MAC, src: bytes = CLIENT_MAC,
          ethertype: int = ETHERTYPE_IPV4) -> bytes:
    return dst + src + struct.pack("!H", ethertype) + payload


def udp_frame(payload: bytes, *, src: int, dst: int, sport: int, dport: int,
              eth_dst: bytes = SERVER_MAC, eth_src: bytes = CLIENT_MAC, **ip_fields) -> bytes:
    """A well-formed Ethernet/IPv4/UDP frame (UDP checksum 0) unless ``ip_fields`` say otherwise."""
    return ether(ipv4(udp(payload, sport=sport, dport=dport), src=src, dst=dst, **ip_fields),
                 dst=eth_dst, src=eth_src)


def memcache_hdr(request_id: int, seq: int = 0, total: int = 1, reserved: int = 0) -> bytes:
    return struct.pack("!HHHH", request_id, seq, total, reserved)


def ctrl_hdr(op: int, slot: int = 0, version: int = 0, length: int = 0, status: int = 0) -> bytes:
    return struct.pack("!BBHIH", op, status, slot, version, length)
