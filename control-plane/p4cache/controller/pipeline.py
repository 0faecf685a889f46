"""The program the controller pushes: the config's BMv2 JSON + P4Info, or a P4 source
compiled (once per source and defines) with p4cache.program's softnic build."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from p4cache import program as p4program

from .config import ProgramConfig
from .p4rt import PipelineFiles


def resolve(pc: ProgramConfig) -> PipelineFiles:
    if pc.bmv2_json is not None and pc.p4info is not None:
        return PipelineFiles(pc.bmv2_json, pc.p4info)
    assert pc.p4 is not None
    if pc.p4.resolve() == p4program.MAIN_P4.resolve():
        prog = p4program.build(pc.defines)
        return PipelineFiles(prog.json_path, prog.p4info_path)
    # Another P4 source: softnic compile into <build dir>/controller-<digest>/.
    h = hashlib.sha256(str(pc.p4.resolve()).encode() + pc.p4.read_bytes())
    h.update(repr(sorted(pc.defines.items())).encode())
    out = p4program.BUILD / f"controller-{h.hexdigest()[:12]}"
    files = PipelineFiles(*p4program.output_paths(out, pc.p4.stem))
    if files.bmv2_json.exists() and files.p4info.exists():
        return files
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "softnic.cli", "compile",
           *(f"-D{k}={v}" for k, v in sorted(pc.defines.items())),
           "-o", str(files.bmv2_json), "--p4runtime-files", str(files.p4info), str(pc.p4)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"compiling {pc.p4} failed:\n{res.stderr}{res.stdout}")
    return files
