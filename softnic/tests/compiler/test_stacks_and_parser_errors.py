"""Header stacks and parser errors as the P4_16 spec, p4c 1.2.4 and BMv2 1.15 define them.

Every program is compiled by softnic and run on the engine with real packets. The packet is a
3-byte header ``c`` (``n``, ``i``, ``r``) followed by the rest; ingress writes the number of
``standard_metadata.parser_error`` into ``c.r`` (error values cannot be cast, so it compares
against each error in the order p4c numbers them: core.p4's seven, then the program's own) and
sends the packet to port 1. What BMv2 does, from its source (src/bm_sim/parser.cpp):

- a parser error stops the parser; the packet is not dropped: ingress runs with
  ``parser_error`` set, the headers extracted before the error stay valid, and every byte from
  where the failing operation started on is payload (``bytes_parsed`` only moves after an
  operation succeeds), so the deparser puts it back after the valid headers;
- ``advance`` by a number of bits that is not a multiple of 8 is ParserInvalidArgument, past
  the end of the packet PacketTooShort (ParserOpAdvance);
- ``extract`` with a length (extract_VL) checks, in this order: a length that is not a whole
  number of bytes (ParserInvalidArgument), the bytes left (PacketTooShort), the header type's
  max_length (HeaderTooShort); into ``stack.next`` it is ParserOpExtractStack with a length;
- a select whose cases all miss and that has no default goes to ParseState's
  default_next_state, which is null: accept, with parser_error still NoError. p4c-bm2-ss 1.2.4
  emits no default for such a select (its simple_switch mid end does not run HandleNoMatch), so
  the spec's error.NoMatch does not happen on p4c + BMv2.

p4c's TypeInference limits where stack members may appear: ``next``, ``last`` and
``lastIndex`` only in parsers, ``push_front``/``pop_front`` nowhere in a parser, and there is no
``nextIndex`` member at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.diagnostics import CompileError
from softnic.runtime.switch import Switch

HEADERS = """
header c_t { bit<8> n; bit<8> i; bit<8> r; }
header b_t { bit<8> v; }
header v_t { bit<8> l; varbit<16> d; }
"""

# core.p4's errors in declaration order: p4c numbers them 0..6 in the JSON "errors" list
ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
          "ParserTimeout", "ParserInvalidArgument"]
NO_ERROR, TOO_SHORT, NO_MATCH, SOBE, HEADER_TOO_SHORT, TIMEOUT, INVALID_ARG = range(7)


def error_number() -> str:
    """Ingress statements writing the number of ``sm.parser_error`` into ``hdr.c.r``."""
    out = "hdr.c.r = 0xff;\n"
    for i, name in enumerate(ERRORS):
        out += f"if (sm.parser_error == error.{name}) {{ hdr.c.r = {i}; }}\n"
    return out


def program(states: str, ingress: str = "", fields: str = "c_t c; b_t[4] s;",
            emit: str = "pkt.emit(hdr.c); pkt.emit(hdr.s);", locals_: str = "") -> str:
    return f"""#include <core.p4>
