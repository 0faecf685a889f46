"""Expression semantics from the P4_16 spec, checked with packets through the engine.

- 8.9.5 implicit casts: an arbitrary-precision ``int`` expression that meets a ``bit<W>`` or
  ``int<W>`` value takes that type, in every context (``8w255 == -1`` is true);
- 8.6/8.7 arithmetic on ``bit<W>`` and ``int<W>``: wrap-around, saturation, shifts by amounts
  at or above the width (compile-time and run-time amounts), slices (always ``bit<>``), casts
  (sign extension, truncation), signed comparisons, concatenation of literals with widths;
- 8.17/8.18 ``==``/``!=`` on headers (equal when both invalid, or both valid with equal fields),
  structs and header unions (field by field), header stacks (element by element), and a
  struct/header against a list of its fields (p4c's RemoveComplexComparisons);
- 8.6 slices of slices as l-values: ``b[7:4][3:0]`` is ``b[7:4]``.

Each program is the 2-byte ``h`` (``a``, ``b``) template of :mod:`p4progs`; the expected output
byte is worked out by hand from the spec.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError, CompileWarning
from softnic.tests.compiler.p4progs import compile_text, program, run_b

S = "sm.egress_spec = 1; "


def apply(body: str) -> str:
    return "apply { " + S + body + " }"


def out(tmp_path: Path, src: str, a: int, b: int = 0) -> int | None:
    j, _ = compile_text(tmp_path, src)
    return run_b(j, a, b)


# ---------------------------------------------------------------- implicit casts of int literals

LITERALS = [
    # (id, ingress body, a, expected b)
    ("eq_minus1_literal", apply("hdr.h.b = 0; if (8w255 == -1) { hdr.h.b = 1; }"), 0, 1),
    ("eq_field_minus1", apply("hdr.h.b = 0; if (hdr.h.a == -1) { hdr.h.b = 1; }"), 255, 1),
    ("ne_minus1_field", apply("hdr.h.b = 0; if (-1 != hdr.h.a) { hdr.h.b = 1; }"), 255, 0),
    ("lt_minus1", apply("hdr.h.b = 0; if (hdr.h.a < -1) { hdr.h.b = 1; }"), 254, 1),
    ("ge_neg_expr", apply("hdr.h.b = 0; if (hdr.h.a >= -(1 + 1)) { hdr.h.b = 1; }"), 254, 1),
    ("eq_256_wraps", apply("hdr.h.b = 0; if (hdr.h.a == 256) { hdr.h.b = 1; }"), 0, 1),
    ("bool_var", apply("bool e = hdr.h.a == -2; hdr.h.b = e ? 8w1 : 8w2;"), 254, 1),
    ("add_minus1", apply("hdr.h.b = hdr.h.a + -1;"), 5, 4),
    ("and_minus1", apply("hdr.h.b = -1 & hdr.h.a;"), 5, 5),
    ("mul_minus1", apply("hdr.h.b = hdr.h.a * -1;"), 1, 255),
    ("xor_minus1", apply("hdr.h.b = hdr.h.a ^ -1;"), 1, 254),
    ("init_minus1", apply("bit<8> x = -1; hdr.h.b = x;"), 5, 255),
    ("assign_neg_expr", apply("hdr.h.b = -(1 + 2);"), 5, 253),
    ("action_arg", "action f(bit<8> v) { hdr.h.b = v; } " + apply("f(-1);"), 5, 255),
    ("ternary_arm", apply("hdr.h.b = hdr.h.a == 1 ? -1 : 8w3;"), 1, 255),
    ("ternary_both_arms", apply("hdr.h.b = hdr.h.a == 1 ? -1 : -2;"), 2, 254),
    ("cast", apply("hdr.h.b = (bit<8>)-1;"), 2, 255),
    ("shift_left_operand", apply("hdr.h.b = -1 << 2;"), 1, 252),
    ("int8_compare", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = 0; "
                           "if (s == -1) { hdr.h.b = 1; }"), 255, 1),
    ("int8_ternary", apply("int<8> s = hdr.h.a == 1 ? -1 : 1; hdr.h.b = (bit<8>)s;"), 1, 255),
    ("switch_label", apply("switch (hdr.h.a) { -1: { hdr.h.b = 1; } default: { hdr.h.b = 2; } }"),
     255, 1),
]


@pytest.mark.parametrize("body,a,want", [c[1:] for c in LITERALS], ids=[c[0] for c in LITERALS])
def test_int_literal_takes_the_other_operands_type(tmp_path: Path, body: str, a: int,
                                                    want: int) -> None:
    j, _ = compile_text(tmp_path, program(body))
    assert run_b(j, a) == want
    if "int<" not in body:
        # the literal was cast to a bit<W> at compile time, as p4c's ConstantFolding does:
        # the JSON carries its unsigned value, never a negative hex string
        assert '"-0x' not in json.dumps(j)


@pytest.mark.parametrize("body,message", [
    ("hdr.h.b = 0; if (8w255 == -1) { hdr.h.b = 1; }", "-1: negative value with unsigned type"),
    ("hdr.h.b = hdr.h.a + 300;", "300: value does not fit in 8 bits"),
    ("int<8> s = 200; hdr.h.b = (bit<8>)s;", "200: value does not fit in 8 bits"),
])
def test_a_cast_constant_that_does_not_fit_warns_as_p4c_does(tmp_path: Path, body: str,
                                                              message: str) -> None:
    warnings: list[CompileWarning] = []
    compile_text(tmp_path, program(apply(body)), warnings=warnings)
    assert [w.message for w in warnings] == [message]


def test_function_return_value_is_cast(tmp_path: Path) -> None:
    src = program(apply("hdr.h.b = g();")).replace(
        "control I(", "bit<8> g() { return -1; }\ncontrol I(", 1)
    j, _ = compile_text(tmp_path, src)
    assert run_b(j, 0) == 255
    assert '"-0x' not in json.dumps(j)


def test_select_case_minus1(tmp_path: Path) -> None:
    src = program(apply("")).replace(
        "state start { pkt.extract(hdr.h); transition accept; }",
        "state start { pkt.extract(hdr.h); transition select(hdr.h.a) { -1: s2; -16 &&& -16: s3;"
        " default: accept; } }\n"
        "state s2 { hdr.h.b = 7; transition accept; }\n"
        "state s3 { hdr.h.b = 9; transition accept; }")
    j, _ = compile_text(tmp_path, src)
    assert '"-0x' not in json.dumps(j)
    assert run_b(j, 255) == 7
    assert run_b(j, 0xf3) == 9
    assert run_b(j, 0xe3) == 0


TABLE = """action set(bit<8> v) { hdr.h.b = v; }
table t { key = { hdr.h.a : %s; } actions = { set; NoAction; } default_action = %s;
  const entries = { %s } }
