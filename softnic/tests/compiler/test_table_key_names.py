"""Control-plane names of table keys are fixed from the source before inlining (TableKeyNames).

p4c's front-end pass TableKeyNames (frontends/p4/tableKeyNames.cpp) puts ``@name("...")`` on
every key element before the inliner runs, and both the P4Info match field and the BMv2 JSON
key ``name`` come from that annotation. So a table of a sub-control keeps the key names written
in the sub-control (``x`` for its parameter ``x``), not the text of the bound argument. p4c's
own outputs show the annotation surviving later rewrites: key-bmv2.p4's inlined ``ingress.c.t``
keeps ``@name("e")``, bvec-hdr-bmv2's key keeps ``@name("h.h.row.e")`` after the mid end
flattened the field to ``h.h._row_e0``. The printing rules: a path is its name; ``isValid()``
on a header is ``<h>.$valid$`` (p4c samples: ``@name("hdr.ipv4.$valid$")``,
``@name("hdr.u.short.$valid$")``); slices ``e[h:l]`` (``@name("meta.Kahului.Colonie[19:0]")``
style outputs); ``a & b``; a constant in the base it was written in without its width
(Util::toString(value, 0, false, base)); anything else is refused with "Complex key expression
requires a @name annotation" (p4c's documented example: ``h.a + h.a``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.p4info.serialize import build_p4info
from softnic.tests.compiler.p4progs import HEAD, TAIL, compile_text, program, run_b

SUB = """
control Sub(inout bit<8> x, in h_t hh) {
    action set(bit<8> v) { x = v; }
    table st {
        key = { x: exact; hh.isValid(): exact; hh.a[7:4]: exact; hh.b & 0x0F: exact; }
        actions = { set; NoAction; }
        const entries = { (2, true, 1, 2): set(0x55); }
        default_action = NoAction();
    }
    apply { st.apply(); }
}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Sub() s;
    apply { sm.egress_spec = 1; s.apply(hdr.h.b, hdr.h); }
}
"""


def p4info_keys(res: Any) -> dict[str, list[str]]:
    info = build_p4info(res)
    return {t.preamble.name: [m.name for m in t.match_fields] for t in info.tables}


def json_keys(j: dict[str, Any]) -> dict[str, list[str]]:
    return {t["name"]: [k["name"] for k in t["key"]]
            for p in j["pipelines"] for t in p["tables"] if t["key"]}


def test_inlined_sub_control_table_keeps_the_sub_controls_key_names(tmp_path: Path) -> None:
    j, res = compile_text(tmp_path, HEAD + SUB + TAIL)
    # written in Sub: x (its parameter, bound to hdr.h.b), hh.isValid(), hh.a[7:4],
    # hh.b & 0x0F (0x0F printed in base 16 without leading zeros: 0xf)
    want = ["x", "hh.$valid$", "hh.a[7:4]", "hh.b & 0xf"]
    assert p4info_keys(res) == {"I.s.st": want}
    assert json_keys(j) == {"I.s.st": want}
    # the table still matches on the bound argument: b = 2, a[7:4] = 1 hits (x := 0x55)
    assert run_b(j, 0x1F, 2) == 0x55
    assert run_b(j, 0x2F, 2) == 2  # a[7:4] = 2: miss
    assert run_b(j, 0x1F, 3) == 3  # x = 3: miss


def test_explicit_name_is_kept_in_a_sub_control(tmp_path: Path) -> None:
    src = HEAD + SUB.replace("key = { x: exact;", 'key = { x: exact @name("port_key");') + TAIL
    j, res = compile_text(tmp_path, src)
    want = ["port_key", "hh.$valid$", "hh.a[7:4]", "hh.b & 0xf"]
    assert p4info_keys(res) == {"I.s.st": want}
    assert json_keys(j) == {"I.s.st": want}
    assert run_b(j, 0x1F, 2) == 0x55


@pytest.mark.parametrize(("key", "name"), [
    ("hdr.h.a & 8w0xFF", "hdr.h.a & 0xff"),
    ("hdr.h.a & 8w0b1010", "hdr.h.a & 0b1010"),
    ("hdr.h.a & 8w255", "hdr.h.a & 255"),
    ("hdr.h.isValid()", "hdr.h.$valid$"),
    # p4c's first ConstantFolding (refMap, no types) replaces a reference to a constant by its
    # value before TableKeyNames runs (DoConstantFolding::postorder(PathExpression))
    ("hdr.h.a & MASK", "hdr.h.a & 0xf"),
    ("hdr.h.a & CMASK", "hdr.h.a & 0x3"),
    ("hdr.h.a & (bit<8>)0x1F0", "hdr.h.a & 0xf0"),  # a cast of a constant folds, same base
])
def test_key_names_printed_as_p4c_prints_them(tmp_path: Path, key: str, name: str) -> None:
    body = f"""
    const bit<8> MASK = 0x0F;
    const bit<8> CMASK = (bit<8>)0x103;
    action set(bit<8> v) {{ hdr.h.b = v; }}
    table t {{ key = {{ {key}: ternary; }} actions = {{ set; NoAction; }} }}
    apply {{ sm.egress_spec = 1; t.apply(); }}"""
    j, res = compile_text(tmp_path, program(body))
    assert p4info_keys(res) == {"I.t": [name]}
    assert json_keys(j) == {"I.t": [name]}
    assert run_b(j, 7, 9) == 9  # empty table: miss, packet unchanged


def test_complex_key_needs_a_name(tmp_path: Path) -> None:
    body = """
    table t { key = { hdr.h.a + hdr.h.b: exact; } actions = { NoAction; } }
    apply { sm.egress_spec = 1; t.apply(); }"""
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, program(body))
    assert ei.value.loc is not None
    assert "hdr.h.a + hdr.h.b: Complex key expression requires a @name annotation" in str(ei.value)
    # with a name it compiles, under that name
    j, res = compile_text(tmp_path, program(body.replace("exact;", 'exact @name("sum");')))
    assert p4info_keys(res) == {"I.t": ["sum"]}
    assert json_keys(j) == {"I.t": ["sum"]}
    assert run_b(j, 1, 2) == 2


def test_conditional_key_is_refused_as_p4c_refuses_it(tmp_path: Path) -> None:
    # p4c prints a Mux as its operator: "?:: Complex key expression requires a @name annotation"
    body = """
    table t { key = { hdr.h.isValid() ? hdr.h.a : 8w0: exact; } actions = { NoAction; } }
    apply { t.apply(); }"""
    with pytest.raises(CompileError, match=r"\?:: Complex key expression requires a @name"):
        compile_text(tmp_path, program(body))


def test_struct_field_name_annotation_is_the_key_component(tmp_path: Path) -> None:
    # keyComponentNameForMember: a struct field's externalName(), i.e. its @name
    src = HEAD.replace("struct m_t { bit<8> x; }", 'struct m_t { @name("alias") bit<8> x; }')
    src += """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.b = v; }
    table t { key = { meta.x: exact; } actions = { set; NoAction; } }
    apply { sm.egress_spec = 1; t.apply(); }
}
""" + TAIL
    j, res = compile_text(tmp_path, src)
    assert p4info_keys(res) == {"I.t": ["meta.alias"]}
    assert json_keys(j) == {"I.t": ["meta.alias"]}
