"""A header or struct assigned from a list or struct expression that reads it: the right-hand
side is evaluated completely before the assignment (P4_16 spec 11.1), so ``h = {h.b, h.a}``
swaps the fields. p4c-bm2-ss gets this right by copying through a temporary (RemoveAliases);
softnic assigned field by field and the second field read the first one's new value.

The packet is the 2-byte header (a, b) of p4progs; the tests read the output's second byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.tests.compiler.p4progs import compile_text, program, run_b


@pytest.mark.parametrize("body", [
    "hdr.h = {hdr.h.b, hdr.h.a};",
    "hdr.h = {a = hdr.h.b, b = hdr.h.a};",
    "hs_t s = hdr; s.h = {s.h.b, s.h.a}; hdr = s;",
    "if (hdr.h.a == 1) hdr.h = {hdr.h.b, hdr.h.a};",
    "tuple<bit<8>, bit<8>> t = {hdr.h.a, hdr.h.b}; t = {t[1], t[0]}; hdr.h.b = t[1];",
])
def test_swap_through_a_list_expression(tmp_path: Path, body: str) -> None:
    j, _ = compile_text(tmp_path, program("apply { sm.egress_spec = 1; " + body + " }"))
    # (a, b) = (1, 2): after the swap b holds the old a
    assert run_b(j, 1, 2) == 1


def test_swap_in_an_action(tmp_path: Path) -> None:
    src = program("action sw() { hdr.h = {hdr.h.b, hdr.h.a}; }\n"
                  "apply { sm.egress_spec = 1; sw(); }")
    j, _ = compile_text(tmp_path, src)
    assert run_b(j, 1, 2) == 1
