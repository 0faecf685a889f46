"""``p4cache-bench NAME``: run one benchmark (placeholder dispatcher, filled in by the bench work)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from bench import softnic_pps

    return softnic_pps.main(argv if argv is not None else sys.argv[1:])
