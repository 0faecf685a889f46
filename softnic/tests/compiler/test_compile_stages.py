"""Where the compile checks and where the P4Info comes from (``compile.py``).

p4c-bm2-ss runs its front end, reports the front end's errors and serializes the P4Info from the
front end's program, and only then runs BMv2's mid end. softnic's front end likewise ends with
InlineActions (actions called from actions); the mid end starts with RemoveActionParameters
(direct calls in ``apply``, tables' bound parameters). A front-end error stops the compile with
that error, before a mid-end pass can report another one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.diagnostics import CompileError
from softnic.compiler.frontend.check import Checker
from softnic.compiler.frontend.parser import parse_program
from softnic.compiler.frontend.passes import front_end_passes
from softnic.compiler.frontend.preprocess import preprocess
from softnic.compiler.ir import ast
from softnic.compiler.midend import mid_end_passes
from softnic.tests.compiler.p4progs import HEAD, TAIL, run_b

# The parser assigns a bit<16> to the bit<8> field (a type error, line 8 of the program); the
# ingress passes a read-only expression for an inout parameter of a directly called action.
TWO_ERRORS = HEAD.replace(
    "state start { pkt.extract(hdr.h); transition accept; }",
    "state start { pkt.extract(hdr.h);\n"
    "        meta.x = 16w300;\n"
    "        transition accept; }",
) + """control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action f(inout bit<8> x) { x = 1; }
    apply { f(hdr.h.a + 1); }
}
""" + TAIL


def write(tmp_path: Path, src: str) -> Path:
    path = tmp_path / "prog.p4"
    path.write_text(src)
    return path


def test_front_end_error_comes_first(tmp_path: Path) -> None:
    # both are errors of p4c's front end (TypeInference), which reports them in source order:
    # the parser's comes first; softnic stops at the first
    path = write(tmp_path, TWO_ERRORS)
    assert TWO_ERRORS.splitlines()[7].strip() == "meta.x = 16w300;"
    with pytest.raises(CompileError) as ei:
        compile_file(path)
    assert ei.value.loc is not None
    assert ei.value.loc.line == 8, str(ei.value)
    assert "Read-only" not in str(ei.value)


def test_the_front_end_inlines_actions_called_from_actions(tmp_path: Path) -> None:
    # p4c's front-end InlineActions: after the front end no action body calls an action; the
    # direct call in apply stays for the mid end's RemoveActionParameters
    src = HEAD + """control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action inner(inout bit<8> v) { v = v + 1; }
    action outer() { inner(hdr.h.b); inner(hdr.h.b); }
    action direct(inout bit<8> v) { v = v + 10; }
    apply { sm.egress_spec = 1; outer(); direct(hdr.h.b); }
}
""" + TAIL
    path = write(tmp_path, src)
    prog = parse_program(preprocess(str(path), [], {}), str(path))
    names = [n for n, _ in front_end_passes()]
    assert names[-1] == "InlineActions"
    assert [n for n, _ in mid_end_passes()][0] == "RemoveActionParameters"
    for _name, run in front_end_passes():
        run(prog)
    ctrl = next(d for d in prog.decls if isinstance(d, ast.ControlDecl) and d.name == "I")
    actions = {x.name: x for x in ctrl.locals if isinstance(x, ast.ActionDecl)}
    calls_in_outer = [s for s in actions["outer"].body.stmts if isinstance(s, ast.CallStmt)]
    assert calls_in_outer == []
    assert any(isinstance(s, ast.CallStmt) for s in ctrl.apply.stmts)
    # and the program still does what the spec says: b + 1 + 1, then + 10
    bmv2_json, _ = compile_file(path)
    assert run_b(bmv2_json, 0, 5) == 17


def test_tuple_programs_are_checked_in_the_front_end(tmp_path: Path) -> None:
    src = HEAD + """control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {hdr.h.a, hdr.h.b};
        hdr.h.b = t[0];
    }
}
""" + TAIL
    path = write(tmp_path, src)
    prog = parse_program(preprocess(str(path), [], {}), str(path))
    for _name, run in front_end_passes():
        run(prog)
    Checker(prog).run()  # tuples checked before EliminateTuples, as by p4c's TypeInference
    # t[0] is a: b = a
    bmv2_json, _ = compile_file(path)
    assert run_b(bmv2_json, 7, 3) == 7