#include <v1model.p4>
{HEADERS}
struct hs_t {{ {fields} }}
struct m_t {{ bit<8> i; }}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
{states}
}}
control VC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
{locals_}
    apply {{ sm.egress_spec = 1; {error_number()} {ingress} }}
}}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in hs_t hdr) {{ apply {{ {emit} }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def compile_src(tmp_path: Path, src: str) -> dict[str, Any]:
    path = tmp_path / "prog.p4"
    path.write_text(src)
    j, _ = compile_file(path)
    return j


def run(tmp_path: Path, src: str, packet: list[int]) -> list[int]:
    """The one packet the program sends out on port 1, as a list of byte values."""
    j = compile_src(tmp_path, src)
    for st in j["parsers"][0]["parse_states"]:
        for op in st["parser_ops"]:
            # BMv2 reads extract_VL's length from an "expression" wrapper (what p4c emits);
            # the form of softnic's lowering is not what this file tests.
            if op["op"] == "extract_VL" and op["parameters"][1].get("type") != "expression":
                op["parameters"][1] = {"type": "expression", "value": op["parameters"][1]}
    sw = Switch()
    sw.load_json(j)
    out = sw.process_packet(0, bytes(packet))
    assert len(out) == 1, out
    port, data = out[0]
    assert port == 1
    return list(data)


def refused(tmp_path: Path, src: str) -> str:
    with pytest.raises(CompileError) as info:
        compile_src(tmp_path, src)
    return str(info.value)


# -- parser errors ------------------------------------------------------------------------------

SELECT_WITHOUT_DEFAULT = """
    state start { pkt.extract(hdr.c); transition select(hdr.c.n) { 1: accept; 2: one; } }
    state one { pkt.extract(hdr.s.next); transition accept; }
"""


def test_select_without_default_that_matches_nothing_accepts_with_no_error(tmp_path: Path):
    # n = 3 matches no case: accept, NoError; the next byte was not extracted, so it is payload
    assert run(tmp_path, program(SELECT_WITHOUT_DEFAULT), [3, 0, 9, 5, 0xAA]) == [
        3, 0, NO_ERROR, 5, 0xAA]


ADVANCE = """
    state start {
        pkt.extract(hdr.c);
        pkt.advance((bit<32>)hdr.c.i);
        pkt.extract(hdr.s.next);
        transition accept;
    }
"""


def test_advance_by_bits_that_are_not_whole_bytes_is_parser_invalid_argument(tmp_path: Path):
    # advance(12): ParserInvalidArgument before moving; s.next never extracted, so both bytes
    # after c are payload again
    assert run(tmp_path, program(ADVANCE), [0, 12, 0, 5, 6, 0xAA]) == [
        0, 12, INVALID_ARG, 5, 6, 0xAA]


def test_advance_past_the_end_is_packet_too_short_and_keeps_the_unparsed_bytes(tmp_path: Path):
    # advance(32) with two bytes left: PacketTooShort raised before moving, so the two bytes
    # stay in the packet as payload
    assert run(tmp_path, program(ADVANCE), [0, 32, 0, 5, 6]) == [0, 32, TOO_SHORT, 5, 6]


VL = """
    state start { pkt.extract(hdr.c); pkt.extract(hdr.v, (bit<32>)hdr.c.i); transition accept; }
"""
VL_FIELDS = "c_t c; v_t v;"
VL_EMIT = "pkt.emit(hdr.c); pkt.emit(hdr.v);"


def test_varbit_length_not_whole_bytes_is_parser_invalid_argument(tmp_path: Path):
    src = program(VL, fields=VL_FIELDS, emit=VL_EMIT)
    # 12 bits: ParserInvalidArgument (not HeaderTooShort); v stays invalid, its bytes payload
    assert run(tmp_path, src, [0, 12, 0, 7, 9, 0xAA]) == [0, 12, INVALID_ARG, 7, 9, 0xAA]


def test_varbit_too_short_packet_is_checked_before_max_length(tmp_path: Path):
    src = program(VL, fields=VL_FIELDS, emit=VL_EMIT)
    # 24 bits is past v_t's max (16) and the packet has only 3 of the 4 bytes: BMv2 checks the
    # packet first, so PacketTooShort
    assert run(tmp_path, src, [0, 24, 0, 7, 9, 0xAA]) == [0, 24, TOO_SHORT, 7, 9, 0xAA]


VL_STACK = """
    state start {
        pkt.extract(hdr.c);
        pkt.extract(hdr.vs.next, (bit<32>)hdr.c.i);
        pkt.extract(hdr.vs.next, (bit<32>)hdr.c.n);
        pkt.extract(hdr.vs.next, 8);
        transition accept;
    }
"""


def test_varbit_extract_into_stack_next(tmp_path: Path):
    src = program(VL_STACK, fields="c_t c; v_t[2] vs;", emit="pkt.emit(hdr.c); pkt.emit(hdr.vs);")
    # vs[0] = (7, 8-bit d 9), vs[1] = (6, empty d); the third extract finds the stack full:
    # StackOutOfBounds, the last two bytes stay payload
    assert run(tmp_path, src, [0, 8, 0, 7, 9, 6, 1, 2]) == [0, 8, SOBE, 7, 9, 6, 1, 2]


# -- where stack members may appear (p4c's TypeInference) ---------------------------------------

STACK_PARSER = """
    state start { pkt.extract(hdr.c); transition s0; }
    state s0 {
        pkt.extract(hdr.s.next);
        transition select(hdr.s.last.v) { 0: accept; default: s0; }
    }
"""


@pytest.mark.parametrize(("ingress", "message"), [
    ("hdr.c.n = hdr.s.last.v;",
     "hdr.s.last: 'last', and 'next' for stacks can only be used in a parser"),
    ("hdr.s.next.setValid();",
     "hdr.s.next: 'last', and 'next' for stacks can only be used in a parser"),
    ("hdr.c.n = (bit<8>)hdr.s.lastIndex;",
     "hdr.s.lastIndex: 'lastIndex' for stacks can only be used in a parser"),
])
def test_parser_only_stack_members_are_refused_in_a_control(tmp_path: Path, ingress: str,
                                                            message: str):
    assert message in refused(tmp_path, program(STACK_PARSER, ingress))


def test_last_index_is_refused_in_an_action(tmp_path: Path):
    src = program(STACK_PARSER, "a();",
                  locals_="action a() { hdr.c.n = (bit<8>)hdr.s.lastIndex; }")
    assert "'lastIndex' for stacks can only be used in a parser" in refused(tmp_path, src)


def test_next_index_is_not_a_stack_member(tmp_path: Path):
    src = program(STACK_PARSER.replace("transition s0; }", "meta.i = (bit<8>)hdr.s.nextIndex; "
                                       "transition s0; }", 1))
    assert "Cannot extract field nextIndex from hdr.s which has type b_t[4]" in refused(
        tmp_path, src)



def test_push_front_is_refused_in_a_parser(tmp_path: Path):
    src = program(STACK_PARSER.replace("transition s0; }", "hdr.s.push_front(1); transition s0; }",
                                       1))
    assert ("hdr.s.push_front: 'push_front' and 'pop_front' for stacks cannot be used in a "
            "parser") in refused(tmp_path, src)


@pytest.mark.parametrize(("index", "message"), [
    ("4", "Array index 4 larger or equal to array size 4"),
    ("2 + 2", "Array index 4 larger or equal to array size 4"),
    ("-1", "hdr.s[-1]: Negative array index -1"),
])
def test_constant_stack_index_out_of_range_is_refused_with_p4c_wording(tmp_path: Path,
                                                                       index: str, message: str):
    assert message in refused(tmp_path, program(STACK_PARSER, f"hdr.s[{index}].v = 1;"))


# -- whole-stack assignment (p4c: assign_header_stack, every element and nextIndex) -------------

TWO_STACKS = "c_t c; b_t[4] s; b_t[4] t;"
EMIT_TWO = "pkt.emit(hdr.c); pkt.emit(hdr.s); pkt.emit(hdr.t);"


@pytest.mark.parametrize(("ingress", "expected"), [
    # t becomes a copy of s (three valid elements), then t[0] changes alone
    ("hdr.t = hdr.s; hdr.t[0].v = 1;", [5, 6, 0, 1, 6, 0]),
    # through a local stack: pop_front on the copy, then copied back
    ("b_t[4] tmp = hdr.s; tmp.pop_front(1); hdr.s = tmp;", [6, 0]),
    # a stack inside a copied struct
    ("hs_t x = hdr; x.s.pop_front(1); hdr.t = x.s;", [5, 6, 0, 6, 0]),
])
def test_whole_stack_assignment(tmp_path: Path, ingress: str, expected: list[int]):
    src = program(STACK_PARSER, ingress, fields=TWO_STACKS, emit=EMIT_TWO)
    assert run(tmp_path, src, [0, 0, 0, 5, 6, 0, 0xAA]) == [0, 0, NO_ERROR, *expected, 0xAA]


def test_sub_parser_with_an_inout_stack(tmp_path: Path):
    # copy-in of hdr.s, the sub-parser's extracts into st.next, copy-out back into hdr.s
    states = """
    Sub() sub;
    state start { pkt.extract(hdr.c); sub.apply(pkt, hdr.s); transition accept; }
"""
    src = program(states).replace("parser P(", """parser Sub(packet_in p, inout b_t[4] st) {
    state start { p.extract(st.next); transition select(st.last.v) { 0: accept; default: start; } }
}
parser P(""", 1)
    assert run(tmp_path, src, [0, 0, 0, 5, 0, 0xAA]) == [0, 0, NO_ERROR, 5, 0, 0xAA]


def test_header_union_stack_run_time_index_is_a_positioned_refusal_not_a_crash(tmp_path: Path):
    # p4c accepts stacks of header unions and softnic has them (test_header_union_stacks.py),
    # but not a run-time index into one yet: said at the expression, not inside the lowering
    src = program("state start { pkt.extract(hdr.c); transition accept; }",
                  ingress="hdr.u[hdr.c.i].b.setValid();",
                  fields="c_t c; u_t[2] u;", emit="pkt.emit(hdr.c);").replace(
        "struct hs_t", "header d_t { bit<16> w; }\nheader_union u_t { b_t b; d_t d; }\n"
                       "struct hs_t", 1)
    msg = refused(tmp_path, src)
    assert "run-time index into a stack of header unions" in msg
    assert ":" in msg.split("error")[0]  # file:line:col


# -- out-of-range stack accesses at run time ----------------------------------------------------

def test_last_of_an_empty_stack_in_a_select_is_stack_out_of_bounds(tmp_path: Path):
    # the select reads hdr.s.last before any extract into s: StackOutOfBounds, and everything
    # after c is payload (once, not the whole packet again)
    states = "state start { pkt.extract(hdr.c); " \
             "transition select(hdr.s.last.v) { 0: accept; default: accept; } }"
    assert run(tmp_path, program(states), [0, 1, 0, 5, 7, 0xAA]) == [0, 1, SOBE, 5, 7, 0xAA]


def run_stats(tmp_path: Path, src: str, packet: list[int]) -> tuple[list, Any]:
    sw = Switch()
    sw.load_json(compile_src(tmp_path, src))
    return sw.process_packet(0, bytes(packet)), sw.stats


TWO_EXTRACTS = """
    state start {
        pkt.extract(hdr.c);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        READ
        transition accept;
    }
"""


@pytest.mark.parametrize(("read", "ingress"), [
    ("hdr.c.r = hdr.s[hdr.c.i].v;", ""),  # in a parser state
    ("", "hdr.c.r = hdr.s[hdr.c.i].v;"),  # in ingress, read
    ("", "hdr.s[hdr.c.i].v = 1;"),  # in ingress, written
])
def test_run_time_stack_index_out_of_range_drops_the_packet_as_bmv2_aborts(
        tmp_path: Path, read: str, ingress: str):
    """BMv2's Stack::at throws std::out_of_range, which nothing catches: simple_switch
    terminates and sends nothing. softnic sends nothing for that packet either, counting it with
    the assert failures (the program's doing), not as an engine error; in range it works."""
    src = program(TWO_EXTRACTS.replace("READ", read), ingress)
    out, stats = run_stats(tmp_path, src, [0, 4, 0, 5, 7, 0xAA])
    assert out == []
    assert (stats.assert_failures, stats.engine_errors) == (1, 0)
    assert "out of range" in stats.last_error
    out, stats = run_stats(tmp_path, src, [0, 1, 0, 5, 7, 0xAA])
    assert len(out) == 1 and stats.assert_failures == 0
