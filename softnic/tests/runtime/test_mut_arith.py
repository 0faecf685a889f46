"""Signed fields, two's-complement casts and saturating arithmetic, end to end.

Each program is compiled by softnic's front end and run on the engine; the results are checked
against what P4-16 (and BMv2, which computes in infinite precision and wraps on store) defines,
computed here in plain Python. These are the tests that fail when the engine stores an
``int<W>`` field unsigned, or drops the ``|+|``/``|-|`` saturation (``usat_cast``/``sat_cast``).
"""

from __future__ import annotations

import pytest

from softnic.tests.runtime.mut_programs import compile_src, one_out, program, switch_for


def s8(v: int) -> int:
    """The int<8> whose bit pattern is ``v``."""
    v &= 0xFF
    return v - 0x100 if v & 0x80 else v


def sat(v: int, w: int, signed: bool) -> int:
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    return max(lo, min(hi, v))


# -- signed fields ------------------------------------------------------------------------------

SIGNED = program(
    types="header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; int<8> s; "
          "bit<16> f; int<16> g; }",
    headers={"h": "h_t"},
    meta="int<8> s; int<16> w; int<8> m1; bit<8> u;",
    ingress="""
        meta.s = (int<8>)hdr.h.a;
        meta.w = (int<16>)meta.s;            // sign extension of a signed field
        hdr.h.b = (bit<8>)(int<8>)(meta.w >> 8);  // 0xff for a negative s
        if (meta.s < 0) { hdr.h.c = 1; } else { hdr.h.c = 2; }
        hdr.h.d = (bit<8>)(meta.s >> 1);     // arithmetic shift of a signed field
        meta.m1 = -1;
        hdr.h.e = (bit<8>)(meta.m1 + meta.s);
        hdr.h.s = meta.s - 8s1;              // a signed header field, deparsed
        hdr.h.f = (bit<16>)meta.w;
        hdr.h.g = (int<16>)hdr.h.s;          // a signed header field read back
        meta.u = (bit<8>)meta.s;
        if (meta.s == -1) { hdr.h.a = meta.u; } else { hdr.h.a = 8w0x55; }
    """)


# Switches are made per test (the compile is cached): mutation testing maps each test to the
# engine code it runs, and a module-scoped switch would tie code generation to one test only.
@pytest.fixture
def signed_sw(tmp_path):
    return switch_for(compile_src(tmp_path, SIGNED))


@pytest.mark.parametrize("a", [0x00, 0x01, 0x7F, 0x80, 0x81, 0xFE, 0xFF])
def test_int8_field_keeps_its_sign(signed_sw, a: int) -> None:
    s = s8(a)
    out = one_out(signed_sw, bytes([a, 0, 0, 0, 0, 0, 0, 0, 0, 0]))
    b, c, d, e, hs = out[1], out[2], out[3], out[4], out[5]
    f = int.from_bytes(out[6:8], "big")
    g = int.from_bytes(out[8:10], "big")
    assert b == ((s >> 8) & 0xFF)
    assert c == (1 if s < 0 else 2)
    assert d == ((s >> 1) & 0xFF)
    assert e == ((s - 1) & 0xFF)
    assert hs == ((s - 1) & 0xFF)
    assert f == (s & 0xFFFF)
    assert g == (s8(s - 1) & 0xFFFF)  # int<8> header field, sign-extended to int<16>
    assert out[0] == (0xFF if s == -1 else 0x55)


def test_minus_one_sign_extends_into_every_wider_bit(signed_sw) -> None:
    out = one_out(signed_sw, bytes([0xFF] + [0] * 9))
    assert out.hex() == "ffff01fffefeffff" + "fffe"


# -- saturating arithmetic ----------------------------------------------------------------------

