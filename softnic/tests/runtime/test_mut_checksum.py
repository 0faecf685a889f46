"""The Internet checksum (``csum16``) as the engine computes it, against RFC 1071 on bytes.

The engine sums field values without building bytes (``gen_deparse.csum16_body``); these
tests feed it inputs whose ones'-complement sum is 0xffff (checksum 0x0000) as well as 0
(checksum 0xffff), odd bit widths, signed fields, constants, metadata, optional headers and
payloads, for both ``verify_checksum`` and ``update_checksum[_with_payload]``.
"""

from __future__ import annotations

import pytest

from softnic.tests.runtime.mut_programs import compile_src, one_out, program, switch_for


def csum(data: bytes) -> int:
    """RFC 1071: ones' complement of the ones'-complement sum of the 16-bit words."""
    if len(data) % 2:
        data += b"\0"
    s = 0
    for i in range(0, len(data), 2):
        s += int.from_bytes(data[i:i + 2], "big")
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def test_reference_checksum_of_a_sum_of_0xffff_is_zero() -> None:
    assert csum(bytes.fromhex("ffff0000")) == 0
    assert csum(bytes.fromhex("0000")) == 0xFFFF


# h: a, b checked by ck (verify) and summed into ck2 (update); the rest feeds ck3 and ck4.
TYPES = """
header h_t { bit<16> a; bit<16> b; bit<16> ck; bit<16> ck2; bit<8> err; bit<8> more;
             bit<4> n1; bit<4> n2; int<8> s; bit<8> odd; bit<16> ck3; bit<16> ck4; }
header o_t { bit<8> x; bit<16> y; }
"""

CSUM = program(
    types=TYPES, headers={"h": "h_t", "o": "o_t"},
    meta="bit<16> m16;",
    parse="pkt.extract(hdr.h); transition select(hdr.h.more) { 1: parse_o; default: accept; }",
    states="state parse_o { pkt.extract(hdr.o); transition accept; }",
    verify="verify_checksum(true, { hdr.h.a, hdr.h.b }, hdr.h.ck, HashAlgorithm.csum16);",
    ingress="""
        hdr.h.err = (bit<8>)sm.checksum_error;
        meta.m16 = hdr.h.a ^ 16w0x0F0F;
    """,
    compute="""
        update_checksum(hdr.h.isValid(), { hdr.h.a, hdr.h.b }, hdr.h.ck2, HashAlgorithm.csum16);
        update_checksum(true, { hdr.h.n1, hdr.h.n2, hdr.h.s, hdr.h.odd, 8w0x11, meta.m16 },
                        hdr.h.ck3, HashAlgorithm.csum16);
        update_checksum_with_payload(true, { hdr.h.a, hdr.h.odd }, hdr.h.ck4,
                                     HashAlgorithm.csum16);
    """)


@pytest.fixture(scope="module")
def sw(tmp_path_factory: pytest.TempPathFactory):
    return switch_for(compile_src(tmp_path_factory.mktemp("csum"), CSUM))


def packet(a: int, b: int, ck: int, *, more: int = 0, n1: int = 0, n2: int = 0, s: int = 0,
           odd: int = 0, o: bytes = b"", payload: bytes = b"") -> bytes:
    h = (a.to_bytes(2, "big") + b.to_bytes(2, "big") + ck.to_bytes(2, "big") + bytes(3)
         + bytes([more, (n1 << 4) | n2, s & 0xFF, odd]) + bytes(4))
    return h + o + payload


def check(out: bytes, sent: bytes, *, o: bytes = b"", payload: bytes = b"") -> None:
    a, b, ck = out[0:2], out[2:4], out[4:6]
    n, s, odd = out[10], out[11], out[12]
    assert out[:6] == sent[:6]
    assert out[6:8] == csum(a + b).to_bytes(2, "big")
    assert out[8] == (0 if int.from_bytes(ck, "big") == csum(a + b) else 1)
    m16 = (int.from_bytes(a, "big") ^ 0x0F0F).to_bytes(2, "big")
    assert out[13:15] == csum(bytes([n, s, odd, 0x11]) + m16).to_bytes(2, "big")
    assert out[15:17] == csum(a + bytes([odd]) + o + payload).to_bytes(2, "big")
    assert out[17:] == o + payload


