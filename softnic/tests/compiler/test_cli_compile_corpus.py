"""Whole programs through the ``softnic compile`` command, the way build scripts run p4c-bm2-ss.

Every corpus program is compiled by the installed entry point; its P4Info is loaded into
p4runtime-shell (a real consumer) and cross-checked against the BMv2 JSON, because a target maps
P4Runtime ids to JSON objects by name. A broken program must fail with p4c-style diagnostics,
exit code 1 and no output files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2
from p4runtime_sh.context import Context

SOFTNIC = shutil.which("softnic", path=str(Path(sys.executable).parent)) or "softnic"
CORPUS = Path(__file__).resolve().parent.parent / "corpus"
# Whole programs only: files without a V1Switch instantiation are shared includes.
PROGRAMS = sorted(p for p in CORPUS.glob("*.p4") if "V1Switch(" in p.read_text())
BASIC = CORPUS / "basic_l3.p4"  # p4lang/tutorials basic.p4 shape: a small, stable program
LARGEST = max(PROGRAMS, key=lambda p: p.stat().st_size)


def softnic_compile(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SOFTNIC, "compile", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def json_names(bmv2: dict, section: str) -> set[str]:
    if section == "tables":
        return {t["name"] for p in bmv2.get("pipelines", []) for t in p.get("tables", [])}
    return {obj["name"] for obj in bmv2.get(section, [])}


def test_corpus_is_present() -> None:
    assert BASIC in PROGRAMS and len(PROGRAMS) > 1, f"programs missing in {CORPUS}"


def test_basic_program_ids_equal_p4c(tmp_path: Path) -> None:
    """basic_l3.p4 uses the tutorials' names, whose ids p4c-bm2-ss is known to print."""
    path = tmp_path / "basic.p4info.txt"
    res = softnic_compile(BASIC, "--p4runtime-files", path)
    assert res.returncode == 0, res.stderr
    ctx = Context()
    ctx.set_p4info(text_format.Parse(path.read_text(), p4info_pb2.P4Info()))
    assert ctx.get_table_id("MyIngress.ipv4_lpm") == 37375156
    assert ctx.get_action_id("MyIngress.ipv4_forward") == 28792405
    assert ctx.get_action_id("MyIngress.drop") == 25652968
    assert ctx.get_action_id("NoAction") == 21257015


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_corpus_program_compiles_and_p4info_loads(program: Path, tmp_path: Path) -> None:
    out = tmp_path / f"{program.stem}.json"
    p4info_path = tmp_path / f"{program.stem}.p4info.txt"
    res = softnic_compile(program, "-o", out, "--p4runtime-files", p4info_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    bmv2 = json.loads(out.read_text())
    assert "pipelines" in bmv2 and "header_types" in bmv2

    info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    assert info.pkg_info.arch == "v1model"
    ctx = Context()
    ctx.set_p4info(info)
    for table in info.tables:
        assert ctx.get_table_id(table.preamble.name) == table.preamble.id
        assert table.preamble.id >> 24 == p4info_pb2.P4Ids.TABLE
        for ref in table.action_refs:
            assert ctx.get_name_from_id(ref.id)  # every reference resolves
    for action in info.actions:
        assert ctx.get_action_id(action.preamble.name) == action.preamble.id
        assert [p.id for p in action.params] == list(range(1, len(action.params) + 1))

    # Names shared by P4Info and BMv2 JSON are how a target maps ids to objects.
    assert {t.preamble.name for t in info.tables} <= json_names(bmv2, "tables")
    # An action only called directly may be missing: p4c's P4Info lists it (its front end keeps
    # it), softnic's JSON inlines the call; BMv2 accepts that pair. A table's actions must be there.
    table_actions = {ref.id for t in info.tables for ref in t.action_refs}
    assert {a.preamble.name for a in info.actions
            if a.preamble.id in table_actions} <= json_names(bmv2, "actions")
    assert {r.preamble.name for r in info.registers} <= json_names(bmv2, "register_arrays")
    counters = [*info.counters, *info.direct_counters]
    assert {c.preamble.name for c in counters} <= json_names(bmv2, "counter_arrays")
    meters = [*info.meters, *info.direct_meters]
    assert {m.preamble.name for m in meters} <= json_names(bmv2, "meter_arrays")
    assert {d.preamble.name for d in info.digests} <= json_names(bmv2, "learn_lists")
    for digest in info.digests:
        assert digest.type_spec.struct.name in info.type_info.structs


def test_recompile_gives_identical_p4info(tmp_path: Path) -> None:
    program = LARGEST
    texts = []
    for i in range(2):
        path = tmp_path / f"run{i}.txt"
        assert softnic_compile(program, "--p4runtime-files", path).returncode == 0
        texts.append(path.read_text())
    assert texts[0] == texts[1]


def test_all_p4info_formats_in_one_run(tmp_path: Path) -> None:
    program = BASIC
    names = ["p.txt", "p.json", "p.bin"]
    files = ",".join(str(tmp_path / n) for n in names)
    res = softnic_compile(program, "--p4runtime-files", files)
    assert res.returncode == 0, res.stderr
    # Without -o p4c-bm2-ss writes no BMv2 JSON; only the P4Info files appear.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    from_text = text_format.Parse((tmp_path / "p.txt").read_text(), p4info_pb2.P4Info())
    assert json_format.Parse((tmp_path / "p.json").read_text(), p4info_pb2.P4Info()) == from_text
    from_bin = p4info_pb2.P4Info()
    from_bin.ParseFromString((tmp_path / "p.bin").read_bytes())
    assert from_bin == from_text


def test_legacy_p4runtime_file_and_format(tmp_path: Path) -> None:
    program = BASIC
    path = tmp_path / "prog.p4info"
    res = softnic_compile(
        program, "--p4runtime-file", path, "--p4runtime-format", "text", "-o", tmp_path / "p.json"
    )
    assert res.returncode == 0, res.stderr
    info = text_format.Parse(path.read_text(), p4info_pb2.P4Info())
    assert [t.preamble.name for t in info.tables] == ["MyIngress.ipv4_lpm"]


BROKEN = """#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; }
struct headers { h_t h; }
struct meta_t { }

control MyIngress(inout headers hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    apply {
        hdr.h.f = undeclared_thing;
    }
}
"""


def test_broken_program_reports_location_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "broken.p4"
    src.write_text(BROKEN)
    out = tmp_path / "broken.json"
    p4info_path = tmp_path / "broken.p4info.txt"
    res = softnic_compile(src, "-o", out, "--p4runtime-files", p4info_path)
    assert res.returncode == 1
    lines = res.stderr.splitlines()
    assert lines[0].startswith(f"{src}:11:"), res.stderr
    assert ": error: " in lines[0] and "undeclared_thing" in lines[0]
    assert lines[1] == "        hdr.h.f = undeclared_thing;"
    assert lines[2].strip() == "^"
    assert lines[1][len(lines[2]) - 1] == "u"  # the caret points at the bad name
    assert not out.exists() and not p4info_path.exists()


def test_syntax_error_keeps_existing_outputs_untouched(tmp_path: Path) -> None:
    src = tmp_path / "bad.p4"
    src.write_text("control C( {\n")
    out = tmp_path / "out.json"
    out.write_text("previous build\n")
    res = softnic_compile(src, "-o", out)
    assert res.returncode == 1
    assert res.stderr.startswith(f"{src}:1:")
    assert out.read_text() == "previous build\n"


def test_largest_program_compiles(tmp_path: Path) -> None:
    """The largest corpus program compiles; its compile time is printed for the curious (how fast
    softnic compiles is a benchmark's question, not a test's: a busy machine is only slower)."""
    program = LARGEST
    started = time.perf_counter()
    res = softnic_compile(
        program, "-o", tmp_path / "x.json", "--p4runtime-files", tmp_path / "x.txt"
    )
    elapsed = time.perf_counter() - started
    assert res.returncode == 0, res.stderr
    print(f"\ncompile time of {program.name} ({program.stat().st_size} bytes): {elapsed:.2f} s")
