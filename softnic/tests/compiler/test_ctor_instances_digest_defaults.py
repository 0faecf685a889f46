"""An instance passed as a constructor argument, digests of lists, default parameter values.

- ``Inc() inc; Twice(inc) tw;`` with ``control Twice(...)(Inc c)``: p4c (SpecializeAll, the
  inliner) inlines ``c.apply`` as applications of ``inc`` itself, so the state inside ``inc``
  (a register, a counter, a table) is one and shared with direct ``inc.apply`` calls, and keeps
  the control-plane name of ``inc`` (p4c's issue1566-bmv2 golden P4Info names its counter
  ``cIngress.E.c1.stats``).
- ``Sub.apply(x)`` on a control type (InstantiateDirectCalls) is an instance named ``Sub``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.diagnostics import CompileError
from softnic.runtime.switch import Switch
from softnic.tests.compiler.engine_run import program

SHARED_REGISTER = """
control Inc(inout bit<8> x) {
    register<bit<8>>(1) r;
    apply {
        bit<8> v;
        r.read(v, 0);
        v = v + 1;
        r.write(0, v);
        x = v;
    }
}
control Twice(inout bit<8> y)(Inc c) { apply { c.apply(y); c.apply(y); } }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Inc() inc;
    Twice(inc) tw;
    apply {
        inc.apply(h.d.a);
        tw.apply(h.d.b);
        sm.egress_spec = 1;
    }
}
"""


def compile_src(tmp_path: Path, src: str) -> tuple[dict, object]:
    path = tmp_path / "prog.p4"
    path.write_text(src)
    return compile_file(path)


def run(bmv2_json: dict, packets: list[bytes]) -> list[bytes]:
    sw = Switch()
    sw.load_json(bmv2_json)
    outs = []
    for data in packets:
        out = sw.process_packet(0, data)
        assert len(out) == 1 and out[0][0] == 1, out
        outs.append(out[0][1])
    return outs


def test_instance_argument_shares_its_register(tmp_path: Path) -> None:
    bmv2_json, res = compile_src(tmp_path, program(SHARED_REGISTER))
    # one register, named for the instance ``inc`` of ``I``
    assert [r.name for r in res.registers] == ["I.inc.r"]
    # packet 1: inc -> r=1, a=1; tw applies inc twice -> r=2, r=3, b=3
    # packet 2: r=4 (a), 5, 6 (b)
    outs = run(bmv2_json, [bytes([9, 9, 7, 7]), bytes([9, 9, 7, 7])])
    assert outs == [bytes([1, 3, 7, 7]), bytes([4, 6, 7, 7])]


COUNTER_TWO_USERS = """
control C1(inout bit<16> x) {
    counter((bit<32>) 1024, CounterType.packets) stats;
    apply { x = x + 1; stats.count((bit<32>) x[9:0]); }
}
control C2(inout bit<16> x)(C1 c) { apply { x = x << 1; c.apply(x); } }
control C3(inout bit<16> x)(C1 c) { apply { x = x << 3; c.apply(x); } }
control Ex(inout bit<16> x) {
    C1() c1;
    C2(c1) c2;
    C3(c1) c3;
    apply { c2.apply(x); c3.apply(x); }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { Ex.apply(h.d.v); sm.egress_spec = 1; }
}
"""


def test_instance_shared_by_two_blocks_direct_type_call(tmp_path: Path) -> None:
    """issue1566-bmv2's shape: ``c1`` passed to two controls; ``Ex.apply`` on the type."""
    bmv2_json, res = compile_src(tmp_path, program(COUNTER_TWO_USERS, fields="bit<16> v;"))
    assert [(c.name, c.size) for c in res.counters] == [("I.Ex.c1.stats", 1024)]
    # 0xcafe << 1 = 0x95fc, + 1 = 0x95fd; << 3 = 0xafe8, + 1 = 0xafe9
    assert run(bmv2_json, [bytes([0xCA, 0xFE])]) == [bytes([0xAF, 0xE9])]


TABLE_SHARED = """
control Sub(inout bit<8> x) {
    action set(bit<8> v) { x = v; }
    action bump() { x = x + 1; }
    table t { key = { x: exact; } actions = { set; bump; } default_action = bump(); }
    apply { t.apply(); }
}
control Once(inout bit<8> y)(Sub c) { apply { y = y + 10; c.apply(y); } }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() s;
    Once(s) o;
    apply { o.apply(h.d.a); sm.egress_spec = 1; }
}
"""


