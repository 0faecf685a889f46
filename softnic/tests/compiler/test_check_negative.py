"""Negative semantic corpus: each program's first line is ``// expect: LINE:COL: error: MSG``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.diagnostics import CompileError

NEG = Path(__file__).resolve().parents[1] / "corpus" / "negative_semantic"
CASES = sorted(NEG.glob("*.p4"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_negative_semantic(path: Path) -> None:
    first = path.read_text().splitlines()[0]
    m = re.match(r"// expect: (\d+):(\d+): error: (.*)$", first)
    assert m, f"{path.name}: missing expect comment"
    with pytest.raises(CompileError) as exc:
        compile_file(str(path))
    e = exc.value
    assert e.loc is not None and Path(e.loc.file).name == path.name
    assert (e.loc.line, e.loc.col) == (int(m.group(1)), int(m.group(2)))
    assert e.message == m.group(3)


def test_corpus_is_not_empty() -> None:
    assert len(CASES) >= 5
