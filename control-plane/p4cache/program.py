"""Build the cache's P4 program: BMv2 JSON + P4Info, with softnic or with real p4c-bm2-ss.

``build()`` compiles ``p4src/v1model/p4cache.p4`` into a build directory (once per set of
``-D`` definitions and target) and returns the paths. The sources and the build directory come
from p4cache.paths (installed package data or the source checkout; ``$P4CACHE_DATA_DIR`` and
``$P4CACHE_BUILD_DIR`` override them), so it works from any working directory.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from p4cache import paths

P4SRC = paths.p4src()
MAIN_P4 = paths.main_p4()
# Where compiled programs are kept (one directory per compiler, sources and -D set): the
# checkout's build/, or the directory P4CACHE_BUILD_DIR names (p4cache.paths.build_dir).
BUILD = paths.build_dir()


# P4Info is written as text under a name ending ``.txt``: p4c-bm2-ss picks the format from the
# suffix, and 1.2.4 knows only .txt, .json and .bin (it refuses .txtpb; softnic does the same).
P4INFO_SUFFIX = ".p4info.txt"


def output_paths(out: Path, stem: str) -> tuple[Path, Path]:
    """The BMv2 JSON and P4Info files a compile of ``stem``.p4 writes into ``out``."""
    return out / f"{stem}.json", out / f"{stem}{P4INFO_SUFFIX}"


@dataclass(frozen=True)
class Program:
    json_path: Path
    p4info_path: Path
    compiler: str  # "softnic" or "p4c-bm2-ss"


def _sources_digest(defines: dict[str, str | int]) -> str:
    h = hashlib.sha256()
    for p in sorted(P4SRC.rglob("*.p4")):
        h.update(str(p.relative_to(P4SRC)).encode())
        h.update(p.read_bytes())
    h.update(repr(sorted(defines.items())).encode())
    return h.hexdigest()[:12]


def p4c_available() -> bool:
    return shutil.which("p4c-bm2-ss") is not None


def build(defines: dict[str, str | int] | None = None, compiler: str = "softnic",
          out_dir: Path | None = None) -> Program:
    """Compile the program (skipped when an identical build exists) and return its files.

    ``compiler`` is ``softnic`` (``python -m softnic.cli compile``) or ``p4c-bm2-ss`` (must be on
    PATH). Raises RuntimeError with the compiler's message when compilation fails.
    """
    defines = dict(defines or {})
    tag = f"{compiler}-{_sources_digest(defines)}"
    out = (out_dir or BUILD) / tag
    prog = Program(*output_paths(out, MAIN_P4.stem), compiler)
    if prog.json_path.exists() and prog.p4info_path.exists():
        return prog
    out.mkdir(parents=True, exist_ok=True)
    dflags = [f"-D{k}={v}" for k, v in sorted(defines.items())]
    if compiler == "softnic":
        cmd = [sys.executable, "-m", "softnic.cli", "compile"]
    elif compiler == "p4c-bm2-ss":
        if not p4c_available():
            raise RuntimeError("p4c-bm2-ss is not on PATH")
        cmd = ["p4c-bm2-ss", "--arch", "v1model", "--std", "p4-16"]
    else:
        raise ValueError(f"unknown compiler {compiler!r}")
    cmd += [*dflags, "-o", str(prog.json_path), "--p4runtime-files", str(prog.p4info_path),
            str(MAIN_P4)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr}{res.stdout}")
    return prog
