"""Programs that used to crash the compiler or compile what p4c refuses.

Each case here once produced either an ``internal compiler error`` (a Python exception escaping
the front end), an error pointing into ``core.p4``, or a BMv2 JSON constant wider than its field.
The fixed behaviour: a ``file:line:col: error:`` (or a p4c-like warning) about the user's code.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from softnic.compiler import driver
from softnic.compiler.diagnostics import CompileError, CompileWarning
from softnic.compiler.frontend.parser import MAX_NESTING
from softnic.tests.compiler.p4progs import compile_text, program, run_b

WIDE = "123456789012345678901234567890123456789012345678901234567890"


def line_of(src: str, needle: str) -> int:
    """1-based line of the first line of ``src`` containing ``needle``."""
    return next(i for i, text in enumerate(src.splitlines(), 1) if needle in text)


def hexstrs(node: Any) -> list[str]:
    """Every ``hexstr`` value anywhere in a BMv2 JSON document."""
    found: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "hexstr":
            found.append(node["value"])
        for v in node.values():
            found.extend(hexstrs(v))
    elif isinstance(node, list):
        for v in node:
            found.extend(hexstrs(v))
    return found


def test_over_wide_literal_is_truncated_with_a_warning(tmp_path: Path) -> None:
    src = program(f"apply {{ sm.egress_spec = 1; hdr.h.b = {WIDE}; hdr.h.a = 8w0x1234; }}")
    warnings: list[CompileWarning] = []
    bmv2_json, _ = compile_text(tmp_path, src, warnings=warnings)
    messages = [w.message for w in warnings]
    assert f"{WIDE}: value does not fit in 8 bits" in messages
    assert "8w0x1234: value does not fit in 8 bits" in messages
    values = hexstrs(bmv2_json["actions"])
    assert values, "the assignments should carry constants"
    # No constant in an action may be wider than the fields it is stored into (9-bit port).
    assert all(int(v, 16) < 512 for v in values), values
    assert f"0x{int(WIDE) & 0xFF:02x}" in values
    assert run_b(bmv2_json, 0) == int(WIDE) & 0xFF


def test_over_wide_constant_declaration_warns(tmp_path: Path) -> None:
    src = program("const bit<8> K = 300;\napply { sm.egress_spec = 1; hdr.h.b = K; }")
    warnings: list[CompileWarning] = []
    bmv2_json, _ = compile_text(tmp_path, src, warnings=warnings)
    assert [w.message for w in warnings] == ["300: value does not fit in 8 bits"]
    assert run_b(bmv2_json, 0) == 300 & 0xFF


def test_fitting_literal_does_not_warn(tmp_path: Path) -> None:
    warnings: list[CompileWarning] = []
    compile_text(tmp_path, program("apply { hdr.h.b = 255; }"), warnings=warnings)
    assert warnings == []


def test_non_utf8_source_is_a_positioned_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.p4"
    path.write_bytes(b"#include <core.p4>\nconst bit<8> X = 1; // caf\xe9\n")
    err = io.StringIO()
    assert driver.main([str(path)], stderr=err) == 1
    first = err.getvalue().splitlines()[0]
    assert first == f"{path}:2:27: error: invalid UTF-8 byte 0xe9: unexpected character"
    assert "internal compiler error" not in err.getvalue()


def deep_program(parens: int, ifs: int) -> str:
    expr = "(" * parens + "hdr.h.a" + ")" * parens
    nested = "if (hdr.h.a == 1) {" * ifs + "hdr.h.b = 1;" + "}" * ifs
    return program(f"apply {{ sm.egress_spec = 1;\nhdr.h.b = {expr};\n{nested}\n}}")


@pytest.mark.parametrize(("parens", "ifs", "needle"), [(3000, 0, "(((("), (0, 800, "if (")])
def test_deep_nesting_is_a_positioned_error(
    tmp_path: Path, parens: int, ifs: int, needle: str
) -> None:
    src = deep_program(parens, ifs)
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, src)
    e = exc.value
    assert e.loc is not None and Path(e.loc.file).name == "prog.p4"
    assert e.loc.line == line_of(src, needle) and e.loc.col > 1
    assert e.message.startswith(f"nesting too deep (more than {MAX_NESTING} levels")


def test_deep_but_reasonable_nesting_compiles(tmp_path: Path) -> None:
    bmv2_json, _ = compile_text(tmp_path, deep_program(200, 200))
    assert run_b(bmv2_json, 1) == 1


def test_long_unary_chain_is_a_positioned_error(tmp_path: Path) -> None:
    src = program("apply { hdr.h.b = " + "-" * 3000 + "1; }")
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, src)
    assert exc.value.loc is not None and exc.value.loc.line == line_of(src, "---")
    assert "nesting too deep" in exc.value.message


def test_missing_main_does_not_point_into_core_p4(tmp_path: Path) -> None:
    src = program("apply { }").replace("V1Switch(P(), VC(), I(), E(), CC(), D()) main;", "")
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, src)
    assert exc.value.loc is None
    assert exc.value.message.startswith("No main package instantiation found")
    assert "main;" in exc.value.message  # says what to write


def test_too_wide_concatenation_is_refused(tmp_path: Path) -> None:
    src = program("bit<2000> x = 0;\napply { hdr.h.b = (x ++ x)[7:0]; }")
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, src)
    assert exc.value.message == "x ++ x: bit<4000>: Compiler only supports widths up to 2048"


def test_json_written_for_truncated_constant_is_loadable(tmp_path: Path) -> None:
    """Through the command line: warning on stderr, exit 0, the JSON's constant is one byte."""
    path = tmp_path / "wide.p4"
    path.write_text(program(f"apply {{ hdr.h.b = {WIDE}; }}"))
    out = tmp_path / "wide.json"
    err = io.StringIO()
    assert driver.main([str(path), "-o", str(out)], stderr=err) == 0
    assert "warning: " + WIDE + ": value does not fit in 8 bits" in err.getvalue()
    assert all(int(v, 16) < 256 for v in hexstrs(json.loads(out.read_text())["actions"]))