SAT = program(
    types="header h_t { bit<8> a; bit<8> b; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; "
          "bit<16> x; bit<16> y; bit<16> r5; bit<16> r6; bit<16> r7; bit<16> r8; }",
    headers={"h": "h_t"},
    ingress="""
        hdr.h.r1 = hdr.h.a |+| hdr.h.b;
        hdr.h.r2 = hdr.h.a |-| hdr.h.b;
        hdr.h.r3 = (bit<8>)((int<8>)hdr.h.a |+| (int<8>)hdr.h.b);
        hdr.h.r4 = (bit<8>)((int<8>)hdr.h.a |-| (int<8>)hdr.h.b);
        hdr.h.r5 = hdr.h.x |+| hdr.h.y;
        hdr.h.r6 = hdr.h.x |-| hdr.h.y;
        hdr.h.r7 = (bit<16>)((int<16>)hdr.h.x |+| (int<16>)hdr.h.y);
        hdr.h.r8 = (bit<16>)((int<16>)hdr.h.x |-| (int<16>)hdr.h.y);
    """)

PAIRS = [(0, 0), (1, 2), (100, 155), (100, 156), (200, 200), (255, 255), (10, 5), (5, 10),
         (0x7F, 0), (0x7F, 1), (0x64, 0x1B), (0x9C, 0xE4), (0x9C, 0xE3), (0x80, 0x01),
         (0x80, 0x80), (0x80, 0x7F), (0x01, 0x80), (0xFF, 0x7F)]


@pytest.fixture
def sat_sw(tmp_path):
    return switch_for(compile_src(tmp_path, SAT))


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_saturating_add_and_sub_8_bit(sat_sw, a: int, b: int) -> None:
    out = one_out(sat_sw, bytes([a, b, 0, 0, 0, 0]) + bytes(12))
    assert out[2] == sat(a + b, 8, False)
    assert out[3] == sat(a - b, 8, False)
    assert out[4] == sat(s8(a) + s8(b), 8, True) & 0xFF
    assert out[5] == sat(s8(a) - s8(b), 8, True) & 0xFF


def s16(v: int) -> int:
    return v - 0x10000 if v & 0x8000 else v


@pytest.mark.parametrize(("x", "y"), [(0xFFFF, 1), (0xFFF0, 0x000F), (0x8000, 0x8000),
                                      (0x7FFF, 1), (0x7FFE, 1), (0x8000, 1), (0x0001, 0x8000),
                                      (3, 5), (0x1234, 0x1234)])
def test_saturating_add_and_sub_16_bit(sat_sw, x: int, y: int) -> None:
    data = bytes(6) + x.to_bytes(2, "big") + y.to_bytes(2, "big") + bytes(8)
    out = one_out(sat_sw, data)
    r = [int.from_bytes(out[10 + 2 * i:12 + 2 * i], "big") for i in range(4)]
    assert r[0] == sat(x + y, 16, False)
    assert r[1] == sat(x - y, 16, False)
    assert r[2] == sat(s16(x) + s16(y), 16, True) & 0xFFFF
    assert r[3] == sat(s16(x) - s16(y), 16, True) & 0xFFFF


def test_saturation_exact_bounds(sat_sw) -> None:
    """The results that sit exactly on a bound: 255, 0, 127 and -128."""
    out = one_out(sat_sw, bytes([0xFF, 0x00, 0, 0, 0, 0]) + bytes(12))
    assert out[2:6] == bytes([0xFF, 0xFF, 0xFF, 0xFF])
    out = one_out(sat_sw, bytes([0x64, 0x1B, 0, 0, 0, 0]) + bytes(12))  # 100 + 27 = 127
    assert out[4] == 0x7F
    out = one_out(sat_sw, bytes([0x9C, 0xE4, 0, 0, 0, 0]) + bytes(12))  # -100 + -28 = -128
    assert out[4] == 0x80
    out = one_out(sat_sw, bytes([0x9C, 0xE3, 0, 0, 0, 0]) + bytes(12))  # -100 + -29 -> -128
    assert out[4] == 0x80
