"""Priorities of table entries written in the program, run on the engine.

P4_16: without ``priority = N`` the earlier entry wins; with priorities the larger number wins
(``largest_priority_wins`` defaults to true). BMv2 JSON orders entries the other way round (a
lower ``priority`` number wins, behavioral-model docs/JSON_format.md), so the compiler has to
translate, and the engine, which follows BMv2, shows whether it did.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.p4progs import compile_text, program, run_b


def table_prog(entries: str, const: bool = True, extra_props: str = "") -> str:
    return program(f"""
    action setb(bit<8> v) {{ hdr.h.b = v; sm.egress_spec = 1; }}
    table t {{
        key = {{ hdr.h.a: ternary; }}
        actions = {{ setb; NoAction; }}
        default_action = setb(99);
        {extra_props}
        {"const " if const else ""}entries = {{
{entries}
        }}
    }}
    apply {{ t.apply(); }}""")


CATCH_ALL_FIRST = """
            priority = 10: 8w0 &&& 8w0: setb(1);
            priority = 20: 8w5: setb(2);"""


def test_larger_priority_wins_by_default(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, table_prog(CATCH_ALL_FIRST, const=False))
    assert run_b(j, 5) == 2  # both entries match; priority 20 beats 10
    assert run_b(j, 6) == 1
    # BMv2's order: the winning entry has the lower JSON priority
    prios = [e["priority"] for e in j["pipelines"][0]["tables"][0]["entries"]]
    assert prios[1] < prios[0]


def test_smallest_priority_wins_when_asked(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, table_prog(CATCH_ALL_FIRST, False,
                                             "largest_priority_wins = false;"))
    assert run_b(j, 5) == 1


def test_without_priorities_the_first_entry_wins(tmp_path: Path) -> None:
    specific_first = """
            8w5: setb(2);
            8w0 &&& 8w0: setb(1);
            8w5 &&& 8w0xff: setb(3);"""
    j, _ = compile_text(tmp_path, table_prog(specific_first))
    assert run_b(j, 5) == 2 and run_b(j, 7) == 1
    # exactly what p4c-bm2-ss writes: 1, 2, 3 in source order
    assert [e["priority"] for e in j["pipelines"][0]["tables"][0]["entries"]] == [1, 2, 3]
    catch_all_first = """
            8w0 &&& 8w0: setb(1);
            8w5: setb(2);"""
    j, _ = compile_text(tmp_path, table_prog(catch_all_first))
    assert run_b(j, 5) == 1


def test_entry_without_priority_continues_from_the_previous_one(tmp_path: Path) -> None:
    # p4c's rule: priority 30, then 30 - delta = 20 for the next entry, then 10 explicitly
    entries = """
            priority = 30: 8w0 &&& 8w0xf0: setb(1);
            8w5: setb(2);
            priority = 25: 8w5 &&& 8w0x0f: setb(3);"""
    j, _ = compile_text(tmp_path, table_prog(entries, False, "priority_delta = 10;"))
    assert run_b(j, 5) == 1  # 30 > 25 > 20
    entries = """
            priority = 30: 8w0x10 &&& 8w0xf0: setb(1);
            8w5: setb(2);
            priority = 15: 8w5 &&& 8w0x0f: setb(3);"""
    j, _ = compile_text(tmp_path, table_prog(entries, False, "priority_delta = 10;"))
    assert run_b(j, 5) == 2  # the unnumbered entry got 20, which beats 15


def test_first_entry_needs_a_priority_when_others_have_one(tmp_path: Path) -> None:
    entries = """
            8w5: setb(2);
            priority = 10: 8w0 &&& 8w0: setb(1);"""
    with pytest.raises(CompileError, match="must have a priority"):
        compile_text(tmp_path, table_prog(entries, False))


def test_const_entries_cannot_have_priorities(tmp_path: Path) -> None:
    # as p4c (EntryPriorities): the order of const entries is their priority
    with pytest.raises(CompileError, match="Table with 'const' entries cannot have priorities"):
        compile_text(tmp_path, table_prog(CATCH_ALL_FIRST, const=True))
