"""``return`` inside an action body ends the action: nothing after it may run.

BMv2 actions cannot stop early, so the compiler moves the code after a conditional ``return``
into the branch that does not return (and predicates it, like any ``if`` in an action).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.p4progs import compile_text, program, run_b


def direct_call(action: str) -> str:
    return program(f"""
    {action}
    apply {{ sm.egress_spec = 1; act(); }}""")


def test_unconditional_return_skips_the_rest(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, direct_call("""
    action act() {
        hdr.h.b = 1;
        return;
        hdr.h.b = 2;
    }"""))
    assert run_b(j, 0) == 1


def test_conditional_return(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, direct_call("""
    action act() {
        hdr.h.b = 1;
        if (hdr.h.a == 7) {
            return;
        }
        hdr.h.b = hdr.h.b + 10;
        if (hdr.h.a == 8) {
            hdr.h.b = 50;
            return;
        }
        hdr.h.b = hdr.h.b + 100;
    }"""))
    assert run_b(j, 7) == 1
    assert run_b(j, 8) == 50
    assert run_b(j, 9) == 111


def test_return_in_a_table_action_and_in_an_inlined_action(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, program("""
    action inner(bit<8> v) {
        if (v == 0) { return; }
        hdr.h.b = v;
    }
    action outer(bit<8> v) {
        inner(v);
        hdr.h.b = hdr.h.b + 1;
    }
    table t {
        key = { hdr.h.a: exact; }
        actions = { outer; }
        const entries = { 1: outer(0); 2: outer(5); }
    }
    apply { sm.egress_spec = 1; t.apply(); }"""))
    assert run_b(j, 1, 40) == 41  # inner returned early, outer went on
    assert run_b(j, 2, 40) == 6


def test_extern_call_after_a_conditional_return_is_refused(tmp_path: Path) -> None:
    # after the rewrite the drop runs only on one branch: conditional execution of an extern,
    # which p4c-bm2-ss refuses as well
    src = direct_call("""
    action act() {
        if (hdr.h.a == 7) { return; }
        mark_to_drop(sm);
    }""")
    with pytest.raises(CompileError, match="Conditional execution in actions"):
        compile_text(tmp_path, src)
