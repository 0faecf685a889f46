"""The values corpus/expressions.p4 computes, checked on the engine against P4_16 semantics.

Every expected value below is worked out by hand from the P4_16 spec (precedence, wrap-around,
saturation, sign extension, casts, concatenation, slices), not taken from softnic's output;
the program copies each intermediate value into its ``report`` header.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.compiler.compile import compile_file
from softnic.runtime.switch import Switch

PROGRAM = Path(__file__).parents[1] / "corpus" / "expressions.p4"

FIELDS = [
    ("mul_add", "I"), ("prec_chain", "I"), ("div_mod", "I"), ("shr", "I"), ("shl_macro", "I"),
    ("not_and", "I"), ("sat_add", "B"), ("sat_sub", "B"), ("concat", "I"),
    ("slice_assign", "I"), ("neg_cast", "H"), ("signed_sub", "H"), ("widen", "I"),
    ("newtype", "I"), ("from_newtype", "I"), ("flag_ternary", "B"), ("max_named", "B"),
    ("mix_fn", "I"), ("enum_branch", "B"), ("named_a", "B"), ("named_b", "B"), ("list_a", "B"),
    ("list_b", "B"), ("hsize", "H"), ("local_sum", "B"),
]
REPORT = struct.Struct(">" + "".join(f for _, f in FIELDS))


def expected(src: int, dst: int, ttl: int) -> dict[str, int]:
    x = 1 + 2 * 3                                     # 7
    mul_add = x
    # + before <<, << before &, & before ^, ^ before |: (((7+1) << 2) & 0xFF) ^ 0x0F | 0x100
    y = ((((x + 1) << 2) & 0xFF) ^ 0x0F) | 0x100     # 32 -> 32 -> 0x2F -> 0x12F
    prec_chain = y
    x = (x - 1) * 2 + (100 // 7) % 5                  # 12 + 14 % 5 = 16
    div_mod = x
    y = y >> 1                                        # 0x97
    shr = y
    y = (y << 4) & 0xFFFFFFFF                         # 0x970
    shl_macro = y
    x = ~x & 0xFFFFFFFF                               # 0xFFFFFFEF
    not_and = x
    z = min(ttl + 200, 255)                           # |+| saturates at 255
    sat_add = z
    z = max(z - 10, 0)                                # |-| saturates at 0
    sat_sub = z
    x = ((src >> 16) << 16) | (dst & 0xFFFF)
    concat = x
    y = (y & ~0xFF) | z
    slice_assign = y
    d = -5                                            # int<16>
    neg_cast = d & 0xFFFF                             # 0xFFFB
    d = d - 3
    signed_sub = d & 0xFFFF                           # 0xFFF8
    x = d & 0xFFFF                                    # (bit<16>) keeps the bits, then zero-extends
    widen = x
    flow = x
    y = flow
    flag = (x != y and not (z >= 3)) or (x < 5 and y <= 9)   # False
    z = 1 if flag else 2
    flag_ternary = z
    z = max(z, 7)
    max_named = z
    x = ((((x << 3) & 0xFFFFFFFF) ^ (x >> 5)) + 3) & 0xFFFFFFFF   # 0x7FFC0 ^ 0x7FF + 3
    mix_fn = x
    if not flag:                                      # verdict == Verdict.FAIL
        z = 0xF & 0xFF                                # (bit<8>)(bit<4>)Nibble.HIGH
    enum_branch = z
    local = min(3 + 4, 100)
    return {
        "mul_add": mul_add, "prec_chain": prec_chain, "div_mod": div_mod, "shr": shr,
        "shl_macro": shl_macro, "not_and": not_and, "sat_add": sat_add, "sat_sub": sat_sub,
        "concat": concat, "slice_assign": slice_assign, "neg_cast": neg_cast,
        "signed_sub": signed_sub, "widen": widen, "newtype": flow, "from_newtype": y,
        "flag_ternary": flag_ternary, "max_named": max_named, "mix_fn": mix_fn,
        "enum_branch": enum_branch, "named_a": 1, "named_b": 2, "list_a": 3, "list_b": 4,
        "hsize": 20, "local_sum": local,
    }


def test_hand_computed_constants() -> None:
    """The packet-independent values, spelled out (so a slip in ``expected`` shows too)."""
    e = expected(0, 0, 30)
    assert (e["mul_add"], e["prec_chain"], e["div_mod"], e["shr"], e["shl_macro"]) == (
        7, 0x12F, 16, 0x97, 0x970)
    assert e["not_and"] == 0xFFFFFFEF
    assert (e["neg_cast"], e["signed_sub"], e["widen"], e["newtype"]) == (
        0xFFFB, 0xFFF8, 0xFFF8, 0xFFF8)
    assert (e["flag_ternary"], e["max_named"], e["enum_branch"]) == (2, 7, 15)
    assert e["mix_fn"] == 0x7F842


@pytest.fixture(scope="module")
def switch() -> Switch:
    bmv2_json, _ = compile_file(PROGRAM)
    sw = Switch()
    sw.load_json(bmv2_json)
    return sw


@pytest.mark.parametrize(("src", "dst", "ttl"), [
    ("10.1.2.3", "10.4.5.6", 30),
    ("192.168.0.1", "172.16.255.254", 64),    # 64 + 200 saturates
    ("0.0.0.0", "255.255.255.255", 0),
    ("255.255.255.255", "0.0.0.0", 255),
])
def test_expressions_program_computes_p4_values(switch: Switch, src: str, dst: str,
                                                ttl: int) -> None:
    pkt = Ether(dst="00:00:00:00:00:05", src="00:00:00:00:00:01") / IP(
        src=src, dst=dst, ttl=ttl) / UDP(sport=53, dport=53)
    data = bytes(pkt)
    out = switch.process_packet(0, data)
    assert len(out) == 1 and out[0][0] == 1
    o = out[0][1]
    # Ethernet and IPv4 unchanged except ttl = pair.a + pair.b; the report after them; then
    # the UDP bytes the parser did not extract
    assert o[:22] == data[:22]
    assert o[22] == 7
    assert o[23:34] == data[23:34]
    report = dict(zip([n for n, _ in FIELDS], REPORT.unpack(o[34:34 + REPORT.size]),
                      strict=True))
    ip = bytes(pkt[IP])
    want = expected(int.from_bytes(ip[12:16], "big"), int.from_bytes(ip[16:20], "big"), ttl)
    assert report == want
    assert o[34 + REPORT.size:] == data[34:]