def test_instance_argument_table_named_for_the_instance(tmp_path: Path) -> None:
    bmv2_json, res = compile_src(tmp_path, program(TABLE_SHARED))
    assert [t.name for t in res.tables] == ["I.s.t"]
    assert {"I.s.set", "I.s.bump"} <= {a.name for a in res.actions}
    # no entries: a = 1 + 10, then the default bump()
    assert run(bmv2_json, [bytes([1, 5, 0, 0])]) == [bytes([12, 5, 0, 0])]


def test_shared_table_applied_twice_refused(tmp_path: Path) -> None:
    """The instance is the same, so its table has two application sites: refused, as
    p4c-bm2-ss refuses a table applied more than once."""
    src = program(TABLE_SHARED.replace("o.apply(h.d.a);", "o.apply(h.d.a); s.apply(h.d.b);"))
    with pytest.raises(CompileError, match="applied once"):
        compile_src(tmp_path, src)


def test_instance_argument_passed_on(tmp_path: Path) -> None:
    """``Outer(inc)`` passes its parameter on to ``Twice(c)``: still the one ``inc``."""
    src = SHARED_REGISTER.replace("control I(", """
control Outer(inout bit<8> z)(Inc c) { Twice(c) tw2; apply { tw2.apply(z); c.apply(z); } }
control I(""").replace("Twice(inc) tw;", "Outer(inc) tw;")
    bmv2_json, res = compile_src(tmp_path, program(src))
    assert [r.name for r in res.registers] == ["I.inc.r"]
    # packet 1: a = 1; Outer: Twice applies inc twice (r = 2, 3), then inc once more: b = 4
    outs = run(bmv2_json, [bytes([9, 9, 7, 7]), bytes([9, 9, 7, 7])])
    assert outs == [bytes([1, 4, 7, 7]), bytes([5, 8, 7, 7])]


SUB_PARSER = """
parser Sub(packet_in pkt, out data_t d) { state start { pkt.extract(d); transition accept; } }
parser Wrap(packet_in pkt, out data_t d)(Sub s) {
    state start { s.apply(pkt, d); transition accept; }
}
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    Wrap(sub) w;
    state start { w.apply(pkt, h.d); transition accept; }
}
"""


def test_parser_instance_argument(tmp_path: Path) -> None:
    body = """control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
        apply { h.d.c = h.d.a + h.d.b; sm.egress_spec = 1; } }"""
    bmv2_json, _ = compile_src(tmp_path, program(body, parser=SUB_PARSER))
    assert run(bmv2_json, [bytes([2, 3, 0, 9])]) == [bytes([2, 3, 5, 9])]


@pytest.mark.parametrize("arg", ["h", "inc2", "tw", "sm"])
def test_instance_argument_must_name_an_earlier_instance(tmp_path: Path, arg: str) -> None:
    src = program(SHARED_REGISTER.replace("Twice(inc) tw;", f"Twice({arg}) tw;"))
    with pytest.raises(CompileError, match=f"{arg}: expected a parser or control instance "
                       "declared before Twice's instantiation") as e:
        compile_src(tmp_path, src)
    assert ":26:11:" in str(e.value)


# ---------------------------------------------------------------------- digest of a list


def digest_program(call: str) -> str:
    return program("""
struct S { bit<8> x; bit<8> y; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { CALL sm.egress_spec = 1; }
}
""".replace("CALL", call))


def digests_of(bmv2_json: dict, data: bytes) -> list[tuple[str, list[int]]]:
    """(learn list name, its values in order) of each digest one packet sends."""
    sw = Switch()
    sw.load_json(bmv2_json)
    got: list[tuple[str, list[int]]] = []
    sw.set_digest_handler(lambda d: got.append((d.name, list(d.fields.values()))))
    out = sw.process_packet(0, data)
    assert len(out) == 1
    return got


