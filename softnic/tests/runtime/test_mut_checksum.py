"""The Internet checksum (``csum16``) as the engine computes it, against RFC 1071 on bytes.

The engine sums field values without building bytes (``gen_deparse.csum16_body``); these
tests feed it inputs whose ones'-complement sum is 0xffff (checksum 0x0000) as well as 0
(checksum 0xffff), odd bit widths, signed fields, constants, metadata, optional headers and
payloads, for both ``verify_checksum`` and ``update_checksum[_with_payload]``.
"""

from __future__ import annotations

import pytest

from softnic.runtime.api import PipelineLoadError
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


# a switch per test (the compile is cached), so that mutation testing ties the checksum code
# generation to every test rather than to the first one that used a module-scoped switch
@pytest.fixture
def sw(tmp_path):
    return switch_for(compile_src(tmp_path, CSUM))


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


# -- constants and metadata before any header field: shifts known at load time ------------------

STATIC = program(
    types="header h_t { bit<16> a; bit<16> b; bit<16> ck; bit<16> ck2; }",
    headers={"h": "h_t"},
    meta="bit<16> m16; bit<4> n4; bit<12> m12;",
    ingress="meta.m16 = hdr.h.b ^ 16w0x1234; meta.n4 = hdr.h.a[3:0]; meta.m12 = hdr.h.b[11:0];",
    compute="""
        update_checksum(true, { 8w0xAB, meta.m16, 8w0x01, hdr.h.a, hdr.h.b }, hdr.h.ck,
                        HashAlgorithm.csum16);
        update_checksum(true, { meta.n4, 4w0x5, 8w0x0F, meta.m12, 4w0xC, hdr.h.a },
                        hdr.h.ck2, HashAlgorithm.csum16);
    """)


@pytest.mark.parametrize(("a", "b"), [(0, 0), (0xFFFF, 0xFFFF), (0x1234, 0x5678),
                                      (0x8001, 0x0FF0), (0x54FE, 0xEDCB)])
def test_checksum_starting_with_constants_and_metadata(tmp_path, a: int, b: int) -> None:
    sw = switch_for(compile_src(tmp_path, STATIC))
    out = one_out(sw, a.to_bytes(2, "big") + b.to_bytes(2, "big") + bytes(4))
    ab = out[0:4]
    m16 = (b ^ 0x1234).to_bytes(2, "big")
    assert out[4:6] == csum(b"\xab" + m16 + b"\x01" + ab).to_bytes(2, "big")
    # n4 (4) 5 (4) | 0x0F (8) | m12 (12) C (4) | a (16)
    v = (((a & 0xF) << 4 | 5) << 8 | 0x0F) << 16 | ((b & 0xFFF) << 4 | 0xC)
    assert out[6:8] == csum(v.to_bytes(4, "big") + ab[:2]).to_bytes(2, "big")


# -- a varbit field in the checksum ------------------------------------------------------------

VARBIT = program(
    types="header l_t { bit<8> len; bit<16> ck; bit<16> ck2; bit<32> crc; }\n"
          "header o_t { bit<8> kind; varbit<64> opts; }\nheader t_t { bit<8> z; }",
    headers={"l": "l_t", "o": "o_t", "t": "t_t"},
    parse="pkt.extract(hdr.l); pkt.extract(hdr.o, (bit<32>)hdr.l.len << 3); "
          "pkt.extract(hdr.t); transition accept;",
    compute="""
        update_checksum(true, { hdr.l.len, hdr.o.kind, hdr.o.opts, hdr.t.z }, hdr.l.ck,
                        HashAlgorithm.csum16);
        update_checksum(true, { hdr.o.opts, hdr.l.len, 8w0x77, hdr.o.kind }, hdr.l.ck2,
                        HashAlgorithm.csum16);
        update_checksum(true, { hdr.l.len, hdr.o.kind, hdr.o.opts, hdr.t.z }, hdr.l.crc,
                        HashAlgorithm.crc32);
    """)


@pytest.mark.parametrize("opts", [b"", b"\x01", b"\xff\xfe", b"\x12\x34\x56", b"\xff" * 8,
                                  bytes(range(1, 8))])
def test_checksum_over_a_varbit_field(tmp_path, opts: bytes) -> None:
    sw = switch_for(compile_src(tmp_path, VARBIT))
    z = b"\x5a"
    import zlib

    k = b"\xc3"
    out = one_out(sw, bytes([len(opts)]) + bytes(8) + k + opts + z + b"tail")
    n = bytes([len(opts)])
    assert out[1:3] == csum(n + k + opts + z).to_bytes(2, "big")
    assert out[3:5] == csum(opts + n + b"\x77" + k).to_bytes(2, "big")
    assert out[5:9] == zlib.crc32(n + k + opts + z).to_bytes(4, "big")
    assert out[9:] == k + opts + z + b"tail"


