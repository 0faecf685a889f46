"""What p4c-bm2-ss 1.2.4.1 was seen to do with file names and table sizes (FIDELITY.md, "The
cache program on the real tools"), and softnic doing the same.

- ``--p4runtime-files X.txtpb``: ``[--Werror=unknown] error: X.txtpb: Could not detect
  p4runtime info file format from file suffix .txtpb``, exit status 1, nothing written; the
  front end's warnings come first (the names are read after the front end), the mid end's never.
- A ``size`` on a table with ``const entries`` (or on a keyless table, unless 1): p4c's
  CheckTableSize warns ``[--Wwarn=mismatch]`` with both source positions and drops the size, so
  the BMv2 JSON has the default ``max_size`` 1024 while the P4Info keeps the declared size.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from softnic.compiler import driver
from softnic.compiler.diagnostics import CompileWarning
from softnic.tests.compiler.p4progs import HEAD, TAIL, compile_text

# Line numbers below count from 1 in HEAD + INGRESS.
INGRESS = """control Classify(inout hs_t hdr) {
    action set_b(bit<8> v) { hdr.h.b = v; }
    table kinds {
        key = { hdr.h.a: exact; }
        actions = { set_b; NoAction; }
        const entries = {
            1: set_b(10);
            2: set_b(20);
        }
        size = 0x18;
    }
    apply { kinds.apply(); }
}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Classify() classify;
    table keyless {
        actions = { NoAction; }
        size = 16;
    }
    apply { classify.apply(hdr); keyless.apply(); sm.egress_spec = 1; }
}
"""
PROGRAM = HEAD + INGRESS + TAIL
KINDS_LINE, KINDS_SIZE_LINE, KEYLESS_LINE, KEYLESS_SIZE_LINE = 12, 19, 25, 27


def tables(bmv2: dict) -> dict[str, dict]:
    return {t["name"]: t for p in bmv2["pipelines"] for t in p["tables"]}


def test_check_table_size_warns_and_drops_the_size(tmp_path: Path) -> None:
    warnings: list[CompileWarning] = []
    bmv2, res = compile_text(tmp_path, PROGRAM, warnings=warnings)
    src = tmp_path / "prog.p4"
    assert [str(w) for w in warnings] == [
        f"{src}({KINDS_LINE}): [--Wwarn=mismatch] warning: I.classify.kinds: size 0x18 "
        "specified for table with constant entries",
        f"{src}({KEYLESS_LINE}): [--Wwarn=mismatch] warning: I.keyless: size 16 specified for "
        "table without keys",
    ]
    t = tables(bmv2)
    assert t["I.classify.kinds"]["max_size"] == 1024  # the back end's default, as p4c's JSON
    assert t["I.keyless"]["max_size"] == 1024
    sizes = {x.name: x.size for x in res.tables}
    assert sizes["I.classify.kinds"] == 24 and sizes["I.keyless"] == 16  # the P4Info keeps them


def test_sizes_p4c_accepts_are_kept_without_a_warning(tmp_path: Path) -> None:
    body = PROGRAM.replace("        size = 0x18;\n", "").replace("size = 16;", "size = 1;")
    body = body.replace("key = { hdr.h.a: exact; }", "key = { hdr.h.a: exact; }\n size = 64;")
    body = body.replace("const entries", "entries")  # entries the control plane may change
    warnings: list[CompileWarning] = []
    bmv2, _ = compile_text(tmp_path, body, warnings=warnings)
    assert warnings == []
    t = tables(bmv2)
    assert t["I.classify.kinds"]["max_size"] == 64 and t["I.keyless"]["max_size"] == 1


def test_the_warning_is_printed_as_p4c_prints_it(tmp_path: Path) -> None:
    src = tmp_path / "prog.p4"
    src.write_text(PROGRAM)
    err = io.StringIO()
    assert driver.main([str(src), "-o", str(tmp_path / "p.json")], stderr=err) == 0
    lines = err.getvalue().splitlines()
    assert lines[:6] == [
        f"{src}({KINDS_LINE}): [--Wwarn=mismatch] warning: I.classify.kinds: size 0x18 "
        "specified for table with constant entries",
        "    table kinds {",
        "          ^^^^^",
        f"{src}({KINDS_SIZE_LINE})",
        "        size = 0x18;",
        "               ^^^^",
    ]
    assert lines[6:] == [
        f"{src}({KEYLESS_LINE}): [--Wwarn=mismatch] warning: I.keyless: size 16 specified for "
        "table without keys",
        "    table keyless {",
        "          ^^^^^^^",
        f"{src}({KEYLESS_SIZE_LINE})",
        "        size = 16;",
        "               ^^",
    ]


@pytest.mark.parametrize("name", ["p.p4info.txtpb", "p.P4INFO.TXT", "p4info"])
def test_a_p4info_name_p4c_1_2_4_refuses_stops_the_compile(tmp_path: Path, name: str) -> None:
    src = tmp_path / "prog.p4"
    src.write_text(PROGRAM)
    out_json, info = tmp_path / "p.json", tmp_path / name
    good = tmp_path / "good.p4info.txt"
    err = io.StringIO()
    code = driver.main([str(src), "-o", str(out_json), "--p4runtime-files", f"{good},{info}"],
                       stderr=err)
    assert code == 1
    suffix = name[name.rfind("."):] if "." in name else None
    expected = (f"{info}: Could not detect p4runtime info file format from file suffix {suffix}"
                if suffix else f"{info}: unknown file kind; known suffixes are .bin, .txt, .json")
    # the mid end's CheckTableSize warnings never appear: the compile ends before it
    assert err.getvalue() == f"[--Werror=unknown] error: {expected}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.p4"]  # nothing written


def test_front_end_warnings_come_before_the_file_name_error(tmp_path: Path) -> None:
    src = tmp_path / "prog.p4"
    src.write_text(PROGRAM.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; mark_to_drop();"))
    err = io.StringIO()
    code = driver.main([str(src), "--p4runtime-files", str(tmp_path / "p.txtpb")], stderr=err)
    assert code == 1
    out = err.getvalue()
    assert "[--Wwarn=deprecated] warning: mark_to_drop: Using deprecated feature" in out
    assert "[--Wwarn=mismatch]" not in out
    assert out.index("[--Wwarn=deprecated]") < out.index("[--Werror=unknown] error:")


def test_an_empty_p4runtime_file_list_writes_no_p4info(tmp_path: Path) -> None:
    src = tmp_path / "prog.p4"
    src.write_text(PROGRAM)
    out_json = tmp_path / "p.json"
    err = io.StringIO()
    assert driver.main([str(src), "-o", str(out_json), "--p4runtime-files", ""], stderr=err) == 0
    assert json.loads(out_json.read_text())["pipelines"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json", "prog.p4"]