@pytest.mark.parametrize("call", [
    "digest(1, {h.d.a, h.d.b});",  # T inferred: tuple<bit<8>, bit<8>>
    "digest<tuple<bit<8>, bit<8>>>(1, {h.d.a, h.d.b});",
])
def test_digest_of_a_list_is_named_digest_n(tmp_path: Path, call: str) -> None:
    """p4c's v1model P4RuntimeArchHandler names a digest whose type is not a named type
    ``digest_<n>``; BMv2's learn list is named for the struct EliminateTuples made of the
    tuple (``tuple_0``), and its fields are the list's elements in order."""
    bmv2_json, res = compile_src(tmp_path, digest_program(call))
    assert [(d.name, [(f.name, f.bitwidth) for f in d.fields]) for d in res.digests] == [
        ("digest_0", [("f0", 8), ("f1", 8)])]
    assert [ll["name"] for ll in bmv2_json["learn_lists"]] == ["tuple_0"]
    assert digests_of(bmv2_json, bytes([0x11, 0x22, 3, 4])) == [
        ("tuple_0", [0x11, 0x22])]


def test_two_list_digests_count_up(tmp_path: Path) -> None:
    bmv2_json, res = compile_src(tmp_path, digest_program(
        "digest(1, {h.d.a, h.d.b}); digest(2, {h.d.c});"))
    assert [d.name for d in res.digests] == ["digest_0", "digest_1"]
    assert [[f.bitwidth for f in d.fields] for d in res.digests] == [[8, 8], [8]]


# ---------------------------------------------------------------------- default values


def default_program(default: str) -> str:
    return program("""
const bit<8> K = 4;
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action a(in bit<8> x, in bit<8> y = DEFAULT) { h.d.b = x + y; }
    apply { a(h.d.c); sm.egress_spec = 1; }
}
""".replace("DEFAULT", default))


@pytest.mark.parametrize("default", ["h.d.a", "h.d.a + 1", "x", "sm.ingress_port[7:0]"])
def test_default_value_must_be_constant(tmp_path: Path, default: str) -> None:
    """p4c's TypeInference: "<expr>: expression must be a compile-time constant", at the
    default value."""
    with pytest.raises(CompileError, match=r":15:41: error: "
                       + default.replace("[", r"\[").replace("+", r"\+")
                       + ": expression must be a compile-time constant"):
        compile_src(tmp_path, default_program(default))


def test_function_default_value_must_be_constant(tmp_path: Path) -> None:
    src = program("""
bit<8> f(in bit<8> v, in bit<8> w = v) { return v + w; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { h.d.b = f(h.d.a); sm.egress_spec = 1; }
}
""")
    with pytest.raises(CompileError, match="v: expression must be a compile-time constant"):
        compile_src(tmp_path, src)


def test_direct_type_invocation_of_a_parser_and_a_control(tmp_path: Path) -> None:
    """``Sub.apply(...)`` on a parser type and ``S.apply(...)`` on a control type
    (InstantiateDirectCalls): each an instance named for its type (``I.S.t``)."""
    parser = """
parser Sub(packet_in pkt, out data_t d) { state start { pkt.extract(d); transition accept; } }
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start { Sub.apply(pkt, h.d); transition accept; }
}
"""
    body = """
control S(inout bit<8> x) {
    action set(bit<8> v) { x = v; }
    table t { key = { x: exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply { t.apply(); x = x + 1; }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { S.apply(h.d.a); sm.egress_spec = 1; }
}
"""
    bmv2_json, res = compile_src(tmp_path, program(body, parser=parser))
    assert [t.name for t in res.tables] == ["I.S.t"]
    # the sub-parser extracts all four bytes; t misses (NoAction), then a + 1
    assert run(bmv2_json, [bytes([1, 2, 3, 4])]) == [bytes([2, 2, 3, 4])]


@pytest.mark.parametrize(("tuple_type", "learn_list"), [
    ("tuple<bit<8>, bit<8>>", "tuple_0"),  # the same type: one struct for both
    ("tuple<bit<8>>", "tuple_1"),  # another type: a struct of its own, declared after
])
def test_digest_of_a_list_next_to_a_tuple_variable(tmp_path: Path, tuple_type: str,
                                                   learn_list: str) -> None:
    elems = "{h.d.c, h.d.d}" if "," in tuple_type else "{h.d.c}"
    bmv2_json, res = compile_src(tmp_path, digest_program(
        f"{tuple_type} t = {elems}; h.d.c = t[0]; digest(1, {{h.d.a, h.d.b}});"))
    assert [d.name for d in res.digests] == ["digest_0"]
    assert [ll["name"] for ll in bmv2_json["learn_lists"]] == [learn_list]
    assert digests_of(bmv2_json, bytes([7, 8, 9, 10])) == [(learn_list, [7, 8])]
