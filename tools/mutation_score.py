"""Print the mutation score per module from mutmut's result files (``mutants/**/*.py.meta``).

Run from the directory that holds ``mutants/`` after ``mutmut run`` (``make mutate`` does).
Exit status 1 when no results are found, or when a module has no killed mutant at all (the tests
then ran the editable install instead of the mutated copy in ``mutants/``), so a broken run is
never reported as a score.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

# mutmut's exit-code classes (mutmut/stats.py); anything else counts as "suspicious"
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no_tests", 33: "no_tests", 34: "skipped",
          36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout",
          37: "type_check", -9: "segfault", -11: "segfault", None: "not_checked"}
COLS = ("killed", "survived", "timeout", "no_tests", "other")


def main(root: str = "mutants") -> int:
    metas = sorted(Path(root).rglob("*.py.meta"))
    if not metas:
        print(f"no mutmut results under {root}/", file=sys.stderr)
        return 1
    print(f"{'module':40} " + " ".join(f"{c:>8}" for c in COLS) + f" {'total':>6} {'score':>7}")
    grand: Counter[str] = Counter()
    unkilled = []
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"].values()
        c: Counter[str] = Counter()
        for code in codes:
            s = STATUS.get(code, "suspicious")
            c[s if s in COLS else "other"] += 1
        grand.update(c)
        name = str(meta.relative_to(root))[: -len(".meta")]
        print(row(name, c))
        if not c["killed"]:
            unkilled.append(name)
    print(row("TOTAL", grand))
    if unkilled:
        print(f"no mutant killed in {', '.join(unkilled)}: did the tests import mutants/?",
              file=sys.stderr)
        return 1
    return 0


def row(name: str, c: Counter[str]) -> str:
    total = sum(c.values())
    # killed / total: timeouts count as not killed (they are reported separately)
    score = f"{100 * c['killed'] / total:6.1f}%" if total else "    -"
    return f"{name:40} " + " ".join(f"{c[k]:8}" for k in COLS) + f" {total:6} {score:>7}"


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
