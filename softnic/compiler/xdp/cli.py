"""``softnic xdp PROG.json -o PROG.c [--object PROG.o] [--cpu-port N] [--stats]
[--offload nfp [--json]]``.

The xdp back end on its own: BMv2 JSON (softnic's or p4c-bm2-ss's) to the eBPF C the xdp engine
loads, and with ``--object`` clang's BPF object too; ``--stats`` also loads it into the kernel
and prints the verifier's figures. Tables, registers and the port maps of the object start
empty: ``softnic run --engine xdp`` is what fills them from a P4Runtime controller
(docs/xdp.md, "Loading it by hand", shows what to set with bpftool otherwise).
``--offload nfp`` holds the program to the Netronome eBPF offload profile
(softnic/compiler/xdp/offload_nfp.py, docs/deployment.md) and reports each violation by P4
construct. Exit codes: 0 done (and with --offload, the profile passes), 1 the program cannot be
translated or compiled (the message says why and where), 2 bad arguments, 3 the program
violates the offload profile.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from softnic.runtime.api import PipelineLoadError

if TYPE_CHECKING:
    from softnic.compiler.xdp.program import XdpProgram


def _offload(args: argparse.Namespace, prog: XdpProgram, obj: Path | None) -> int:
    """Prints the offload profile's report; 3 if the program violates it, else 0."""
    from softnic.compiler.xdp import offload_nfp

    report = offload_nfp.check(prog, obj)
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        print(report.format(str(args.program)))
    return 0 if report.ok else 3


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="softnic xdp", description=__doc__.split("\n\n")[1])
    p.add_argument("program", type=Path, help="BMv2 JSON")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.c")
    p.add_argument("--object", type=Path, metavar="OUT.o", help="also compile with clang")
    p.add_argument("--cpu-port", type=int, metavar="N", help="the CPU port (packet-in)")
    p.add_argument("--stats", action="store_true",
                   help="load the object into the kernel and print the verifier's figures")
    p.add_argument("--offload", choices=["nfp"],
                   help="check the program against a SmartNIC offload profile")
    p.add_argument("--json", action="store_true", help="with --offload: the report as JSON")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    from softnic.compiler.xdp.program import generate
    from softnic.runtime.xdp import libbpf

    try:
        j = json.loads(args.program.read_text())
    except (OSError, ValueError) as e:
        print(f"{args.program}: error: cannot read the BMv2 JSON: {e}", file=sys.stderr)
        return 1
    try:
        prog = generate(j, source=str(args.program), cpu_port=args.cpu_port)
    except PipelineLoadError as e:
        print(f"{args.program}: error: {e}", file=sys.stderr)
        return 1
    prog.write(args.output)
    obj_path = args.object
    if obj_path is None and (args.stats or (args.offload and shutil.which("clang"))):
        obj_path = args.output.with_suffix(".o")
    if obj_path is None:
        # without clang the offload check leaves out the instruction budget and the stack
        return _offload(args, prog, None) if args.offload else 0
    try:
        libbpf.compile_c(args.output, obj_path)
        if args.offload and _offload(args, prog, obj_path):
            return 3
        if args.stats:
            with libbpf.BpfObject.load(obj_path) as obj:
                info = obj.prog_info("p4_xdp")
            print(f"{args.program}: {info['xlated_insns']} instructions, "
                  f"{info['jited_bytes']} bytes jited, {info['verified_insns']} instructions "
                  "processed by the verifier")
    except libbpf.BpfError as e:
        print(f"{args.program}: error: {e}", file=sys.stderr)
        return 1
    return 0
