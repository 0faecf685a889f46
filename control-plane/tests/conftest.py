"""Shared by the benchmarks' smoke tests (test_bench_*_smoke.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def bench_quick(tmp_path: Path) -> Callable[..., tuple[dict, Path]]:
    """``bench_quick(NAME, *args)`` runs ``p4cache-bench NAME --quick *args`` with its results
    (``--out``), plot (``--plot``, unless ``plot=False``) and lab (``--workdir``, unless
    ``workdir=False``) under ``tmp_path``, asserts it exits 0 and returns the results read back
    and the plot's path."""
    from bench import cli

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
