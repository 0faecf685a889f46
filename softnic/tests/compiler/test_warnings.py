"""Compiler warnings reach the caller of compile_file and the ``softnic compile`` user.

p4c-bm2-ss compiles an explicit ``transition reject`` but warns that the target does not
support it (FIDELITY.md); a warning is printed on stderr and the compile still succeeds.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from softnic.compiler import driver
from softnic.compiler.diagnostics import CompileWarning
from softnic.tests.compiler.p4progs import TAIL, compile_text

REJECTING = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            0: reject;
            default: accept;
        }
    }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
""" + TAIL
REJECT_LINE = 10  # the line of "0: reject;"

MESSAGE = "Explicit transition to reject not supported on this target"


def test_compile_file_reports_warnings(tmp_path: Path) -> None:
    warnings: list[CompileWarning] = []
    j, _ = compile_text(tmp_path, REJECTING, warnings=warnings)
    assert j["parsers"]
    assert [(w.loc.line if w.loc else None, w.message) for w in warnings] == [
        (REJECT_LINE, MESSAGE)]
    # p4c's form: file(line), the warning's class, the message
    assert str(warnings[0]) == (
        f"{tmp_path / 'prog.p4'}({REJECT_LINE}): [--Wwarn=unsupported] warning: {MESSAGE}")


def test_no_warnings_for_a_clean_program(tmp_path: Path) -> None:
    warnings: list[CompileWarning] = []
    compile_text(tmp_path, REJECTING.replace("0: reject;", "0: accept;"), warnings=warnings)
    assert warnings == []


def test_cli_prints_warnings_on_stderr_and_succeeds(tmp_path: Path) -> None:
    src = tmp_path / "rej.p4"
    src.write_text(REJECTING)
    out = tmp_path / "rej.json"
    err = io.StringIO()
    code = driver.main([str(src), "-o", str(out)], stderr=err)
    assert code == 0
    assert json.loads(out.read_text())["parsers"]
    lines = err.getvalue().splitlines()
    assert lines == [
        f"{src}({REJECT_LINE}): [--Wwarn=unsupported] warning: {MESSAGE}",
        "            0: reject;",  # the source line, then carets under the state's name
        "               ^^^^^^",
    ]