# -- a whole header as calculation input, and checksum entries without verify/update flags -----

def test_whole_header_input_sums_like_its_fields(tmp_path) -> None:
    """BMv2 JSON may give a header as one calculation input; it sums like its fields."""
    j = compile_src(tmp_path, CSUM)
    [calc] = [c for c in j["calculations"]
              if [i.get("value") for i in c["input"]] == [["h", "a"], ["h", "b"]]]
    calc["input"] = [{"type": "field", "value": ["h", "a"]},
                     {"type": "header", "value": "o"},
                     {"type": "field", "value": ["h", "b"]}]
    sw = switch_for(j)
    o = bytes([0xEE, 0x12, 0x34])
    for data, with_o in ((packet(0x1111, 0x2222, 0, more=1, o=o), True),
                         (packet(0x1111, 0x2222, 0), False)):
        out = one_out(sw, data)
        exp = csum(out[0:2] + (o if with_o else b"") + out[2:4])
        assert out[6:8] == exp.to_bytes(2, "big")
        # the verify entry shares the calculation
        assert out[8] == 1


FLAGS = program(
    types="header h_t { bit<16> a; bit<16> ck; bit<8> err; bit<8> c8; }",
    headers={"h": "h_t"},
    verify="verify_checksum(true, { hdr.h.a }, hdr.h.ck, HashAlgorithm.csum16);",
    ingress="hdr.h.err = (bit<8>)sm.checksum_error;",
    compute="update_checksum(true, { hdr.h.a }, hdr.h.c8, HashAlgorithm.csum16);")


def test_checksum_entries_without_flags_verify_and_update(tmp_path) -> None:
    j = compile_src(tmp_path, FLAGS)
    sw = switch_for(j)
    # as compiled: verify only into ck (never rewritten), update only into the 8-bit c8
    assert one_out(sw, bytes.fromhex("1234" "0000" "00" "00")) == bytes.fromhex(
        "1234" "0000" "01" "cb")
    assert one_out(sw, bytes.fromhex("1234" "edcb" "00" "00")) == bytes.fromhex(
        "1234" "edcb" "00" "cb")
    for ck in j["checksums"]:
        del ck["verify"], ck["update"]
    sw = switch_for(j)
    # without flags each entry both verifies and updates; c8 is checked on its 8 bits
    assert one_out(sw, bytes.fromhex("1234" "0000" "00" "cb")) == bytes.fromhex(
        "1234" "edcb" "01" "cb")
    assert one_out(sw, bytes.fromhex("1234" "edcb" "00" "cb")) == bytes.fromhex(
        "1234" "edcb" "00" "cb")
    assert one_out(sw, bytes.fromhex("1234" "edcb" "00" "ed")) == bytes.fromhex(
        "1234" "edcb" "01" "cb")


def test_fields_of_an_invalid_header_and_metadata_between_them(tmp_path) -> None:
    """Fields of an invalid header are left out; metadata fields never are."""
    j = compile_src(tmp_path, CSUM)
    [calc] = [c for c in j["calculations"]
              if [i.get("value") for i in c["input"]] == [["h", "a"], ["h", "b"]]]
    calc["input"] = [{"type": "field", "value": ["h", "a"]},
                     {"type": "field", "value": ["o", "x"]},
                     {"type": "field", "value": ["o", "y"]},
                     {"type": "field", "value": ["scalars", "userMetadata.m16"]},
                     {"type": "field", "value": ["h", "b"]}]
    sw = switch_for(j)
    o = bytes([0xEE, 0x12, 0x34])
    for data, oo in ((packet(0x1111, 0x2222, 0, more=1, o=o), o),
                     (packet(0x1111, 0x2222, 0), b"")):
        out = one_out(sw, data)
        m16 = (0x1111 ^ 0x0F0F).to_bytes(2, "big")
        assert out[6:8] == csum(out[0:2] + oo + m16 + out[2:4]).to_bytes(2, "big")


