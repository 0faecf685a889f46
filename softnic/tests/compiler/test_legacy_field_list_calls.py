"""v1model's deprecated field-list calls ``resubmit(data)``, ``recirculate(data)`` and
``clone3(type, session, data)``.

p4c's v1model.p4 still declares them (``@deprecated``), but p4c-bm2-ss 1.2.4's simple_switch
back end has extern converters only for the ``*_preserving_field_list`` forms and ``clone``;
a call of an old form reaches the default ExternConverter, which reports "Unknown extern
function <name>" whatever the argument, ``{}`` included. softnic must refuse the same calls,
at the call, with that wording and the replacement to use — not with a traceback, and not by
compiling them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError, CompileWarning
from softnic.tests.compiler.p4progs import HEAD, compile_text, program, run_b

TAIL_CC = """
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def prog(ingress: str, egress: str = "") -> str:
    return (HEAD
            + "control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
            + "    apply { sm.egress_spec = 1; " + ingress + " }\n}\n"
            + "control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
            + "    apply { " + egress + " }\n}\n" + TAIL_CC)


CASES = [
    # (ingress, egress, name, replacement, line of the call)
    ("resubmit({});", "", "resubmit", "resubmit_preserving_field_list(index)", 11),
    ("resubmit(meta);", "", "resubmit", "resubmit_preserving_field_list(index)", 11),
    ("resubmit({ meta.x });", "", "resubmit", "resubmit_preserving_field_list(index)", 11),
    ("", "recirculate({});", "recirculate", "recirculate_preserving_field_list(index)", 14),
    ("", "recirculate(meta);", "recirculate", "recirculate_preserving_field_list(index)", 14),
    ("clone3(CloneType.I2E, 32w5, {});", "", "clone3",
     "clone_preserving_field_list(type, session, index)", 11),
    ("clone3(CloneType.I2E, 32w5, { meta.x });", "", "clone3",
     "clone_preserving_field_list(type, session, index)", 11),
    ("", "clone3(CloneType.E2E, 32w11, {});", "clone3",
     "clone_preserving_field_list(type, session, index)", 14),
]


@pytest.mark.parametrize("ingress,egress,name,replacement,line", CASES)
def test_legacy_field_list_call_is_refused_like_p4c(
        tmp_path: Path, ingress: str, egress: str, name: str, replacement: str,
        line: int) -> None:
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, prog(ingress, egress))
    msg = str(ei.value)
    # p4c-bm2-ss 1.2.4's wording (backends/bmv2/common/extern.cpp, default converter)
    assert f"Unknown extern function {name}" in msg
    # and what to write instead
    assert replacement in msg
    assert "@field_list(index)" in msg
    # positioned at the call
    assert f"prog.p4:{line}:" in msg


def test_legacy_call_in_an_action_is_refused_at_the_call(tmp_path: Path) -> None:
    src = (HEAD
           + "control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
           + "    action a() {\n"
           + "        resubmit({});\n"
           + "    }\n"
           + "    table t { actions = { a; } default_action = a(); }\n"
           + "    apply { t.apply(); }\n}\n"
           + "control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
           + "    apply { }\n}\n" + TAIL_CC)
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, src)
    msg = str(ei.value)
    assert "prog.p4:12:9:" in msg
    assert "Unknown extern function resubmit" in msg


def test_deprecated_extern_call_warns_like_p4c(tmp_path: Path) -> None:
    """p4c's Deprecated pass: v1model's ``@deprecated`` zero-argument ``mark_to_drop()`` is
    accepted with "<name>: Using deprecated feature <name>. <message>" (once per use) and
    still drops the packet; the current ``mark_to_drop(sm)`` gives no warning."""
    ws: list[CompileWarning] = []
    j, _ = compile_text(tmp_path, program("apply { mark_to_drop(); }"), warnings=ws)
    assert [(w.loc.line, w.loc.col, w.message) for w in ws if w.loc is not None] == [
        (11, 9, "mark_to_drop: Using deprecated feature mark_to_drop. "
                "Please use mark_to_drop(standard_metadata) instead.")]
    assert run_b(j, 7) is None
    ws2: list[CompileWarning] = []
    j2, _ = compile_text(tmp_path, program("apply { mark_to_drop(sm); }"), name="p2",
                         warnings=ws2)
    assert not [w for w in ws2 if "deprecated" in w.message]
    assert run_b(j2, 7) is None
