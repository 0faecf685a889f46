"""The compiler's outputs do not drift: BMv2 JSON, P4Info and warnings, byte for byte.

Every program we ship or test with (``p4src``'s cache, both corpora, the L3 demo) is compiled
through ``softnic compile``'s own command line, as a build script runs it, and the SHA-256 of
each file it writes (and of what it prints) is compared with ``golden_outputs.json``. A
refactoring of the compiler (issue 17 moved every module) must leave these unchanged; a change
that means to alter the output regenerates the file on purpose::

    P4CACHE_REGEN_GOLDEN=1 .venv/bin/python -m pytest softnic/tests/compiler/test_golden_outputs.py

and the diff of ``golden_outputs.json`` then names every program whose output changed (review the
files themselves with ``softnic compile`` before committing it).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from pathlib import Path

import pytest

from softnic import cli

REPO = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).with_name("golden_outputs.json")
REGEN = os.environ.get("P4CACHE_REGEN_GOLDEN") == "1"


def _programs() -> list[tuple[str, list[str]]]:
    """(repo-relative .p4 path, extra compile options) for every program checked."""
    progs: list[tuple[str, list[str]]] = [
        ("p4src/v1model/p4cache.p4", []),
        # a build with other sizes (program.build passes -D like this)
        ("p4src/v1model/p4cache.p4", ["-DKMAX=32", "-DCACHE_SLOTS=256", "-DHOT_THRESHOLD=4"]),
        ("topo/l3-demo/basic.p4", []),
    ]
    for corpus in ("softnic/tests/corpus", "softnic/tests/stf/corpus"):
        found = sorted((REPO / corpus).glob("*.p4"))
        progs += [(p.relative_to(REPO).as_posix(), []) for p in found]
    return progs


def _key(path: str, opts: list[str]) -> str:
    return " ".join([path, *opts])


def _compile(path: str, opts: list[str], out: Path) -> dict[str, str]:
    """Run ``softnic compile`` in this process from the repository root; digests of its outputs."""
    json_out, p4info_out = out / "prog.json", out / "prog.p4info.txt"
    stderr = io.StringIO()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main(["compile", *opts, "-o", str(json_out),
                           "--p4runtime-files", str(p4info_out), path])
    finally:
        os.chdir(cwd)
    digests = {"exit": str(rc), "stderr": hashlib.sha256(stderr.getvalue().encode()).hexdigest()}
    for name, f in (("bmv2_json", json_out), ("p4info", p4info_out)):
        digests[name] = hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else "absent"
    return digests


PROGRAMS = _programs()


def test_every_program_is_covered() -> None:
    """The golden file names exactly the programs above: a new corpus program needs a digest."""
    if REGEN:
        pytest.skip("regenerating")
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(_key(p, o) for p, o in PROGRAMS)


@pytest.mark.parametrize(("path", "opts"), PROGRAMS, ids=[_key(p, o) for p, o in PROGRAMS])
def test_output_unchanged(path: str, opts: list[str], tmp_path: Path) -> None:
    got = _compile(path, opts, tmp_path)
    assert got["exit"] == "0", f"{path} no longer compiles"
    key = _key(path, opts)
    if REGEN:
        golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        golden[key] = got
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    want = json.loads(GOLDEN.read_text())[key]
    changed = [name for name in want if want[name] != got[name]]
    assert not changed, f"{key}: {', '.join(changed)} changed (see this file's docstring)"