@pytest.mark.parametrize(("a", "b"), [(0xFFFF, 0x0000), (0x0000, 0xFFFF), (0x1234, 0xEDCB),
                                      (0x8000, 0x7FFF), (0xFFFF, 0xFFFF), (0x0000, 0x0000),
                                      (0x0001, 0x0000), (0xABCD, 0x1234)])
def test_update_checksum_sum_of_ffff_and_zero(sw, a: int, b: int) -> None:
    data = packet(a, b, csum(a.to_bytes(2, "big") + b.to_bytes(2, "big")))
    out = one_out(sw, data)
    check(out, data)
    if (a + b) % 0xFFFF == 0 and a + b:
        assert out[6:8] == b"\x00\x00"  # the sum is 0xffff: the checksum is 0, not 0xffff
    if a + b == 0:
        assert out[6:8] == b"\xff\xff"


def test_verify_accepts_zero_checksum_of_data_summing_to_ffff(sw) -> None:
    out = one_out(sw, packet(0x8000, 0x7FFF, 0x0000))
    assert out[8] == 0  # no checksum_error
    out = one_out(sw, packet(0x8000, 0x7FFF, 0xFFFF))
    assert out[8] == 1  # 0xffff is the other representation of zero: BMv2 rejects it
    out = one_out(sw, packet(0, 0, 0xFFFF))
    assert out[8] == 0
    out = one_out(sw, packet(0, 0, 0))
    assert out[8] == 1


@pytest.mark.parametrize("n1,n2,s,odd", [(0, 0, 0, 0), (0xF, 0x1, -1, 0x80), (0x3, 0xC, -128, 0),
                                         (0xA, 0x5, 127, 0xFF), (0xE, 0xE, -2, 0xEE),
                                         (0x0, 0x0, -17, 0x11)])
def test_checksum_over_nibbles_signed_field_constant_and_metadata(sw, n1, n2, s, odd) -> None:
    data = packet(0x1111, 0x2222, 0, n1=n1, n2=n2, s=s, odd=odd)
    check(one_out(sw, data), data)


@pytest.mark.parametrize("payload", [b"", b"\x01", b"\xff\xfe", b"hello", bytes(range(37)),
                                     b"\xff" * 64])
@pytest.mark.parametrize("with_o", [False, True])
def test_checksum_with_payload_and_an_optional_header_after_the_fields(sw, payload,
                                                                       with_o) -> None:
    o = bytes([0xEE, 0x12, 0x34]) if with_o else b""
    data = packet(0xF00F, 0x0FF0, 0, more=1 if with_o else 0, odd=0x5A, o=o,
                  payload=payload)
    check(one_out(sw, data), data, o=o, payload=payload)


def test_payload_checksum_sums_to_ffff(sw) -> None:
    """a (0x1234), odd (0x00) and a payload 00 ed cb: the words sum to 0xffff."""
    payload = bytes.fromhex("00edcb")
    assert csum(bytes.fromhex("123400") + payload) == 0
    data = packet(0x1234, 0, 0, odd=0, payload=payload)
    out = one_out(sw, data)
    check(out, data, payload=payload)
    assert out[15:17] == b"\x00\x00"


# -- a checksum whose condition is false, and one with a dynamic-width input -------------------

COND = program(
    types="header h_t { bit<8> on; bit<8> pad; bit<16> a; bit<16> ck; }",
    headers={"h": "h_t"},
    compute="update_checksum(hdr.h.on == 1, { hdr.h.a }, hdr.h.ck, HashAlgorithm.csum16);")


def test_update_checksum_condition(tmp_path) -> None:
    sw = switch_for(compile_src(tmp_path, COND))
    assert one_out(sw, bytes.fromhex("01001234abcd")) == bytes.fromhex("01001234edcb")
    assert one_out(sw, bytes.fromhex("00001234abcd")) == bytes.fromhex("00001234abcd")
    assert one_out(sw, bytes.fromhex("0100ffffabcd")) == bytes.fromhex("0100ffff0000")
    assert one_out(sw, bytes.fromhex("01000000abcd")) == bytes.fromhex("01000000ffff")
