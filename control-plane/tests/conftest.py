"""Shared by the benchmarks' smoke tests (test_bench_*_smoke.py), and the BMv2 stand-ins of the
tests of the project's p4c-bm2-ss / simple_switch_grpc command lines."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def bench_quick(tmp_path: Path) -> Callable[..., tuple[dict, Path]]:
    """``bench_quick(NAME, *args)`` runs ``p4cache-bench NAME --quick *args`` with its results
    (``--out``), plot (``--plot``, unless ``plot=False``) and lab (``--workdir``, unless
    ``workdir=False``) under ``tmp_path``, asserts it exits 0 and returns the results read back
    and the plot's path."""
    from p4cache_bench import cli

    def run(name: str, *args: str, plot: bool = True, workdir: bool = True) -> tuple[dict, Path]:
        out, png = tmp_path / f"{name}.json", tmp_path / f"{name}.png"
        argv = [name, "--quick", *args, "--out", str(out)]
        if plot:
            argv += ["--plot", str(png)]
        if workdir:
            argv += ["--workdir", str(tmp_path / "lab")]
        assert cli.main(argv) == 0
        return json.loads(out.read_text()), png

    return run


SOFTNIC = Path(sys.executable).parent / "softnic"


@pytest.fixture
def p4c_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``p4c-bm2-ss`` that is ``softnic compile`` (strict about its command line as 1.2.4 is)
    and logs its arguments, first on PATH; returns the log."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "p4c-args.log"
    tool = bindir / "p4c-bm2-ss"
    tool.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{log}"\nexec "{SOFTNIC}" compile "$@"\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    # and a simple_switch_grpc that is ``softnic run`` (it takes simple_switch_grpc's command
    # line, the options after ``--`` included), a Python script so that the process keeps the
    # name simple_switch_grpc in its command line, as p4cache's process checks expect
    switch = bindir / "simple_switch_grpc"
    switch.write_text(f"#!{sys.executable}\nimport sys\nfrom softnic.cli import main\n"
                      'sys.exit(main(["run", *sys.argv[1:]]))\n')
    switch.chmod(switch.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log
