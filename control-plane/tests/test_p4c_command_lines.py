"""Every way the project runs ``p4c-bm2-ss`` gets through its command-line checks.

Real p4c-bm2-ss 1.2.4 cannot be installed here. On a machine that has it, every BMv2 path of
the project (``make ptf TARGET=bmv2``, ``p4cache up --target bmv2``, ``make run TARGET=bmv2``,
``p4cache-bench pps``) once stopped at the compile: the P4Info
was named ``*.txtpb``, a suffix 1.2.4 refuses. ``softnic compile`` now refuses what
p4c-bm2-ss 1.2.4 refuses on its command line (``.txtpb`` included, with p4c's message), so a
``p4c-bm2-ss`` on PATH that runs ``softnic compile`` checks those command lines. Everything
the project builds with p4c-bm2-ss goes through ``p4cache.program.build`` (PTF's run.sh, the
bring-up, bench pps), which is run here with the stand-in, and
``make ptf TARGET=bmv2``'s script runs two PTF tests with ``softnic run`` standing in for
``simple_switch_grpc`` (its command line, as run.sh writes it for BMv2).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4cache import program
from p4cache.paths import checkout


def test_the_stand_in_refuses_what_p4c_1_2_4_refuses(p4c_on_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.p4info.txtpb"
    res = subprocess.run(["p4c-bm2-ss", "--p4runtime-files", str(out), str(program.MAIN_P4)],
                         capture_output=True, text=True, check=False, timeout=300)
    assert res.returncode == 1
    assert res.stderr == (f"[--Werror=unknown] error: {out}: Could not detect p4runtime info "
                          "file format from file suffix .txtpb\n")
    assert not out.exists()


def test_program_build_with_p4c_bm2_ss(p4c_on_path: Path, tmp_path: Path) -> None:
    prog = program.build(compiler="p4c-bm2-ss", out_dir=tmp_path / "build")
    assert prog.p4info_path.name == "p4cache.p4info.txt"
    info = text_format.Parse(prog.p4info_path.read_text(), p4info_pb2.P4Info())
    assert info.pkg_info.arch == "v1model" and info.tables
    assert prog.json_path.is_file()
    args = p4c_on_path.read_text().splitlines()
    assert args[args.index("--p4runtime-files") + 1] == str(prog.p4info_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="PTF's veth pairs need root")
def test_make_ptf_target_bmv2_path(p4c_on_path: Path, tmp_path: Path) -> None:
    res = subprocess.run(
        ["bash", str(checkout() / "ptf-tests" / "run.sh"), "bmv2", "hits.KeyLengths",
         "forwarding"],
        capture_output=True, text=True, check=False, timeout=600,
        # a build directory of its own: the stand-in's output must never sit in build/ where a
        # later run with the real p4c-bm2-ss would take it for its own
        env={**os.environ, "PY": sys.executable, "PTF_LOG_DIR": str(tmp_path / "ptf"),
             "P4CACHE_BUILD_DIR": str(tmp_path / "build")})
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "ptf: bmv2 on ports" in out and "SKIPPED" not in out
    assert "p4c-bm2-ss-" in out and "OK" in out
    args = p4c_on_path.read_text().splitlines()
    assert args[args.index("--p4runtime-files") + 1].endswith("/p4cache.p4info.txt")