""" + apply("t.apply();")


def test_const_entries_and_action_data_are_cast(tmp_path: Path) -> None:
    src = program(TABLE % ("exact", "NoAction", "-1 : set(-2); 1 : set(3);"))
    j, _ = compile_text(tmp_path, src)
    # BMv2 takes these as unsigned hex strings of the key's / parameter's width
    assert '"-0x' not in json.dumps(j)
    assert run_b(j, 255) == 254
    assert run_b(j, 1) == 3
    assert run_b(j, 2) == 0


def test_ternary_entry_mask_and_default_action_argument(tmp_path: Path) -> None:
    src = program(TABLE % ("ternary", "set(-3)", "-16 &&& -16 : set(-2);"))
    assert out(tmp_path, src, 0xf1) == 254
    assert out(tmp_path, src, 0x71) == 253


def test_constants_of_saturating_and_concatenation_fold(tmp_path: Path) -> None:
    src = program("const bit<8> K = 8w200 |+| 8w100; const bit<16> C = 8w10 ++ 8w252;\n"
                  + apply("hdr.h.b = K - C[15:8] - C[7:0];"))
    assert out(tmp_path, src, 0) == (255 - 10 - 252) & 255


def test_concatenation_of_an_untyped_literal_is_refused_as_p4c_does(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match="Please specify a width for the operand 1 of a "
                       "concatenation"):
        compile_text(tmp_path, program(apply("bit<16> c = 1 ++ 8w2; hdr.h.b = c[7:0];")))


@pytest.mark.parametrize("body,message", [
    (apply("hdr.h.b = (bit<8>)(-7 / 2);"), "Division is not defined for negative numbers"),
    (apply("hdr.h.b = (bit<8>)(-7 % 2);"), "Modulo is not defined for negative numbers"),
    (apply("hdr.h.b = hdr.h.a << -1;"), "Shifts with negative amounts are not permitted"),
    (apply("bool x = (bool)2; hdr.h.b = x ? 8w1 : 8w0;"), "Only 0 and 1 can be cast to booleans"),
])
def test_constant_folding_refusals_use_p4cs_messages(tmp_path: Path, body: str,
                                                     message: str) -> None:
    with pytest.raises(CompileError, match=message):
        compile_text(tmp_path, program(body))


@pytest.mark.parametrize("body,message", [
    (apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = (bit<8>)(s / 8s2);"),
     "Cannot operate on signed values"),
    (apply("int<8> n = (int<8>)hdr.h.a; hdr.h.b = hdr.h.b << n;"),
     "Shift amount must be an unsigned number"),
    (apply("hdr.h.b = (bit<8>)(200 |+| 100);"), "saturating operation on untyped values"),
])
def test_type_refusals_use_p4cs_messages(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        compile_text(tmp_path, program(body))


def test_a_non_negative_signed_constant_is_a_valid_shift_amount(tmp_path: Path) -> None:
    # p4c's TypeInference turns 8s2 into an unsigned amount
    assert out(tmp_path, program(apply("hdr.h.b = hdr.h.a << 8s2;")), 3) == 12


def test_division_by_a_cast_literal_is_unsigned(tmp_path: Path) -> None:
    # -1 takes bit<8>: 255, so 200 / 255 is 0 and 200 % 255 is 200
    assert out(tmp_path, program(apply("hdr.h.b = hdr.h.a / -1 + hdr.h.a % -1;")), 200) == 200


# ---------------------------------------------------------------- arithmetic corners
# (the spec's values; these already held before the implicit-cast change, kept as a guard)

ARITH = [
    ("concat_literals_hi", apply("bit<16> c = 8w10 ++ 8w252; hdr.h.b = c[15:8];"), 0, 10),
    ("concat_literals_lo", apply("bit<16> c = 8w10 ++ 8w252; hdr.h.b = c[7:0];"), 0, 252),
    ("concat_runtime", apply("bit<16> c = hdr.h.a ++ 8w252; hdr.h.b = c[11:4];"), 0xab, 0xbf),
    ("shl_bit_const_ge_width", apply("hdr.h.b = hdr.h.a << 8;"), 3, 0),
    ("shr_bit_const_ge_width", apply("hdr.h.b = hdr.h.a >> 8w8;"), 3, 0),
    ("shl_bit_runtime_ge_width", apply("bit<8> x = 255; hdr.h.b = x << hdr.h.a;"), 8, 0),
    ("shr_bit_runtime_ge_width", apply("bit<8> x = 255; hdr.h.b = x >> hdr.h.a;"), 200, 0),
    ("shr_int_const_ge_width_neg", apply("int<8> s = (int<8>)hdr.h.a; "
                                         "hdr.h.b = (bit<8>)(s >> 20);"), 0x80, 255),
    ("shr_int_const_ge_width_pos", apply("int<8> s = (int<8>)hdr.h.a; "
                                         "hdr.h.b = (bit<8>)(s >> 8);"), 0x7f, 0),
    ("shl_int_const_ge_width", apply("int<8> s = (int<8>)hdr.h.a; "
                                     "hdr.h.b = (bit<8>)(s << 8);"), 9, 0),
    ("shr_int_runtime_ge_width", apply("int<8> s = -16; hdr.h.b = (bit<8>)(s >> hdr.h.a);"),
     9, 255),
    ("shl_int_runtime", apply("int<8> s = -1; hdr.h.b = (bit<8>)(s << hdr.h.a);"), 7, 128),
    ("shl_int_runtime_ge_width", apply("int<8> s = -1; hdr.h.b = (bit<8>)(s << hdr.h.a);"),
     9, 0),
    ("shr_int_arith", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = (bit<8>)(s >> 1);"),
     0x80, 0xC0),
    ("sat_add_bit", apply("hdr.h.b = hdr.h.a |+| 8w100;"), 200, 255),
    ("sat_sub_bit", apply("hdr.h.b = hdr.h.a |-| 8w100;"), 50, 0),
    ("sat_add_int", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = (bit<8>)(s |+| 8s100);"),
     100, 127),
    ("sat_sub_int", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = (bit<8>)(s |-| 8s100);"),
     0x9c, 0x80),
    ("sat_add_int_literal", apply("int<8> s = (int<8>)hdr.h.a; "
                                  "hdr.h.b = (bit<8>)(s |+| -100);"), 0x9c, 0x80),
    ("sat_const_int", apply("hdr.h.b = (bit<8>)(8s100 |+| 8s100);"), 0, 127),
    ("int_wraps", apply("int<8> s = 127; s = s + 1; hdr.h.b = (bit<8>)s;"), 0, 128),
    ("neg_bit", apply("hdr.h.b = -hdr.h.a;"), 1, 255),
    ("int_slice_is_bits", apply("int<8> s = -2; hdr.h.b = (bit<8>)(s[7:4] ++ s[3:0]);"), 0, 254),
    ("int_slice_lvalue", apply("int<8> s = -1; s[7:4] = 4w0; hdr.h.b = (bit<8>)s;"), 0, 15),
    ("int_slice_lvalue_sign", apply("int<8> s = 0; s[7:4] = 4w15; hdr.h.b = 0; "
                                    "if (s < 0) { hdr.h.b = 1; }"), 0, 1),
    ("int_cast_sign_extends", apply("int<8> s = -2; int<16> t = (int<16>)s; "
                                    "hdr.h.b = t[15:8];"), 0, 255),
    ("int_cast_truncates", apply("int<16> t = -300; int<8> s = (int<8>)t; "
                                 "hdr.h.b = (bit<8>)s;"), 0, (-300) & 255),
    ("int_to_wider_bit", apply("int<8> s = (int<8>)hdr.h.a; bit<16> t = (bit<16>)(int<16>)s; "
                               "hdr.h.b = t[15:8];"), 0x80, 255),
    ("bit_to_wider_int", apply("int<16> t = (int<16>)(bit<16>)hdr.h.a; "
                               "hdr.h.b = (bit<8>)t[15:8];"), 0x80, 0),
    ("int_lt_signed", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = 0; "
                            "if (s < 8s1) { hdr.h.b = 1; }"), 200, 1),
    ("int_gt_signed", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = 0; "
                            "if (s > -8s2) { hdr.h.b = 1; }"), 255, 1),
    ("int_le_min", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = 0; "
                         "if (s <= -128) { hdr.h.b = 1; }"), 0x80, 1),
    ("int_ge_two_vars", apply("int<8> s = (int<8>)hdr.h.a; int<8> t = (int<8>)hdr.h.b; "
                              "hdr.h.b = 0; if (s >= t) { hdr.h.b = 1; }"), 255, 0),
    ("complement_int", apply("hdr.h.b = 0; if (~8s0 == -1) { hdr.h.b = 1; }"), 0, 1),
]


@pytest.mark.parametrize("body,a,want", [c[1:] for c in ARITH], ids=[c[0] for c in ARITH])
def test_arithmetic_corners(tmp_path: Path, body: str, a: int, want: int) -> None:
    assert out(tmp_path, program(body), a) == want


CONCAT_SIGNED = [
    # a signed right operand contributes only its 8 bits: 8w1 ++ 8s-1 is 0x01ff
    ("signed_right_high_byte", apply("int<8> s = (int<8>)hdr.h.a; bit<16> c = 8w1 ++ s; "
                                     "hdr.h.b = c[15:8];"), 255, 1),
    # a signed left operand makes an int<16>: (-1 ++ 8w1) is -255, negative
    ("signed_result_is_negative", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = 0; "
                                        "if ((s ++ 8w1) < 0) { hdr.h.b = 1; }"), 255, 1),
    ("signed_result_is_positive", apply("int<8> s = (int<8>)hdr.h.a; hdr.h.b = 0; "
                                        "if ((s ++ 8w1) < 0) { hdr.h.b = 1; }"), 127, 0),
]


@pytest.mark.parametrize("body,a,want", [c[1:] for c in CONCAT_SIGNED],
                         ids=[c[0] for c in CONCAT_SIGNED])
def test_concatenation_with_signed_operands(tmp_path: Path, body: str, a: int, want: int) -> None:
    assert out(tmp_path, program(body), a) == want


# ---------------------------------------------------------------- header / struct equality

UNION = "header g_t { bit<8> c; } header_union u_t { h_t x; g_t y; }"
EQUALITY = [
    ("header_copy_equal", apply("h_t x = hdr.h; hdr.h.b = x == hdr.h ? 8w1 : 8w2;"), 2, 1, ""),
    ("header_field_differs", apply("h_t x = hdr.h; x.a = x.a + 1; "
                                   "hdr.h.b = x == hdr.h ? 8w1 : 8w2;"), 2, 2, ""),
    ("header_ne_field_differs", apply("h_t x = hdr.h; x.a = x.a + 1; "
                                      "hdr.h.b = x != hdr.h ? 8w1 : 8w2;"), 2, 1, ""),
    ("headers_both_invalid", apply("h_t x = hdr.h; x.a = 1; x.setInvalid(); h_t y = hdr.h; "
                                   "y.a = 2; y.setInvalid(); hdr.h.b = x == y ? 8w1 : 8w2;"),
     2, 1, ""),
    ("uninitialized_headers", apply("h_t x; h_t y; hdr.h.b = x == y ? 8w1 : 8w2;"), 2, 1, ""),
    ("one_invalid", apply("h_t x = hdr.h; x.setInvalid(); hdr.h.b = x == hdr.h ? 8w1 : 8w2;"),
     2, 2, ""),
    ("one_invalid_ne", apply("h_t x = hdr.h; x.setInvalid(); "
                             "hdr.h.b = hdr.h != x ? 8w1 : 8w2;"), 2, 1, ""),
    ("in_if", apply("h_t x = hdr.h; hdr.h.b = 5; if (x == hdr.h) { hdr.h.b = 1; }"), 2, 5, ""),
    ("header_vs_list", apply("hdr.h.b = 7; hdr.h.b = hdr.h == {8w3, 8w7} ? 8w1 : 8w2;"),
     3, 1, ""),
    ("header_vs_list_ints", apply("hdr.h.b = 255; hdr.h.b = hdr.h == {3, -1} ? 8w1 : 8w2;"),
     3, 1, ""),
    ("list_vs_header_differs", apply("hdr.h.b = 7; hdr.h.b = {8w3, 8w8} == hdr.h ? 8w1 : 8w2;"),
     3, 2, ""),
    ("invalid_header_vs_list", apply("h_t x; hdr.h.b = x == {8w0, 8w0} ? 8w1 : 8w2;"),
     3, 2, ""),
    ("header_vs_struct_init", apply("hdr.h.b = 7; "
                                    "hdr.h.b = hdr.h == {b = 8w7, a = 8w3} ? 8w1 : 8w2;"),
     3, 1, ""),
    ("struct_equal", apply("hs_t x = hdr; hdr.h.b = x == hdr ? 8w1 : 8w2;"), 3, 1, ""),
    ("struct_ne", apply("hs_t x = hdr; x.h.b = 9; hdr.h.b = x != hdr ? 8w1 : 8w2;"), 3, 1, ""),
    ("struct_nested_header_invalid", apply("hs_t x = hdr; x.h.setInvalid(); "
                                           "hdr.h.b = x == hdr ? 8w1 : 8w2;"), 3, 2, ""),
    ("metadata_struct", apply("m_t y = meta; meta.x = 4; y.x = 4; "
                              "hdr.h.b = y == meta ? 8w1 : 8w2;"), 3, 1, ""),
    ("metadata_struct_differs", apply("m_t y = meta; meta.x = 4; y.x = 5; "
                                      "hdr.h.b = y == meta ? 8w1 : 8w2;"), 3, 2, ""),
    ("struct_vs_list", apply("meta.x = 4; hdr.h.b = meta == {4} ? 8w1 : 8w2;"), 3, 1, ""),
    ("list_vs_list", apply("hdr.h.b = {hdr.h.a, 8w2} == {8w3, 8w2} ? 8w1 : 8w2;"), 3, 1, ""),
    ("in_action", "action f() { h_t x = hdr.h; x.b = 1; hdr.h.b = x == hdr.h ? 8w1 : 8w2; } "
     + apply("f();"), 3, 2, ""),
    ("stacks_equal", apply("h_t[2] s; h_t[2] t; s[0] = hdr.h; t[0] = hdr.h; "
                           "hdr.h.b = s == t ? 8w1 : 8w2;"), 3, 1, ""),
    ("stacks_differ", apply("h_t[2] s; h_t[2] t; s[0] = hdr.h; t[1] = hdr.h; "
                            "hdr.h.b = s == t ? 8w1 : 8w2;"), 3, 2, ""),
    ("unions_equal", apply("u_t u; u_t v; u.x = hdr.h; v.x = hdr.h; "
                           "hdr.h.b = u == v ? 8w1 : 8w2;"), 3, 1, UNION),
    ("unions_other_member", apply("u_t u; u_t v; u.x = hdr.h; v.y = {8w1}; "
                                  "hdr.h.b = u == v ? 8w1 : 8w2;"), 3, 2, UNION),
]


@pytest.mark.parametrize("body,a,want,pre", [c[1:] for c in EQUALITY],
                         ids=[c[0] for c in EQUALITY])
def test_header_and_struct_equality(tmp_path: Path, body: str, a: int, want: int,
                                    pre: str) -> None:
    src = program(body)
    if pre:
        src = src.replace("control I(", pre + "\ncontrol I(", 1)
    assert out(tmp_path, src, a) == want


@pytest.mark.parametrize("body", [
    apply("m_t y = meta; hdr.h.b = y == hdr ? 8w1 : 8w2;"),
    apply("hdr.h.b = hdr.h == {8w1} ? 8w1 : 8w2;"),
])
def test_comparing_different_types_is_refused_with_p4cs_message(tmp_path: Path,
                                                                 body: str) -> None:
    with pytest.raises(CompileError, match="cannot be compared to"):
        compile_text(tmp_path, program(body))


# ---------------------------------------------------------------- nested slices as l-values

SLICES = [
    ("field", apply("hdr.h.b = 0; hdr.h.b[7:4][3:0] = 4w5;"), 0, 0x50),
    ("inner_range", apply("hdr.h.b = 0xff; hdr.h.b[7:2][3:1] = 3w0;"), 0, 0b11000111),
    ("three_deep", apply("hdr.h.b = 0; hdr.h.b[7:1][5:1][1:1] = 1w1;"), 0, 0b00001000),
    ("local", apply("bit<8> x = hdr.h.a; x[6:1][2:0] = 3w0; hdr.h.b = x;"), 0xff, 0b11110001),
    ("int8", apply("int<8> s = 0; s[7:4][3:3] = 1w1; hdr.h.b = 0; "
                   "if (s < 0) { hdr.h.b = 1; }"), 0, 1),
]


@pytest.mark.parametrize("body,a,want", [c[1:] for c in SLICES], ids=[c[0] for c in SLICES])
def test_slice_of_a_slice_as_lvalue(tmp_path: Path, body: str, a: int, want: int) -> None:
    assert out(tmp_path, program(body), a) == want