def test_whole_header_input_then_payload_includes_the_headers_after_it(tmp_path) -> None:
    j = compile_src(tmp_path, CSUM)
    [ck4] = [c for c in j["checksums"] if c["target"] == ["h", "ck4"]]
    [calc] = [c for c in j["calculations"] if c["name"] == ck4["calculation"]]
    calc["input"] = [{"type": "header", "value": "h"}, {"type": "payload", "value": None}]
    sw = switch_for(j)
    o = bytes([0xEE, 0x12, 0x34])
    for oo, more in ((o, 1), (b"", 0)):
        data = packet(0x1234, 0x4321, 0, more=more, o=oo, payload=b"xyz")
        out = one_out(sw, data)
        h_then = out[:15] + bytes(2)  # h as it was when ck4 was computed (ck4 still 0)
        assert out[15:17] == csum(h_then + oo + b"xyz").to_bytes(2, "big")


@pytest.mark.parametrize(("calc_input", "msg"), [
    ({"type": "hexstr", "value": "0x1", "bitwidth": 0}, r"hexstr needs a bitwidth"),
    ({"type": "hexstr", "value": "0x1", "bitwidth": -8}, r"hexstr needs a bitwidth"),
    ({"type": "hexstr", "value": "0x1", "bitwidth": "8"}, r"hexstr needs a bitwidth"),
    ({"type": "hexstr", "value": "0x1"}, r"hexstr needs a bitwidth"),
    ({"type": "lookahead", "value": [0, 8]}, r"(?i)unsupported input"),
    (5, r"unsupported input 5"),
])
def test_malformed_calculation_inputs(tmp_path, calc_input, msg) -> None:
    j = compile_src(tmp_path, COND)
    j["calculations"][0]["input"].append(calc_input)
    with pytest.raises(PipelineLoadError, match=msg):
        switch_for(j)


def test_one_bit_constant_in_a_calculation(tmp_path) -> None:
    j = compile_src(tmp_path, COND)
    j["calculations"][0]["input"] = [
        {"type": "hexstr", "value": "0x3", "bitwidth": 1},  # only the low bit counts
        {"type": "hexstr", "value": "0x7f", "bitwidth": 7},
        {"type": "field", "value": ["h", "a"]}]
    sw = switch_for(j)
    out = one_out(sw, bytes.fromhex("01001234abcd"))
    assert out[4:6] == csum(bytes.fromhex("ff1234")).to_bytes(2, "big")


@pytest.mark.parametrize("name", [["calc"], {"n": 1}, 7])
def test_calculation_name_must_be_a_string(tmp_path, name) -> None:
    j = compile_src(tmp_path, COND)
    j["checksums"][0]["calculation"] = name
    with pytest.raises(PipelineLoadError, match=r"calculation"):
        switch_for(j)


# -- other algorithms build the input bytes (crc32 is zlib's) ----------------------------------

CRC = program(
    types="header h_t { bit<16> a; bit<8> more; bit<4> n; bit<4> m; int<8> s; bit<32> crc; "
          "bit<32> crc2; }\nheader o_t { bit<8> x; bit<16> y; }",
    headers={"h": "h_t", "o": "o_t"},
    meta="bit<16> m16;",
    parse="pkt.extract(hdr.h); transition select(hdr.h.more) { 1: parse_o; default: accept; }",
    states="state parse_o { pkt.extract(hdr.o); transition accept; }",
    ingress="meta.m16 = hdr.h.a ^ 16w0xF0F0;",
    compute="""
        update_checksum_with_payload(true, { meta.m16, hdr.h.a, 8w0x11, hdr.h.n, hdr.h.m,
                                             hdr.h.s }, hdr.h.crc, HashAlgorithm.crc32);
        update_checksum(true, { hdr.o.x, hdr.o.y, hdr.h.a, 4w0xA, hdr.h.n }, hdr.h.crc2,
                        HashAlgorithm.crc32);
    """)


@pytest.mark.parametrize("with_o", [False, True])
@pytest.mark.parametrize("s", [0x00, 0x7F, 0x80, 0xFF])
def test_crc32_checksums_over_fields_constants_signed_metadata_and_payload(tmp_path, with_o,
                                                                           s) -> None:
    import zlib

    sw = switch_for(compile_src(tmp_path, CRC))
    o = bytes([0xEE, 0x12, 0x34]) if with_o else b""
    data = (bytes.fromhex("1234") + bytes([1 if with_o else 0, 0x5C, s]) + bytes(8) + o
            + b"payload")
    out = one_out(sw, data)
    a = bytes.fromhex("1234")
    m16 = (0x1234 ^ 0xF0F0).to_bytes(2, "big")
    crc = zlib.crc32(m16 + a + b"\x11" + bytes([0x5C, s]) + o + b"payload")
    assert out[5:9] == crc.to_bytes(4, "big")
    crc2 = zlib.crc32(o + a + bytes([0xA5]))
    assert out[9:13] == crc2.to_bytes(4, "big")
    assert out[13:] == o + b"payload"
