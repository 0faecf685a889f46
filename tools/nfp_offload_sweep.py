"""Which p4cache sizes pass the size limits of the nfp offload profile.

``python tools/nfp_offload_sweep.py [KMAX ...] [--slots N ...]``: compiles p4src/v1model/p4cache.p4
with each -D KMAX (and KEY_BITS = 8 * KMAX) and CACHE_SLOTS, generates the xdp program, compiles
it with clang and prints the size violations (entry size, total entries, instructions, stack)
next to the number of structural ones (which no size removes). REPLY_MAX is not a -D: see
p4src/shared/size.p4.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from softnic.compiler.compile import compile_file
from softnic.compiler.xdp import offload_nfp
from softnic.compiler.xdp.program import generate
from softnic.runtime.xdp import libbpf

ROOT = Path(__file__).resolve().parent.parent
P4 = ROOT / "p4src" / "v1model" / "p4cache.p4"


def run(kmax: int, slots: int, tmp: Path) -> offload_nfp.Report:
    defines: dict[str, str | None] = {"KMAX": str(kmax), "KEY_BITS": str(8 * kmax),
                                      "CACHE_SLOTS": str(slots)}
    j, _ = compile_file(P4, defines=defines)
    prog = generate(j, source=f"p4cache-k{kmax}-s{slots}.json", cpu_port=255)
    c, o = tmp / "p.c", tmp / "p.o"
    prog.write(c)
    libbpf.compile_c(c, o)
    return offload_nfp.check(prog, o)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kmax", type=int, nargs="*", default=[16, 24, 64])
    ap.add_argument("--slots", type=int, nargs="*", default=[4096, 32768, 65536])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for k in args.kmax:
            for s in args.slots:
                r = run(k, s, Path(d))
                sizes = r.size_violations()
                print(f"KMAX {k:3} CACHE_SLOTS {s:6}: {len(r.violations) - len(sizes)} "
                      f"structural; entries {r.total_entries:,}, insns {r.insns:,}, stack >= "
                      f"{r.stack} B; size violations: "
                      + ("; ".join(f"[{v.limit}] {v.construct}: {v.detail}" for v in sizes)
                         or "none"))


if __name__ == "__main__":
    main()
