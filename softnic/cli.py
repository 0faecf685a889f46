"""``softnic`` command line: ``softnic compile`` (p4c-bm2-ss) and ``softnic run`` (simple_switch_grpc)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print("softnic: not wired yet", file=sys.stderr)
    return 2
